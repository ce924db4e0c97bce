"""The quorum's RPCs between the Raft core's values (``protocol.raft.messages``) and Kafka's wire messages.

Vote (52, v2 with KIP-996's PreVote), BeginQuorumEpoch (53, v0), EndQuorumEpoch (54, v0) and Fetch (1, v12
on the controller listener, replica id at the top level as before v15) carry one topic,
``__cluster_metadata``, and one partition, 0, as in Kafka. A Fetch answer's records are Kafka v2 record
batches: one per quorum batch, its base offset and partition leader epoch those of the batch (so the
epoch cache of the receiving log is Kafka's), each record's value the metadata record as JSON
(``records.to_dict``). DescribeQuorum (55) reports the quorum for operators and the harness.
"""

from __future__ import annotations

import json
from typing import Any

from kafka.protocol.admin import DescribeQuorumResponse
from kafka.record.default_records import DefaultRecordBatchBuilder

from reference_impl.protocol.divergence import EpochEndOffset
from reference_impl.protocol.errors import Errors
from reference_impl.protocol.raft import messages as rm
from reference_impl.protocol.records import record_from_dict, to_dict
from reference_impl.server.apis.common import response_class
from reference_impl.server.wire import messages as m
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.records import decode_records, iter_batches, rewrite_batch

TOPIC = "__cluster_metadata"
VOTE_VERSION = 2
BEGIN_VERSION = 0
END_VERSION = 0
FETCH_VERSION = 12
FETCH_MAX_BYTES = 16 * 1024 * 1024


# --------------------------------------------------------------------------------------------- requests
def request_to_wire(request: rm.RaftRequest, fetch_max_wait_ms: int) -> tuple[Any, int]:
    """A core request as ``(wire message, version)``."""
    if isinstance(request, rm.VoteRequest):
        part = m.VoteRequest.TopicData.PartitionData(
            partition_index=0, replica_epoch=request.candidate_epoch, replica_id=request.candidate_id,
            replica_directory_id=None, voter_directory_id=None, last_offset_epoch=request.last_epoch,
            last_offset=request.end_offset, pre_vote=request.pre_vote)
        return m.VoteRequest(cluster_id=None, voter_id=-1, topics=[
            m.VoteRequest.TopicData(topic_name=TOPIC, partitions=[part])]), VOTE_VERSION
    if isinstance(request, rm.BeginQuorumEpochRequest):
        part = m.BeginQuorumEpochRequest.TopicData.PartitionData(
            partition_index=0, leader_id=request.leader_id, leader_epoch=request.leader_epoch)
        return m.BeginQuorumEpochRequest(cluster_id=None, topics=[
            m.BeginQuorumEpochRequest.TopicData(topic_name=TOPIC, partitions=[part])]), BEGIN_VERSION
    if isinstance(request, rm.EndQuorumEpochRequest):
        part = m.EndQuorumEpochRequest.TopicData.PartitionData(
            partition_index=0, leader_id=request.leader_id, leader_epoch=request.leader_epoch,
            preferred_successors=list(request.preferred_successors))
        return m.EndQuorumEpochRequest(cluster_id=None, topics=[
            m.EndQuorumEpochRequest.TopicData(topic_name=TOPIC, partitions=[part])]), END_VERSION
    if isinstance(request, rm.FetchRequest):
        cls = m.FetchRequest
        part = cls.FetchTopic.FetchPartition(
            partition=0, current_leader_epoch=request.current_leader_epoch, fetch_offset=request.fetch_offset,
            last_fetched_epoch=request.last_fetched_epoch, log_start_offset=0, partition_max_bytes=FETCH_MAX_BYTES)
        return cls(replica_id=request.replica_id, max_wait_ms=fetch_max_wait_ms, min_bytes=1,
                   max_bytes=FETCH_MAX_BYTES, isolation_level=0, session_id=0, session_epoch=-1,
                   topics=[cls.FetchTopic(topic=TOPIC, partitions=[part])], forgotten_topics_data=[],
                   rack_id=""), FETCH_VERSION
    raise ValueError(f"not a quorum request: {request!r}")


def request_from_wire(api_key: int, body: Any) -> tuple[int, rm.RaftRequest] | None:
    """``(sender id, core request)`` from a decoded wire request, or None when it does not name the metadata
    partition (answered INVALID_REQUEST)."""
    try:
        if api_key == ApiKey.FETCH:
            part = body.topics[0].partitions[0]
            return body.replica_id, rm.FetchRequest(body.replica_id, part.current_leader_epoch, part.fetch_offset,
                                                    part.last_fetched_epoch)
        part = body.topics[0].partitions[0]
        if api_key == ApiKey.VOTE:
            return part.replica_id, rm.VoteRequest(part.replica_id, part.replica_epoch, part.last_offset_epoch,
                                                   part.last_offset, bool(getattr(part, "pre_vote", False)))
        if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
            return part.leader_id, rm.BeginQuorumEpochRequest(part.leader_id, part.leader_epoch)
        if api_key == ApiKey.END_QUORUM_EPOCH:
            return part.leader_id, rm.EndQuorumEpochRequest(part.leader_id, part.leader_epoch,
                                                            tuple(part.preferred_successors or ()))
    except (AttributeError, IndexError, TypeError):
        return None
    return None


# -------------------------------------------------------------------------------------------- responses
def response_to_wire(api_key: int, response: rm.RaftResponse | None, version: int) -> Any:
    """A core answer (None: INVALID_REQUEST) as the wire response of ``api_key``."""
    if api_key == ApiKey.FETCH:
        return _fetch_response(response, version)
    error = int(Errors.INVALID_REQUEST) if response is None else int(response.error)
    leader = -1 if response is None else response.leader_id
    epoch = -1 if response is None else response.leader_epoch
    if api_key == ApiKey.VOTE:
        granted = bool(response is not None and response.vote_granted)
        part = m.VoteResponse.TopicData.PartitionData(partition_index=0, error_code=error, leader_id=leader,
                                                      leader_epoch=epoch, vote_granted=granted)
        return m.VoteResponse(error_code=0, topics=[m.VoteResponse.TopicData(topic_name=TOPIC, partitions=[part])])
    cls = m.BeginQuorumEpochResponse if api_key == ApiKey.BEGIN_QUORUM_EPOCH else m.EndQuorumEpochResponse
    part = cls.TopicData.PartitionData(partition_index=0, error_code=error, leader_id=leader, leader_epoch=epoch)
    return cls(error_code=0, topics=[cls.TopicData(topic_name=TOPIC, partitions=[part])])


def _fetch_response(response: rm.FetchResponse | None, version: int) -> Any:
    cls = response_class(ApiKey.FETCH)
    pcls = cls.FetchableTopicResponse.PartitionData
    error = int(Errors.INVALID_REQUEST) if response is None else int(response.error)
    div = None if response is None else response.diverging_epoch
    part = pcls(
        partition_index=0, error_code=error,
        high_watermark=-1 if response is None else response.high_watermark, last_stable_offset=-1,
        log_start_offset=0, aborted_transactions=[], preferred_read_replica=-1,
        records=encode_batches(() if response is None else response.batches),
        diverging_epoch=pcls.EpochEndOffset(epoch=-1 if div is None else div.epoch,
                                            end_offset=-1 if div is None else div.end_offset),
        current_leader=pcls.LeaderIdAndEpoch(leader_id=-1 if response is None else response.leader_id,
                                             leader_epoch=-1 if response is None else response.leader_epoch))
    return cls(version=version, throttle_time_ms=0, error_code=0, session_id=0,
               responses=[cls.FetchableTopicResponse(topic=TOPIC, partitions=[part])])


def response_from_wire(api_key: int, body: Any) -> rm.RaftResponse:
    """The core answer in a decoded wire response (a top-level error becomes the answer's error)."""
    top = getattr(body, "error_code", 0) or 0
    if api_key == ApiKey.FETCH:
        topics = body.responses or []
        part = topics[0].partitions[0] if topics and topics[0].partitions else None
        if top or part is None:
            return rm.FetchResponse(Errors(top or int(Errors.UNKNOWN_SERVER_ERROR)), -1, -1)
        leader = getattr(part, "current_leader", None)
        div = getattr(part, "diverging_epoch", None)
        diverging = EpochEndOffset(div.epoch, div.end_offset) if div is not None and div.epoch >= 0 else None
        return rm.FetchResponse(Errors(part.error_code), leader.leader_id if leader else -1,
                                leader.leader_epoch if leader else -1, part.high_watermark, diverging,
                                decode_batches(part.records))
    topics = body.topics or []
    part = topics[0].partitions[0] if topics and topics[0].partitions else None
    if top or part is None:
        error = Errors(top or int(Errors.UNKNOWN_SERVER_ERROR))
        if api_key == ApiKey.VOTE:
            return rm.VoteResponse(error, -1, -1, False)
        cls = rm.BeginQuorumEpochResponse if api_key == ApiKey.BEGIN_QUORUM_EPOCH else rm.EndQuorumEpochResponse
        return cls(error, -1, -1)
    if api_key == ApiKey.VOTE:
        return rm.VoteResponse(Errors(part.error_code), part.leader_id, part.leader_epoch, bool(part.vote_granted))
    cls = rm.BeginQuorumEpochResponse if api_key == ApiKey.BEGIN_QUORUM_EPOCH else rm.EndQuorumEpochResponse
    return cls(Errors(part.error_code), part.leader_id, part.leader_epoch)


def api_key_of(request: rm.RaftRequest) -> int:
    """The wire api key of a core request."""
    return {rm.VoteRequest: ApiKey.VOTE, rm.BeginQuorumEpochRequest: ApiKey.BEGIN_QUORUM_EPOCH,
            rm.EndQuorumEpochRequest: ApiKey.END_QUORUM_EPOCH, rm.FetchRequest: ApiKey.FETCH}[type(request)]


# ---------------------------------------------------------------------------------------------- records
def encode_batches(batches: tuple[rm.RaftBatch, ...] | list[rm.RaftBatch]) -> bytes:
    """Quorum batches as Kafka v2 record batches (one each, values = metadata records as JSON)."""
    out = bytearray()
    for batch in batches:
        builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
        for i, record in enumerate(batch.records):
            builder.append(i, 0, None, json.dumps(to_dict(record), separators=(",", ":")).encode(), [])
        out += rewrite_batch(builder.build(), batch.base_offset, batch.epoch)
    return bytes(out)


def decode_batches(data: bytes | None) -> tuple[rm.RaftBatch, ...]:
    """Inverse of ``encode_batches``."""
    if not data:
        return ()
    out = []
    for pos, header in iter_batches(data):
        chunk = bytes(memoryview(data)[pos:pos + header.size])
        records = tuple(record_from_dict(json.loads(r.value)) for r in decode_records(chunk))
        out.append(rm.RaftBatch(header.base_offset, header.partition_leader_epoch, records))
    return tuple(out)


# ------------------------------------------------------------------------------------------ DescribeQuorum
def describe_quorum(error: Errors, leader: int, epoch: int, hwm: int, voters: dict[int, int | None],
                    version: int) -> Any:
    """DescribeQuorum (55): the leader's view (voters' end offsets), or NOT_LEADER_OR_FOLLOWER elsewhere."""
    cls = DescribeQuorumResponse
    pcls = cls.TopicData.PartitionData
    states = [pcls.ReplicaState(replica_id=v, log_end_offset=-1 if o is None else o, last_fetch_timestamp=-1,
                               last_caught_up_timestamp=-1) for v, o in sorted(voters.items())]
    part = pcls(partition_index=0, error_code=int(error), leader_id=leader, leader_epoch=epoch, high_watermark=hwm,
                current_voters=states, observers=[])
    return cls(version=version, error_code=0, topics=[cls.TopicData(topic_name=TOPIC, partitions=[part])])
