"""GetReplicaLogInfo (93): the broker's answer to K7's question, through the real codec.

The replica manager is a stand-in (unit test); requests and responses go through Kafka's framing both ways.
"""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

from reference_impl.protocol.errors import Errors
from reference_impl.server.apis import replica_log_info
from reference_impl.server.apis.replica_log_info import ReplicaLogInfoApi
from reference_impl.server.wire import codec
from reference_impl.server.wire import messages as m
from reference_impl.server.wire.api_keys import ApiKey

TOPIC_ID = "5f2c3a0e-0d6b-4c1e-9a57-3b1a9d2e7c11"


class Manager:
    """Hosts t-0 (leader epoch 7 in its metadata, log at epoch 6 ending at 42) and a recovered log t-1."""

    def lookup(self, topic, partition):
        if (topic, partition) == ("t", 0):
            return SimpleNamespace(log=SimpleNamespace(last_epoch=6, log_end_offset=42),
                                   replica=SimpleNamespace(leader_epoch=7))
        return None

    def recovered_log(self, topic, partition):
        if (topic, partition) == ("t", 1):
            return SimpleNamespace(last_epoch=5, log_end_offset=30)
        return None


def ask(api: ReplicaLogInfoApi, topics: dict[str, list[int]]):
    request = m.GetReplicaLogInfoRequest(topic_partitions=[
        m.GetReplicaLogInfoRequest.TopicPartitions(topic_id=uuid.UUID(tid), partitions=parts)
        for tid, parts in topics.items()])
    request.with_header(correlation_id=9, client_id="controller-100")
    decoded = codec.decode_request(bytes(request.encode(version=0, header=True)), codec.ALL_APIS)
    assert decoded.api_key == ApiKey.GET_REPLICA_LOG_INFO
    response = asyncio.run(api.handle(decoded))
    payload = codec.encode_response(response, 0, 9)[4:]  # without the frame length
    skip = codec.response_header_length(ApiKey.GET_REPLICA_LOG_INFO, 0, payload)
    return m.GetReplicaLogInfoResponse.decode(memoryview(payload)[skip:], version=0)


def test_hosted_recovered_and_unknown_partitions_are_answered_in_order():
    api = ReplicaLogInfoApi(Manager(), {TOPIC_ID: "t"}.get, lambda: 77)
    r = ask(api, {TOPIC_ID: [0, 1, 2]})
    assert r.broker_epoch == 77 and not r.truncated
    [topic] = r.topic_partition_log_info_list
    assert str(topic.topic_id) == TOPIC_ID
    got = [(p.partition, p.last_written_leader_epoch, p.current_leader_epoch, p.log_end_offset, p.error_code)
           for p in topic.partition_log_info]
    assert got == [(0, 6, 7, 42, 0), (1, 5, -1, 30, 0),
                   (2, -1, -1, -1, int(Errors.UNKNOWN_TOPIC_OR_PARTITION))]


def test_a_topic_the_broker_has_not_learned_yet_is_unknown():
    api = ReplicaLogInfoApi(Manager(), {}.get, lambda: 77)
    [topic] = ask(api, {TOPIC_ID: [0]}).topic_partition_log_info_list
    assert [p.error_code for p in topic.partition_log_info] == [int(Errors.UNKNOWN_TOPIC_OR_PARTITION)]


def test_more_than_the_cap_is_truncated(monkeypatch):
    monkeypatch.setattr(replica_log_info, "MAX_PARTITIONS", 2)
    api = ReplicaLogInfoApi(Manager(), {TOPIC_ID: "t"}.get, lambda: 77)
    r = ask(api, {TOPIC_ID: [0, 1, 2]})
    assert r.truncated
    assert [p.partition for t in r.topic_partition_log_info_list for p in t.partition_log_info] == [0, 1]
