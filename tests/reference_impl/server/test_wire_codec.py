"""Codec round trips for every served API and version: client-side encode -> server decode -> handler ->
server encode -> client-side decode (kafka-python's classes on the client side, our codec on the server)."""

from __future__ import annotations

import asyncio
import io
import struct
import uuid

import pytest
from kafka.protocol.api_header import ResponseHeader
from kafka.record import MemoryRecordsBuilder

from reference_impl.server.apis.common import fetch_response
from reference_impl.server.apis.groups import GROUP_API_KEYS
from reference_impl.server.client_apis import ClientApiHandlers
from reference_impl.server.wire import codec, records
from reference_impl.server.wire.codec import ALL_APIS, CLIENT_APIS, INTER_NODE_APIS
from tests.reference_impl.server.test_wire_memory_services import MemoryServices


def batch(values, producer_id=-1, base_sequence=-1):
    """Raw v2 batch bytes built with kafka-python's record builder."""
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    if producer_id >= 0:
        b.set_producer_state(producer_id, 0, base_sequence, False)
    for v in values:
        b.append(timestamp=None, key=b"k", value=v, headers=[])
    b.close()
    return bytes(b.buffer())


def request_for(api_key: int, version: int):
    """A meaningful request of each client API, built with kafka-python's client-side classes."""
    spec = ALL_APIS[api_key]
    cls = spec.request_class
    if api_key == 0:
        t = cls.TopicProduceData
        return cls(transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[
            t(name="t", partition_data=[t.PartitionProduceData(index=0, records=batch([b"a", b"b"]))])])
    if api_key == 1:
        t = cls.FetchTopic
        return cls(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                   session_id=0, session_epoch=-1, topics=[t(topic="t", partitions=[t.FetchPartition(
                       partition=0, current_leader_epoch=0, fetch_offset=0, last_fetched_epoch=-1,
                       log_start_offset=-1, partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id="")
    if api_key == 2:
        t = cls.ListOffsetsTopic
        return cls(replica_id=-1, isolation_level=0, topics=[t(name="t", partitions=[
            t.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)])])
    if api_key == 3:
        return cls(topics=[cls.MetadataRequestTopic(name="t", topic_id=uuid.UUID(int=0))],
                   allow_auto_topic_creation=False)
    if api_key == 10:
        return cls(key="g", key_type=0, coordinator_keys=["g"])
    if api_key == 18:
        return cls(client_software_name="kraftcheck", client_software_version="0")
    if api_key == 19:
        return cls(topics=[cls.CreatableTopic(name="new", num_partitions=2, replication_factor=1, assignments=[],
                                              configs=[])], timeout_ms=1000, validate_only=False)
    if api_key == 22:
        return cls(transactional_id=None, transaction_timeout_ms=1000, producer_id=-1, producer_epoch=-1)
    if api_key == 23:
        t = cls.OffsetForLeaderTopic
        return cls(replica_id=-1, topics=[t(topic="t", partitions=[
            t.OffsetForLeaderPartition(partition=0, current_leader_epoch=0, leader_epoch=0)])])
    if api_key == 32:
        return cls(resources=[cls.DescribeConfigsResource(resource_type=2, resource_name="t",
                                                          configuration_keys=None)],
                   include_synonyms=False, include_documentation=False)
    if api_key in (33, 44):
        r = cls.AlterConfigsResource
        entry = (r.AlterableConfig(name="reassignment.mode", config_operation=0, value="incremental")
                 if api_key == 44 else r.AlterableConfig(name="reassignment.mode", value="incremental"))
        return cls(resources=[r(resource_type=4, resource_name="", configs=[entry])], validate_only=False)
    if api_key == 43:
        return cls(election_type=0, topic_partitions=[cls.TopicPartitions(topic="t", partitions=[0])],
                   timeout_ms=1000)
    if api_key == 45:
        t = cls.ReassignableTopic
        return cls(timeout_ms=1000, allow_replication_factor_change=False, topics=[t(name="t", partitions=[
            t.ReassignablePartition(partition_index=0, replicas=[1, 2])])])
    if api_key == 46:
        return cls(timeout_ms=1000, topics=None)
    if api_key == 60:
        return cls(include_cluster_authorized_operations=False)
    group_request = group_request_for(api_key, cls)
    if group_request is not None:
        return group_request
    raise AssertionError(api_key)


def group_request_for(api_key: int, cls):
    """A meaningful request of each group API (None for other keys)."""
    if api_key == 8:
        t = cls.OffsetCommitRequestTopic
        return cls(group_id="g", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                   retention_time_ms=-1, topics=[t(name="t", partitions=[t.OffsetCommitRequestPartition(
                       partition_index=0, committed_offset=2, committed_leader_epoch=-1, commit_timestamp=-1,
                       committed_metadata="m")])])
    if api_key == 9:
        return cls(group_id="g", topics=[cls.OffsetFetchRequestTopic(name="t", partition_indexes=[0])],
                   groups=[], require_stable=False)
    if api_key == 11:
        return cls(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                   group_instance_id=None, protocol_type="consumer",
                   protocols=[cls.JoinGroupRequestProtocol(name="range", metadata=b"sub")], reason=None)
    if api_key == 12:
        return cls(group_id="g", generation_id=1, member_id="m", group_instance_id=None)
    if api_key == 13:
        return cls(group_id="g", member_id="m", members=[cls.MemberIdentity(member_id="m", group_instance_id=None,
                                                                              reason=None)])
    if api_key == 14:
        return cls(group_id="g", generation_id=1, member_id="m", group_instance_id=None, protocol_type="consumer",
                   protocol_name="range", assignments=[])
    if api_key == 15:
        return cls(groups=["g"], include_authorized_operations=False)
    if api_key == 16:
        return cls(states_filter=[], types_filter=[])
    if api_key == 28:
        t = cls.TxnOffsetCommitRequestTopic
        return cls(transactional_id="tx", group_id="g", producer_id=7, producer_epoch=0, generation_id=-1,
                   member_id="", group_instance_id=None, topics=[t(name="t", partitions=[
                       t.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=2,
                                                         committed_leader_epoch=-1, committed_metadata="m")])])
    return None


# The group APIs need a coordinator: their round trips are in test_group_apis.py.
CASES = [(s.api_key, v) for s in CLIENT_APIS for v in range(s.min_version, s.max_version + 1)
         if s.api_key not in GROUP_API_KEYS]


def roundtrip(handlers: ClientApiHandlers, api_key: int, version: int, correlation_id: int = 42):
    """Encode a request like a client, serve it, decode the answer like a client."""
    request = request_for(api_key, version)
    request.with_header(correlation_id=correlation_id, client_id="rt")
    payload = bytes(request.encode(version=version, header=True))
    decoded = codec.decode_request(payload, handlers.served)
    assert decoded.body is not None and (decoded.api_key, decoded.api_version) == (api_key, version)
    assert decoded.client_id == "rt"
    response = asyncio.run(handlers.handlers()[api_key](decoded))
    if response is None:
        return decoded, None
    frame = codec.encode_response(response, version, correlation_id)
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    response_cls = ALL_APIS[api_key].response_class
    parsed = response_cls.decode(frame, version=version, header=True, framed=True)
    assert parsed.header.correlation_id == correlation_id
    return decoded, parsed


@pytest.fixture
def handlers():
    services = MemoryServices()
    services.create("t")
    services.port = 9092
    both = ClientApiHandlers(broker=services, admin=services)
    # Pre-fill the partition so Fetch/ListOffsets have something to say.
    asyncio.run(services.produce("t", 0, batch([b"x", b"y", b"z"]), 1, 1000))
    return both


@pytest.mark.parametrize(("api_key", "version"), CASES)
def test_every_client_api_version_roundtrips(handlers, api_key, version):
    decoded, parsed = roundtrip(handlers, api_key, version)
    if api_key == 0:
        assert decoded.body.topic_data[0].partition_data[0].index == 0
        p = parsed.responses[0].partition_responses[0]
        assert (p.error_code, p.base_offset) == (0, 3)
    elif api_key == 1:
        p = parsed.responses[0].partitions[0]
        assert (p.error_code, p.high_watermark) == (0, 3)
        assert [r.value for r in records.decode_records(p.records)] == [b"x", b"y", b"z"]
        assert [r.offset for r in records.decode_records(p.records)] == [0, 1, 2]
    elif api_key == 2:
        assert parsed.topics[0].partitions[0].offset == 3
    elif api_key == 3:
        topic = parsed.topics[0]
        assert (topic.name, topic.error_code, topic.partitions[0].leader_id) == ("t", 0, 1)
        assert [(b.node_id, b.host, b.port) for b in parsed.brokers] == [(1, "127.0.0.1", 9092)]
        if version >= 1:
            assert parsed.controller_id == 1
        if version >= 7:
            assert topic.partitions[0].leader_epoch == 0
    elif api_key == 10:
        err = parsed.coordinators[0].error_code if version >= 4 else parsed.error_code
        assert err == 15  # COORDINATOR_NOT_AVAILABLE
    elif api_key == 18:
        served = {(k.api_key, k.min_version, k.max_version) for k in parsed.api_keys}
        assert (0, 3, 9) in served and (1, 4, 12) in served and (18, 0, 3) in served
        assert parsed.error_code == 0
    elif api_key == 19:
        assert parsed.topics[0].error_code == 0 and len(handlers.admin.topics["new"]) == 2
    elif api_key == 22:
        assert parsed.error_code == 0 and parsed.producer_id >= 1000
    elif api_key == 23:
        p = parsed.topics[0].partitions[0]
        assert (p.leader_epoch, p.end_offset) == (0, 3)
    elif api_key == 32:
        assert parsed.results[0].configs[0].name == "min.insync.replicas"
    elif api_key in (33, 44):
        (r,) = parsed.responses
        assert (r.error_code, r.resource_type, r.resource_name) == (0, 4, "")
        assert handlers.admin.configs[(4, "")] == {"reassignment.mode": "incremental"}
    elif api_key == 43:
        assert parsed.replica_election_results[0].partition_result[0].error_code == 84
    elif api_key == 45:
        # v0 has no AllowReplicationFactorChange: it means "allowed" (KIP-860); v1 carries False here.
        expected = 0 if version == 0 else 38
        assert parsed.responses[0].partitions[0].error_code == expected
    elif api_key == 46:
        assert parsed.error_code == 0
    elif api_key == 60:
        assert parsed.controller_id == 1 and parsed.brokers[0].broker_id == 1


@pytest.mark.parametrize("spec", INTER_NODE_APIS, ids=lambda s: str(s.api_key))
def test_inter_node_schemas_roundtrip_all_versions(spec):
    """The JSON schemas kraftcheck ships load into kafka-python classes that encode and decode."""
    for version in range(spec.min_version, spec.max_version + 1):
        req = spec.request_class(version=version)
        for fld in spec.request_class._struct._fields:
            if fld.for_version_q(version) and fld.name.endswith("epoch"):
                setattr(req, fld.name, 7)
        for name, value in {"broker_id": 3, "cluster_id": "c", "incarnation_id": uuid.uuid4(), "listeners": [],
                            "features": [], "log_dirs": [], "topics": [], "current_metadata_offset": 5,
                            "want_fence": True, "want_shut_down": False, "fetch_offset": 9}.items():
            if name in spec.request_class.fields and spec.request_class.fields[name].for_version_q(version):
                setattr(req, name, value)
        req.with_header(correlation_id=5, client_id="n")
        payload = bytes(req.encode(version=version, header=True))
        decoded = codec.decode_request(payload, ALL_APIS)
        assert decoded.body == req
        resp = spec.response_class(version=version)
        frame = codec.encode_response(resp, version, 5)
        back = spec.response_class.decode(frame, version=version, header=True, framed=True)
        assert back.header.correlation_id == 5
        if "error_code" in spec.response_class.fields:  # GetReplicaLogInfo has errors per partition only
            assert back.error_code == 0


def test_alter_partition_v3_carries_broker_epochs():
    cls = ALL_APIS[56].request_class
    t = cls.TopicData
    p = t.PartitionData
    tid = uuid.uuid4()
    req = cls(broker_id=1, broker_epoch=10, topics=[t(topic_id=tid, partitions=[p(
        partition_index=0, leader_epoch=4, new_isr_with_epochs=[p.BrokerState(broker_id=2, broker_epoch=11)],
        leader_recovery_state=0, partition_epoch=9)])])
    back = cls.decode(req.encode(version=3), version=3)
    part = back.topics[0].partitions[0]
    assert back.topics[0].topic_id == tid
    assert [(b.broker_id, b.broker_epoch) for b in part.new_isr_with_epochs] == [(2, 11)]


def test_follower_fetch_v12_carries_replica_epoch_as_tagged_field():
    """kraftcheck's Fetch extension: ReplicaState (tag 1) at v12; kafka-python's own class skips it."""
    from kafka.protocol.consumer import FetchRequest as StockFetchRequest

    ours = ALL_APIS[1].request_class
    req = ours(replica_id=2, replica_state=ours.ReplicaState(replica_id=2, replica_epoch=77), max_wait_ms=500,
               min_bytes=1, topics=[])
    raw = bytes(req.encode(version=12))
    assert ours.decode(raw, version=12).replica_state.replica_epoch == 77
    assert StockFetchRequest.decode(raw, version=12).replica_id == 2


def test_fetch_response_diverging_epoch_reaches_the_client():
    from reference_impl.server import services as sv

    result = sv.FetchResult((sv.FetchPartitionResult("t", 0, high_watermark=5, diverging_epoch=(3, 17),
                                                     current_leader=(2, 4)),))
    frame = codec.encode_response(fetch_response(12, result), 12, 1)
    parsed = ALL_APIS[1].response_class.decode(frame, version=12, header=True, framed=True)
    p = parsed.responses[0].partitions[0]
    assert (p.diverging_epoch.epoch, p.diverging_epoch.end_offset) == (3, 17)
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (2, 4)


def test_api_versions_above_max_gets_v0_unsupported_with_ranges(handlers):
    cls = ALL_APIS[18].request_class
    req = cls(client_software_name="x", client_software_version="1")
    req.with_header(correlation_id=9, client_id="c")
    payload = bytes(req.encode(version=4, header=True))
    decoded = codec.decode_request(payload, handlers.served)
    assert decoded.body is None  # v4 is not served
    frame = codec.encode_response(handlers.on_unserved(decoded), 0, decoded.correlation_id)
    parsed = ALL_APIS[18].response_class.decode(frame, header=True, framed=True)
    assert parsed.error_code == 35 and parsed.header.correlation_id == 9
    assert any((k.api_key, k.max_version) == (18, 3) for k in parsed.api_keys)


def test_unserved_produce_version_gets_unsupported_version_per_partition(handlers):
    req = request_for(0, 10)
    req.with_header(correlation_id=3, client_id="c")
    payload = bytes(req.encode(version=10, header=True))
    decoded = codec.decode_unserved(payload, ALL_APIS[0])
    response = handlers.error_response(decoded, 35)
    frame = codec.encode_response(response, 10, 3)
    parsed = ALL_APIS[0].response_class.decode(frame, version=10, header=True, framed=True)
    assert parsed.responses[0].partition_responses[0].error_code == 35


def test_truncated_body_is_malformed(handlers):
    req = request_for(3, 12)
    req.with_header(correlation_id=1, client_id="c")
    payload = bytes(req.encode(version=12, header=True))
    with pytest.raises(codec.MalformedRequest):
        codec.decode_request(payload[:-4], handlers.served)
    with pytest.raises(codec.MalformedRequest):
        codec.decode_request(payload[:5], handlers.served)


def test_response_header_length_strips_flexible_header():
    resp = ALL_APIS[19].response_class(version=7, topics=[])
    frame = codec.encode_response(resp, 7, 77)
    payload = frame[4:]
    n = codec.response_header_length(19, 7, payload)
    assert ResponseHeader.decode(io.BytesIO(payload[:n]), flexible=True).correlation_id == 77
    assert ALL_APIS[19].response_class.decode(payload[n:], version=7).topics == []
    assert codec.response_header_length(18, 3, payload) == 4  # ApiVersions: always header v0


# ---- record batches


def test_batch_header_fields_and_crc():
    data = batch([b"a", b"b", b"c"], producer_id=55, base_sequence=10)
    h = records.parse_batch_header(data)
    assert (h.magic, h.record_count, h.last_offset_delta, h.producer_id, h.base_sequence) == (2, 3, 2, 55, 10)
    assert h.size == len(data) and h.last_sequence == 12
    assert records.compute_crc(data, 0, h) == h.crc


def test_rewriting_offset_and_epoch_keeps_the_crc_valid():
    data = batch([b"a", b"b"])
    out, nxt = records.assign_offsets(data + data, 1000, 9)
    assert nxt == 1004
    hs = [h for _, h in records.iter_batches(out)]  # verifies CRCs
    assert [(h.base_offset, h.partition_leader_epoch) for h in hs] == [(1000, 9), (1002, 9)]
    assert [r.offset for r in records.decode_records(out)] == [1000, 1001, 1002, 1003]


@pytest.mark.parametrize("damage", ["body", "crc", "truncate", "magic", "length"])
def test_corrupt_batches_are_refused(damage):
    data = bytearray(batch([b"hello", b"world"]))
    if damage == "body":
        data[-2] ^= 0xFF
    elif damage == "crc":
        data[17] ^= 0x01
    elif damage == "truncate":
        data = data[:-3]
    elif damage == "magic":
        data[16] = 1
    elif damage == "length":
        struct.pack_into(">i", data, 8, 5)
    err, _ = records.validate_produce_records(bytes(data))
    assert err == records.Errors.CORRUPT_MESSAGE


def test_empty_produce_records_are_invalid():
    assert records.validate_produce_records(b"")[0] == records.Errors.INVALID_RECORD
    assert records.validate_produce_records(None)[0] == records.Errors.INVALID_RECORD


def test_corrupt_produce_is_answered_corrupt_message_and_not_appended(handlers):
    req = request_for(0, 9)
    bad = bytearray(batch([b"a"]))
    bad[-1] ^= 0xFF
    req.topic_data[0].partition_data[0].records = bytes(bad)
    req.with_header(correlation_id=1, client_id="c")
    decoded = codec.decode_request(bytes(req.encode(version=9, header=True)), handlers.served)
    before = handlers.broker.produce_calls
    response = asyncio.run(handlers.broker_apis.handle_produce(decoded))
    assert response.responses[0].partition_responses[0].error_code == 2
    assert handlers.broker.produce_calls == before


@pytest.mark.parametrize("version", [1, 4])
def test_null_in_a_non_nullable_field_is_malformed(handlers, version):
    """kafka-python decodes a -1 length as None; the codec refuses it as Kafka does, so a null
    DescribeConfigs resource list never reaches the handler."""
    cls = ALL_APIS[32].request_class
    req = cls(resources=None, include_synonyms=False, include_documentation=False)
    req.with_header(correlation_id=1, client_id="c")
    payload = bytes(req.encode(version=version, header=True))
    with pytest.raises(codec.MalformedRequest, match="resources"):
        codec.decode_request(payload, handlers.served)
    # ... while a nullable one (Metadata topics = null means "all topics") is fine.
    meta = ALL_APIS[3].request_class(topics=None, allow_auto_topic_creation=False)
    meta.with_header(correlation_id=2, client_id="c")
    assert codec.decode_request(bytes(meta.encode(version=12, header=True)), handlers.served).body.topics is None


def test_zero_uuids_are_not_nulls():
    """kafka-python decodes the all-zero UUID (Kafka's "no topic id") as None: Metadata v10+ from
    KafkaAdminClient carries it for every named topic and must not be refused as a null (regression)."""
    meta_cls = ALL_APIS[3].request_class
    req = meta_cls(topics=[meta_cls.MetadataRequestTopic(name="t", topic_id=uuid.UUID(int=0))],
                   allow_auto_topic_creation=False)
    req.with_header(correlation_id=1, client_id="c")
    assert codec.decode_request(bytes(req.encode(version=12, header=True)), ALL_APIS).body.topics[0].name == "t"
    reg_cls = ALL_APIS[62].request_class
    reg = reg_cls(broker_id=1, cluster_id="c", incarnation_id=uuid.uuid4(), listeners=[], features=[],
                  log_dirs=[uuid.UUID(int=0)], previous_broker_epoch=-1)
    reg.with_header(correlation_id=2, client_id="b")
    assert codec.decode_request(bytes(reg.encode(version=3, header=True)), ALL_APIS).body.broker_id == 1
