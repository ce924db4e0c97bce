"""The broker's client (data-plane) APIs: Produce, Fetch, ListOffsets, Metadata, FindCoordinator,
InitProducerId, OffsetForLeaderEpoch and DescribeCluster, over ``services.BrokerServices``."""

from __future__ import annotations

import asyncio

from kafka.protocol.api_message import ApiMessage

from reference_impl.protocol.errors import Errors
from reference_impl.server import services as sv
from reference_impl.server.apis.common import fetch_response, response_class, topic_uuid
from reference_impl.server.apis.error_responses import error_response
from reference_impl.server.apis.txn import find_transaction_coordinator, is_transaction_lookup
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.codec import DecodedRequest
from reference_impl.server.wire.records import validate_produce_records
from reference_impl.server.wire.server import Handler

BROKER_API_KEYS = frozenset({
    ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA, ApiKey.FIND_COORDINATOR,
    ApiKey.INIT_PRODUCER_ID, ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.DESCRIBE_CLUSTER,
})


class BrokerApis:
    """The data-plane handlers of one broker (module docstring); stateless over ``services``."""

    def __init__(self, services: sv.BrokerServices) -> None:
        self.services = services

    def handlers(self) -> dict[int, Handler]:
        """Map api key -> async handler, for every key of ``BROKER_API_KEYS``."""
        return {
            ApiKey.PRODUCE: self.handle_produce,
            ApiKey.FETCH: self.handle_fetch,
            ApiKey.LIST_OFFSETS: self.handle_list_offsets,
            ApiKey.METADATA: self.handle_metadata,
            ApiKey.FIND_COORDINATOR: self.handle_find_coordinator,
            ApiKey.INIT_PRODUCER_ID: self.handle_init_producer_id,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offset_for_leader_epoch,
            ApiKey.DESCRIBE_CLUSTER: self.handle_describe_cluster,
        }

    # -------------------------------------------------------------------------------------- Metadata

    async def handle_metadata(self, request: DecodedRequest) -> ApiMessage:
        """Metadata 0-12: unfenced brokers, controller id, topics with real leader epochs."""
        body, version = request.body, request.api_version
        if body.topics is None or (version == 0 and not body.topics):
            names: list[str] | None = None  # v0 encodes "all" as an empty list
        else:
            names = [t.name for t in body.topics if t.name is not None]
        allow_auto = bool(body.allow_auto_topic_creation) if version >= 4 else True
        cluster = await self.services.metadata(names, allow_auto)
        cls = response_class(ApiKey.METADATA)
        tcls = cls.MetadataResponseTopic
        pcls = tcls.MetadataResponsePartition
        topics = []
        for t in cluster.topics:
            partitions = [
                pcls(
                    error_code=int(p.error),
                    partition_index=p.partition,
                    leader_id=p.leader,
                    leader_epoch=p.leader_epoch,
                    replica_nodes=list(p.replicas),
                    isr_nodes=list(p.isr),
                    offline_replicas=list(p.offline_replicas),
                )
                for p in t.partitions
            ]
            topics.append(tcls(
                error_code=int(t.error),
                name=t.name,
                topic_id=topic_uuid(t.topic_id),
                is_internal=t.is_internal,
                partitions=partitions,
                authorized_operations=None,
            ))
        brokers = [
            cls.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in cluster.brokers
        ]
        return cls(
            version=version,
            throttle_time_ms=0,
            brokers=brokers,
            cluster_id=cluster.cluster_id,
            controller_id=cluster.controller_id,
            topics=topics,
            authorized_operations=None,
        )

    async def handle_describe_cluster(self, request: DecodedRequest) -> ApiMessage:
        """DescribeCluster 0-1 from the same view as Metadata (unfenced brokers, controller id)."""
        cluster = await self.services.metadata([], False)
        cls = response_class(ApiKey.DESCRIBE_CLUSTER)
        brokers = [
            cls.DescribeClusterBroker(broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in cluster.brokers
        ]
        return cls(
            version=request.api_version,
            throttle_time_ms=0,
            error_code=0,
            error_message=None,
            endpoint_type=1,
            cluster_id=cluster.cluster_id,
            controller_id=cluster.controller_id,
            brokers=brokers,
            authorized_operations=None,
        )

    # --------------------------------------------------------------------------------------- Produce

    async def handle_produce(self, request: DecodedRequest) -> ApiMessage | None:
        """Produce 3-9: verify batches (CORRUPT_MESSAGE), append per partition, answer unless acks=0."""
        body = request.body
        acks = body.acks
        jobs: list[tuple[str, int, asyncio.Future | sv.ProduceResult]] = []
        for topic in body.topic_data:
            for part in topic.partition_data:
                if acks not in (0, 1, -1):
                    outcome: object = sv.ProduceResult(error=Errors.INVALID_REQUIRED_ACKS)
                else:
                    err, _headers = validate_produce_records(part.records)
                    if err != Errors.NONE:
                        outcome = sv.ProduceResult(error=err, error_message="record batch failed validation")
                    else:
                        outcome = self.services.produce(
                            topic.name, part.index, bytes(part.records), acks, body.timeout_ms,
                            body.transactional_id,
                        )
                jobs.append((topic.name, part.index, outcome))
        # Partitions of one request are appended concurrently (as Kafka does); each call awaits its own
        # ack verdict (L5). The request as a whole completes when all have an answer.
        pending = [o for _, _, o in jobs if not isinstance(o, sv.ProduceResult)]
        done = iter(await asyncio.gather(*pending)) if pending else iter(())
        results = [(t, p, o if isinstance(o, sv.ProduceResult) else next(done)) for t, p, o in jobs]
        if acks == 0:
            return None  # acks=0: the client expects no response at all
        cls = response_class(ApiKey.PRODUCE)
        tcls = cls.TopicProduceResponse
        pcls = tcls.PartitionProduceResponse
        by_topic: dict[str, list] = {}
        for t, p, r in results:
            by_topic.setdefault(t, []).append(pcls(
                index=p,
                error_code=int(r.error),
                base_offset=r.base_offset,
                log_append_time_ms=r.log_append_time_ms,
                log_start_offset=r.log_start_offset,
                record_errors=[],
                error_message=r.error_message,
            ))
        return cls(
            version=request.api_version,
            responses=[tcls(name=t, partition_responses=ps) for t, ps in by_topic.items()],
            throttle_time_ms=0,
        )

    # ----------------------------------------------------------------------------------------- Fetch

    async def handle_fetch(self, request: DecodedRequest) -> ApiMessage:
        """Fetch 4-12: consumer (up to HWM) or follower (replica_id >= 0) fetch, long-polled by services.

        Fetch sessions (KIP-227) are not kept: every answer has session_id 0, which tells clients to keep
        sending full fetch requests.
        """
        body = request.body
        parts = tuple(
            sv.FetchPartitionSpec(
                topic=t.topic,
                partition=p.partition,
                fetch_offset=p.fetch_offset,
                partition_max_bytes=p.partition_max_bytes,
                current_leader_epoch=p.current_leader_epoch,
                last_fetched_epoch=p.last_fetched_epoch,
                log_start_offset=p.log_start_offset,
            )
            for t in body.topics
            for p in t.partitions
        )
        state = body.replica_state
        replica_epoch = state.replica_epoch if state is not None else -1
        spec = sv.FetchSpec(
            replica_id=body.replica_id,
            max_wait_ms=max(0, body.max_wait_ms),
            min_bytes=body.min_bytes,
            max_bytes=body.max_bytes,
            isolation_level=body.isolation_level,
            partitions=parts,
            replica_epoch=replica_epoch,
            rack_id=body.rack_id or "",
        )
        result = await self.services.fetch(spec)
        return fetch_response(request.api_version, result)

    # ----------------------------------------------------------------------- ListOffsets, OffsetForLE

    async def handle_list_offsets(self, request: DecodedRequest) -> ApiMessage:
        """ListOffsets 1-7: earliest / latest / by timestamp (L18 is the services' job)."""
        body = request.body
        parts = [
            sv.ListOffsetsPartitionSpec(t.name, p.partition_index, p.timestamp, p.current_leader_epoch)
            for t in body.topics
            for p in t.partitions
        ]
        results = await self.services.list_offsets(body.replica_id, body.isolation_level, parts)
        cls = response_class(ApiKey.LIST_OFFSETS)
        tcls = cls.ListOffsetsTopicResponse
        pcls = tcls.ListOffsetsPartitionResponse
        by_topic: dict[str, list] = {}
        for r in results:
            by_topic.setdefault(r.topic, []).append(pcls(
                partition_index=r.partition, error_code=int(r.error), timestamp=r.timestamp,
                offset=r.offset, leader_epoch=r.leader_epoch,
            ))
        return cls(
            version=request.api_version,
            throttle_time_ms=0,
            topics=[tcls(name=t, partitions=ps) for t, ps in by_topic.items()],
        )

    async def handle_offset_for_leader_epoch(self, request: DecodedRequest) -> ApiMessage:
        """OffsetForLeaderEpoch 2-4: end offset of an epoch (L11), fenced by the current leader epoch (L8)."""
        body = request.body
        queries = [
            sv.EpochQuery(t.topic, p.partition, p.leader_epoch, p.current_leader_epoch)
            for t in body.topics
            for p in t.partitions
        ]
        replica_id = body.replica_id if request.api_version >= 3 else -1
        results = await self.services.offset_for_leader_epoch(replica_id, queries)
        cls = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH)
        tcls = cls.OffsetForLeaderTopicResult
        pcls = tcls.EpochEndOffset
        by_topic: dict[str, list] = {}
        for r in results:
            by_topic.setdefault(r.topic, []).append(pcls(
                error_code=int(r.error), partition=r.partition, leader_epoch=r.leader_epoch, end_offset=r.end_offset,
            ))
        return cls(
            version=request.api_version,
            throttle_time_ms=0,
            topics=[tcls(topic=t, partitions=ps) for t, ps in by_topic.items()],
        )

    # --------------------------------------------------------------------- InitProducerId, FindCoord

    async def handle_init_producer_id(self, request: DecodedRequest) -> ApiMessage:
        """InitProducerId 0-4: a producer id for idempotent producers (kafka-python's default)."""
        body = request.body
        pid = body.producer_id if request.api_version >= 3 else -1
        epoch = body.producer_epoch if request.api_version >= 3 else -1
        r = await self.services.init_producer_id(body.transactional_id, body.transaction_timeout_ms, pid, epoch)
        return response_class(ApiKey.INIT_PRODUCER_ID)(
            version=request.api_version, throttle_time_ms=0, error_code=int(r.error),
            producer_id=r.producer_id, producer_epoch=r.producer_epoch,
        )

    async def handle_find_coordinator(self, request: DecodedRequest) -> ApiMessage | None:
        """FindCoordinator 0-4: transactional ids (key type 1) through ``apis.txn``; group keys
        COORDINATOR_NOT_AVAILABLE (no groups; consumers use assign())."""
        shell = getattr(self.services, "transactions", None)
        if shell is not None and is_transaction_lookup(request):
            return find_transaction_coordinator(shell, request)
        return error_response(request, Errors.COORDINATOR_NOT_AVAILABLE)
