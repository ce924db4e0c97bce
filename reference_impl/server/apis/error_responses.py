"""Whole-request error responses: what Kafka answers when a request fails as a whole.

``error_response(request, code)`` builds the API's response with ``code`` in every item the request named
(each partition of a Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, ElectLeaders or reassignment; each
topic of a Metadata or CreateTopics; each resource of a config request; the top-level code where the API
has one), so a client reads the error wherever it looks. It is used for unserved versions
(UNSUPPORTED_VERSION), handler failures (UNKNOWN_SERVER_ERROR), controllers a broker cannot reach
(NOT_CONTROLLER, REQUEST_TIMED_OUT) and FindCoordinator where nothing coordinates the key
(COORDINATOR_NOT_AVAILABLE). The group APIs' builders are ``apis.groups.ERROR_BUILDERS``. ApiVersions' error
response lists the APIs the node serves, so ``client_apis.ClientApiHandlers`` builds that one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kafka.protocol.api_message import ApiMessage

from reference_impl.server import services as sv
from reference_impl.server.apis.common import ZERO_UUID, fetch_response, group_by_topic, response_class
from reference_impl.server.apis.groups import ERROR_BUILDERS as GROUP_ERROR_BUILDERS
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.codec import DecodedRequest

ErrorBuilder = Callable[[Any, int, int], ApiMessage]


def error_response(request: DecodedRequest, code: int) -> ApiMessage | None:
    """The response for ``request`` failing as a whole with ``code`` (every item carries it); None for an
    API without one here, an undecoded body, or a Produce with acks=0 (its client expects no answer)."""
    builder = _BUILDERS.get(request.api_key)
    if builder is None or request.body is None:
        return None
    if request.api_key == ApiKey.PRODUCE and request.body.acks == 0:
        return None
    return builder(request.body, request.api_version, int(code))


def _items(topics: Iterable | None, name_attr: str, parts_attr: str,
           index_attr: str | None = None) -> Iterator[tuple[str, int]]:
    """``(topic_name, partition_index)`` from a request's nested topic/partition lists."""
    for t in topics or []:
        for p in getattr(t, parts_attr) or []:
            yield getattr(t, name_attr), (p if index_attr is None else getattr(p, index_attr))


def _produce(body, version, code):
    cls = response_class(ApiKey.PRODUCE)
    tcls, pcls = cls.TopicProduceResponse, cls.TopicProduceResponse.PartitionProduceResponse
    groups = group_by_topic((t, pcls(index=i, error_code=code, base_offset=-1, log_append_time_ms=-1,
                                     log_start_offset=-1, record_errors=[], error_message=None))
                            for t, i in _items(body.topic_data, "name", "partition_data", "index"))
    return cls(version=version, responses=[tcls(name=t, partition_responses=ps) for t, ps in groups.items()],
               throttle_time_ms=0)


def _fetch(body, version, code):
    parts = tuple(
        sv.FetchPartitionResult(topic=t, partition=i, error=code)
        for t, i in _items(body.topics, "topic", "partitions", "partition")
    )
    return fetch_response(version, sv.FetchResult(parts, error=code))


def _list_offsets(body, version, code):
    cls = response_class(ApiKey.LIST_OFFSETS)
    tcls, pcls = cls.ListOffsetsTopicResponse, cls.ListOffsetsTopicResponse.ListOffsetsPartitionResponse
    groups = group_by_topic((t, pcls(partition_index=i, error_code=code, timestamp=-1, offset=-1, leader_epoch=-1))
                            for t, i in _items(body.topics, "name", "partitions", "partition_index"))
    return cls(version=version, throttle_time_ms=0, topics=[tcls(name=t, partitions=ps) for t, ps in groups.items()])


def _metadata(body, version, code):
    cls = response_class(ApiKey.METADATA)
    tcls = cls.MetadataResponseTopic
    topics = [tcls(error_code=code, name=t.name, topic_id=ZERO_UUID, is_internal=False, partitions=[],
                   authorized_operations=None) for t in (body.topics or [])]
    return cls(version=version, throttle_time_ms=0, brokers=[], cluster_id=None, controller_id=-1,
               topics=topics, authorized_operations=None)


def _find_coordinator(body, version, code):
    cls = response_class(ApiKey.FIND_COORDINATOR)
    coordinators = [
        cls.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code, error_message=None)
        for k in (body.coordinator_keys or [])
    ] if version >= 4 else []
    return cls(version=version, throttle_time_ms=0, error_code=code, error_message=None, node_id=-1, host="",
               port=-1, coordinators=coordinators)


def _init_producer_id(body, version, code):
    return response_class(ApiKey.INIT_PRODUCER_ID)(version=version, throttle_time_ms=0, error_code=code,
                                                   producer_id=-1, producer_epoch=-1)


def _offset_for_leader_epoch(body, version, code):
    cls = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH)
    tcls, pcls = cls.OffsetForLeaderTopicResult, cls.OffsetForLeaderTopicResult.EpochEndOffset
    groups = group_by_topic((t, pcls(error_code=code, partition=i, leader_epoch=-1, end_offset=-1))
                            for t, i in _items(body.topics, "topic", "partitions", "partition"))
    return cls(version=version, throttle_time_ms=0, topics=[tcls(topic=t, partitions=ps) for t, ps in groups.items()])


def _create_topics(body, version, code):
    cls = response_class(ApiKey.CREATE_TOPICS)
    return cls(version=version, throttle_time_ms=0, topics=[
        cls.CreatableTopicResult(name=t.name, topic_id=ZERO_UUID, error_code=code, error_message=None,
                                 num_partitions=-1, replication_factor=-1, configs=[])
        for t in body.topics or []
    ])


def _describe_configs(body, version, code):
    cls = response_class(ApiKey.DESCRIBE_CONFIGS)
    return cls(version=version, throttle_time_ms=0, results=[
        cls.DescribeConfigsResult(error_code=code, error_message=None, resource_type=r.resource_type,
                                  resource_name=r.resource_name, configs=[])
        for r in body.resources or []
    ])


def _alter_configs(api_key: ApiKey) -> ErrorBuilder:
    """AlterConfigs and IncrementalAlterConfigs answer with the same shape, one result per resource."""
    def build(body, version, code):
        cls = response_class(api_key)
        return cls(version=version, throttle_time_ms=0, responses=[
            cls.AlterConfigsResourceResponse(error_code=code, error_message=None, resource_type=r.resource_type,
                                             resource_name=r.resource_name)
            for r in body.resources or []
        ])
    return build


def _elect_leaders(body, version, code):
    cls = response_class(ApiKey.ELECT_LEADERS)
    tcls, pcls = cls.ReplicaElectionResult, cls.ReplicaElectionResult.PartitionResult
    groups = group_by_topic((t, pcls(partition_id=p, error_code=code, error_message=None))
                            for t, p in _items(body.topic_partitions, "topic", "partitions"))
    return cls(version=version, throttle_time_ms=0, error_code=code,
               replica_election_results=[tcls(topic=t, partition_result=ps) for t, ps in groups.items()])


def _alter_reassignments(body, version, code):
    cls = response_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
    tcls, pcls = cls.ReassignableTopicResponse, cls.ReassignableTopicResponse.ReassignablePartitionResponse
    groups = group_by_topic((t, pcls(partition_index=i, error_code=code, error_message=None))
                            for t, i in _items(body.topics, "name", "partitions", "partition_index"))
    return cls(version=version, throttle_time_ms=0, allow_replication_factor_change=True, error_code=code,
               error_message=None, responses=[tcls(name=t, partitions=ps) for t, ps in groups.items()])


def _list_reassignments(body, version, code):
    return response_class(ApiKey.LIST_PARTITION_REASSIGNMENTS)(version=version, throttle_time_ms=0, error_code=code,
                                                               error_message=None, topics=[])


def _describe_cluster(body, version, code):
    return response_class(ApiKey.DESCRIBE_CLUSTER)(version=version, throttle_time_ms=0, error_code=code,
                                                   error_message=None, endpoint_type=1, cluster_id="",
                                                   controller_id=-1, brokers=[], authorized_operations=None)


def _add_offsets_to_txn(body, version, code):
    return response_class(ApiKey.ADD_OFFSETS_TO_TXN)(version=version, throttle_time_ms=0, error_code=code)


def _end_txn(body, version, code):
    return response_class(ApiKey.END_TXN)(version=version, throttle_time_ms=0, error_code=code)


def _add_partitions_to_txn(body, version, code):
    cls = response_class(ApiKey.ADD_PARTITIONS_TO_TXN)
    tcls = cls.AddPartitionsToTxnTopicResult
    pcls = tcls.AddPartitionsToTxnPartitionResult

    def topics(items):
        return [tcls(name=t.name, results_by_partition=[pcls(partition_index=p, partition_error_code=code)
                                                        for p in t.partitions]) for t in items or []]
    if version >= 4:
        return cls(version=version, throttle_time_ms=0, error_code=code, results_by_topic_v3_and_below=[],
                   results_by_transaction=[cls.AddPartitionsToTxnResult(transactional_id=x.transactional_id,
                                                                         topic_results=topics(x.topics))
                                           for x in body.transactions or []])
    return cls(version=version, throttle_time_ms=0, error_code=code, results_by_transaction=[],
               results_by_topic_v3_and_below=topics(body.v3_and_below_topics))


_BUILDERS: dict[int, ErrorBuilder] = {
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: _add_offsets_to_txn,
    ApiKey.END_TXN: _end_txn,
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.METADATA: _metadata,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs(ApiKey.ALTER_CONFIGS),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs(ApiKey.INCREMENTAL_ALTER_CONFIGS),
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _alter_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _list_reassignments,
    ApiKey.DESCRIBE_CLUSTER: _describe_cluster,
    **GROUP_ERROR_BUILDERS,
}
