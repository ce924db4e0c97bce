"""Handlers for the client-facing Kafka APIs: decoded request in, response message out.

Each handler translates a kafka-python request object into calls on ``services.BrokerServices`` /
``services.AdminServices`` and the returned dataclasses into the response message at the request's
version. No handler holds state. The same class serves two kinds of node:

- a broker: ``ClientApiHandlers(broker=services)``: data-plane APIs locally; admin APIs (CreateTopics,
  AlterConfigs, IncrementalAlterConfigs, ElectLeaders, AlterPartitionReassignments,
  ListPartitionReassignments) are relayed raw to the controller
  with ``forward_to_controller`` (KRaft brokers forward the same way), so kafka-python's KafkaAdminClient
  works against whatever node Metadata names as ``controller_id``. DescribeConfigs is answered locally when
  the services offer ``describe_configs`` (Kafka brokers answer it themselves), else forwarded too;
- the controller: ``ClientApiHandlers(admin=services)``: ApiVersions plus the admin APIs, served locally.

``build_server`` assembles a ``wire.WireServer`` from these handlers plus any inter-node handlers a
process adds (BrokerRegistration, BrokerHeartbeat, AlterPartition, MetadataLogFetch); ApiVersions then
advertises exactly what that server serves.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable

from kafka.protocol.api_message import ApiMessage

from reference_impl.protocol.errors import Errors
from reference_impl.server import services as sv
from reference_impl.server.wire import codec
from reference_impl.server.wire.codec import ApiSpec, DecodedRequest
from reference_impl.server.wire.records import validate_produce_records
from reference_impl.server.wire.server import DEFAULT_MAX_REQUEST_BYTES, Handler, WireServer

log = logging.getLogger("kraftcheck.client_apis")

ZERO_UUID = uuid.UUID(int=0)
ADMIN_API_KEYS = frozenset({19, 32, 33, 43, 44, 45, 46})
BROKER_API_KEYS = frozenset({0, 1, 2, 3, 10, 22, 23, 60})
API_VERSIONS = 18


def _uuid(topic_id: str | None) -> uuid.UUID:
    """Topic ids travel as UUIDs; the services layer uses their string form (None = unknown)."""
    if not topic_id:
        return ZERO_UUID
    try:
        return uuid.UUID(topic_id)
    except ValueError:
        return ZERO_UUID


def _spec(api_key: int) -> ApiSpec:
    return codec.ALL_APIS[api_key]


def _response_class(api_key: int) -> type[ApiMessage]:
    return _spec(api_key).response_class


class ClientApiHandlers:
    """The client-facing handlers of one node (see the module docstring for broker vs controller)."""

    def __init__(
        self,
        broker: sv.BrokerServices | None = None,
        admin: sv.AdminServices | None = None,
    ) -> None:
        if broker is None and admin is None:
            raise ValueError("a node needs broker services, admin services, or both")
        self.broker = broker
        self.admin = admin
        # Filled by ``build_server`` with everything the server serves, so ApiVersions tells the truth.
        self.served: dict[int, ApiSpec] = self.own_apis()

    # ----------------------------------------------------------------------------------- registration

    def own_apis(self) -> dict[int, ApiSpec]:
        """The api keys (with version ranges) these handlers serve on this node."""
        keys = {API_VERSIONS}
        if self.broker is not None:
            keys |= BROKER_API_KEYS | ADMIN_API_KEYS
        if self.admin is not None:
            keys |= ADMIN_API_KEYS
        return {k: _spec(k) for k in sorted(keys)}

    def handlers(self) -> dict[int, Handler]:
        """Map api key -> async handler for ``WireServer``."""
        table: dict[int, Handler] = {API_VERSIONS: self.handle_api_versions}
        if self.broker is not None:
            table.update({
                0: self.handle_produce,
                1: self.handle_fetch,
                2: self.handle_list_offsets,
                3: self.handle_metadata,
                10: self.handle_find_coordinator,
                22: self.handle_init_producer_id,
                23: self.handle_offset_for_leader_epoch,
                60: self.handle_describe_cluster,
            })
        for key in ADMIN_API_KEYS:
            table[key] = self.handle_admin
        return table

    # --------------------------------------------------------------------------------- ApiVersions

    def api_versions_body(self, version: int, error: Errors = Errors.NONE) -> ApiMessage:
        """An ApiVersions response listing ``self.served``."""
        cls = _response_class(API_VERSIONS)
        keys = [
            cls.ApiVersion(api_key=s.api_key, min_version=s.min_version, max_version=s.max_version)
            for s in sorted(self.served.values(), key=lambda s: s.api_key)
            if s.api_key < 10000  # kraftcheck-private keys stay out: clients may map keys to an enum
        ]
        return cls(version=version, error_code=int(error), api_keys=keys, throttle_time_ms=0)

    async def handle_api_versions(self, request: DecodedRequest) -> ApiMessage:
        """ApiVersions 0-3: the APIs and version ranges this node serves."""
        return self.api_versions_body(request.api_version)

    def on_unserved(self, request: DecodedRequest) -> ApiMessage | None:
        """ApiVersions above our max gets a v0 body with UNSUPPORTED_VERSION and our ranges (so the client
        retries with a version we serve, as with Kafka); other unserved requests get None here."""
        if request.api_key == API_VERSIONS:
            return self.api_versions_body(0, Errors.UNSUPPORTED_VERSION)
        return None

    # -------------------------------------------------------------------------------------- Metadata

    async def handle_metadata(self, request: DecodedRequest) -> ApiMessage:
        """Metadata 0-12: unfenced brokers, controller id, topics with real leader epochs."""
        body, version = request.body, request.api_version
        if body.topics is None or (version == 0 and not body.topics):
            names: list[str] | None = None  # v0 encodes "all" as an empty list
        else:
            names = [t.name for t in body.topics if t.name is not None]
        allow_auto = bool(body.allow_auto_topic_creation) if version >= 4 else True
        cluster = await self.broker.metadata(names, allow_auto)
        cls = _response_class(3)
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
                topic_id=_uuid(t.topic_id),
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
        cluster = await self.broker.metadata([], False)
        cls = _response_class(60)
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
                        outcome = self.broker.produce(
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
        cls = _response_class(0)
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
        result = await self.broker.fetch(spec)
        return self._fetch_response(request.api_version, result)

    @staticmethod
    def _fetch_response(version: int, result: sv.FetchResult) -> ApiMessage:
        cls = _response_class(1)
        tcls = cls.FetchableTopicResponse
        pcls = tcls.PartitionData
        by_topic: dict[str, list] = {}
        for r in result.partitions:
            extra = {}
            # Tagged fields (v12+): only sent when meaningful, as Kafka does.
            if r.diverging_epoch is not None and version >= 12:
                extra["diverging_epoch"] = pcls.EpochEndOffset(epoch=r.diverging_epoch[0], end_offset=r.diverging_epoch[1])
            if r.current_leader is not None and version >= 12:
                extra["current_leader"] = pcls.LeaderIdAndEpoch(leader_id=r.current_leader[0], leader_epoch=r.current_leader[1])
            by_topic.setdefault(r.topic, []).append(pcls(
                partition_index=r.partition,
                error_code=int(r.error),
                high_watermark=r.high_watermark,
                last_stable_offset=r.last_stable_offset if r.last_stable_offset >= 0 else r.high_watermark,
                log_start_offset=r.log_start_offset,
                aborted_transactions=None,
                preferred_read_replica=r.preferred_read_replica,
                records=r.records,
                **extra,
            ))
        return cls(
            version=version,
            throttle_time_ms=result.throttle_time_ms,
            error_code=int(result.error),
            session_id=0,
            responses=[tcls(topic=t, partitions=ps) for t, ps in by_topic.items()],
        )

    # ----------------------------------------------------------------------- ListOffsets, OffsetForLE

    async def handle_list_offsets(self, request: DecodedRequest) -> ApiMessage:
        """ListOffsets 1-7: earliest / latest / by timestamp (L18 is the services' job)."""
        body = request.body
        parts = [
            sv.ListOffsetsPartitionSpec(t.name, p.partition_index, p.timestamp, p.current_leader_epoch)
            for t in body.topics
            for p in t.partitions
        ]
        results = await self.broker.list_offsets(body.replica_id, body.isolation_level, parts)
        cls = _response_class(2)
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
        results = await self.broker.offset_for_leader_epoch(replica_id, queries)
        cls = _response_class(23)
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
        r = await self.broker.init_producer_id(body.transactional_id, body.transaction_timeout_ms, pid, epoch)
        return _response_class(22)(
            version=request.api_version, throttle_time_ms=0, error_code=int(r.error),
            producer_id=r.producer_id, producer_epoch=r.producer_epoch,
        )

    async def handle_find_coordinator(self, request: DecodedRequest) -> ApiMessage:
        """FindCoordinator 0-4: always COORDINATOR_NOT_AVAILABLE (no groups; consumers use assign())."""
        return self.error_response(request, Errors.COORDINATOR_NOT_AVAILABLE)

    # ----------------------------------------------------------------------------------------- Admin

    async def handle_admin(self, request: DecodedRequest) -> ApiMessage:
        """Admin APIs: served locally with ``AdminServices``, else relayed raw to the controller."""
        key = request.api_key
        if self.admin is None:
            local = getattr(self.broker, "describe_configs", None)
            if key == 32 and local is not None:
                # Kafka brokers answer DescribeConfigs themselves (a BROKER resource names the broker the
                # client must ask); it is not one of the forwarded APIs.
                return await self._describe_configs(request, local)
            return await self._forward(request)
        if key == 19:
            return await self._create_topics(request)
        if key == 32:
            return await self._describe_configs(request, self.admin.describe_configs)
        if key in (33, 44):
            return await self._alter_configs(request)
        if key == 43:
            return await self._elect_leaders(request)
        if key == 45:
            return await self._alter_reassignments(request)
        return await self._list_reassignments(request)

    async def _forward(self, request: DecodedRequest) -> ApiMessage:
        try:
            body = await self.broker.forward_to_controller(request.api_key, request.api_version, request.raw)
        except TimeoutError:
            return self.error_response(request, Errors.REQUEST_TIMED_OUT)
        except (ConnectionError, OSError) as exc:
            log.warning("forwarding api %d to the controller failed: %r", request.api_key, exc)
            return self.error_response(request, Errors.NOT_CONTROLLER)
        # Re-decode so the answer is re-encoded under this connection's correlation id and header.
        return _response_class(request.api_key).decode(body, version=request.api_version)

    async def _create_topics(self, request: DecodedRequest) -> ApiMessage:
        body = request.body
        topics = [
            sv.NewTopic(
                name=t.name,
                num_partitions=t.num_partitions,
                replication_factor=t.replication_factor,
                assignments={a.partition_index: tuple(a.broker_ids) for a in (t.assignments or [])},
                configs={c.name: c.value for c in (t.configs or [])},
            )
            for t in body.topics
        ]
        results = await self.admin.create_topics(topics, body.timeout_ms, bool(body.validate_only))
        cls = _response_class(19)
        rcls = cls.CreatableTopicResult
        return cls(
            version=request.api_version,
            throttle_time_ms=0,
            topics=[
                rcls(
                    name=r.name, topic_id=_uuid(r.topic_id), error_code=int(r.error), error_message=r.error_message,
                    num_partitions=r.num_partitions, replication_factor=r.replication_factor, configs=[],
                )
                for r in results
            ],
        )

    async def _describe_configs(self, request: DecodedRequest, describe) -> ApiMessage:
        body = request.body
        resources = [
            (r.resource_type, r.resource_name, list(r.configuration_keys) if r.configuration_keys is not None else None)
            for r in body.resources
        ]
        results = await describe(resources)
        cls = _response_class(32)
        rcls = cls.DescribeConfigsResult
        ccls = rcls.DescribeConfigsResourceResult
        return cls(
            version=request.api_version,
            throttle_time_ms=0,
            results=[
                rcls(
                    error_code=int(r.error), error_message=r.error_message, resource_type=r.resource_type,
                    resource_name=r.resource_name,
                    configs=[
                        ccls(
                            name=c.name, value=c.value, read_only=c.read_only, config_source=c.source,
                            is_default=c.is_default, is_sensitive=c.is_sensitive, synonyms=[],
                            config_type=0, documentation=None,
                        )
                        for c in r.configs
                    ],
                )
                for r in results
            ],
        )

    async def _alter_configs(self, request: DecodedRequest) -> ApiMessage:
        """AlterConfigs (33: every entry a SET, the resource's dynamic set replaced) and
        IncrementalAlterConfigs (44: per-entry SET/DELETE/APPEND/SUBTRACT); one result per resource."""
        body = request.body
        incremental = request.api_key == 44
        resources = [
            sv.AlterConfigsResource(
                r.resource_type, r.resource_name,
                tuple((c.name, c.config_operation if incremental else 0, c.value) for c in (r.configs or [])),
            )
            for r in body.resources
        ]
        results = await self.admin.alter_configs(resources, incremental, bool(body.validate_only))
        cls = _response_class(request.api_key)
        rcls = cls.AlterConfigsResourceResponse
        return cls(
            version=request.api_version, throttle_time_ms=0,
            responses=[rcls(error_code=int(r.error), error_message=r.error_message, resource_type=r.resource_type,
                            resource_name=r.resource_name) for r in results],
        )

    async def _elect_leaders(self, request: DecodedRequest) -> ApiMessage:
        body = request.body
        partitions = (
            None if body.topic_partitions is None
            else [sv.TopicPartition(t.topic, p) for t in body.topic_partitions for p in t.partitions]
        )
        election_type = body.election_type if request.api_version >= 1 else 0
        results = await self.admin.elect_leaders(election_type, partitions, body.timeout_ms)
        cls = _response_class(43)
        tcls = cls.ReplicaElectionResult
        pcls = tcls.PartitionResult
        by_topic: dict[str, list] = {}
        for r in results:
            by_topic.setdefault(r.topic, []).append(
                pcls(partition_id=r.partition, error_code=int(r.error), error_message=r.error_message)
            )
        return cls(
            version=request.api_version, throttle_time_ms=0, error_code=0,
            replica_election_results=[tcls(topic=t, partition_result=ps) for t, ps in by_topic.items()],
        )

    async def _alter_reassignments(self, request: DecodedRequest) -> ApiMessage:
        body = request.body
        # KIP-860: v0 has no AllowReplicationFactorChange field, which means "allowed".
        allow = bool(body.allow_replication_factor_change) if request.api_version >= 1 else True
        items = [
            sv.Reassignment(t.name, p.partition_index, None if p.replicas is None else tuple(p.replicas))
            for t in body.topics
            for p in t.partitions
        ]
        results = await self.admin.alter_partition_reassignments(items, allow, body.timeout_ms)
        cls = _response_class(45)
        tcls = cls.ReassignableTopicResponse
        pcls = tcls.ReassignablePartitionResponse
        by_topic: dict[str, list] = {}
        for r in results:
            by_topic.setdefault(r.topic, []).append(
                pcls(partition_index=r.partition, error_code=int(r.error), error_message=r.error_message)
            )
        return cls(
            version=request.api_version, throttle_time_ms=0, allow_replication_factor_change=allow,
            error_code=0, error_message=None,
            responses=[tcls(name=t, partitions=ps) for t, ps in by_topic.items()],
        )

    async def _list_reassignments(self, request: DecodedRequest) -> ApiMessage:
        body = request.body
        partitions = (
            None if body.topics is None
            else [sv.TopicPartition(t.name, p) for t in body.topics for p in t.partition_indexes]
        )
        results = await self.admin.list_partition_reassignments(partitions)
        cls = _response_class(46)
        tcls = cls.OngoingTopicReassignment
        pcls = tcls.OngoingPartitionReassignment
        by_topic: dict[str, list] = {}
        for r in results:
            by_topic.setdefault(r.topic, []).append(pcls(
                partition_index=r.partition, replicas=list(r.replicas),
                adding_replicas=list(r.adding), removing_replicas=list(r.removing),
            ))
        return cls(
            version=request.api_version, throttle_time_ms=0, error_code=0, error_message=None,
            topics=[tcls(name=t, partitions=ps) for t, ps in by_topic.items()],
        )

    # ------------------------------------------------------------------------------ error responses

    def error_response(self, request: DecodedRequest, code: int) -> ApiMessage | None:
        """The response Kafka would send for ``request`` failing as a whole with ``code`` (every item
        carries the error); None for APIs without one. Used for unserved versions (UNSUPPORTED_VERSION),
        handler failures (UNKNOWN_SERVER_ERROR) and unreachable controllers (NOT_CONTROLLER)."""
        builder = _ERROR_BUILDERS.get(request.api_key)
        if builder is None or request.body is None:
            return None
        if request.api_key == 0 and request.body.acks == 0:
            return None
        return builder(self, request.body, request.api_version, int(code))


def _items(topics: Iterable, name_attr: str, parts_attr: str, index_attr: str | None = None):
    """Yield ``(topic_name, partition_index)`` from a request's nested topic/partition lists."""
    for t in topics or []:
        for p in getattr(t, parts_attr) or []:
            yield getattr(t, name_attr), (p if index_attr is None else getattr(p, index_attr))


def _group(pairs) -> dict[str, list]:
    out: dict[str, list] = {}
    for topic, item in pairs:
        out.setdefault(topic, []).append(item)
    return out


def _err_produce(_h, body, version, code):
    cls = _response_class(0)
    tcls, pcls = cls.TopicProduceResponse, cls.TopicProduceResponse.PartitionProduceResponse
    groups = _group((t, pcls(index=i, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
                             record_errors=[], error_message=None))
                    for t, i in _items(body.topic_data, "name", "partition_data", "index"))
    return cls(version=version, responses=[tcls(name=t, partition_responses=ps) for t, ps in groups.items()],
               throttle_time_ms=0)


def _err_fetch(_h, body, version, code):
    parts = tuple(
        sv.FetchPartitionResult(topic=t, partition=i, error=code)
        for t, i in _items(body.topics, "topic", "partitions", "partition")
    )
    return ClientApiHandlers._fetch_response(version, sv.FetchResult(parts, error=code))


def _err_list_offsets(_h, body, version, code):
    cls = _response_class(2)
    tcls, pcls = cls.ListOffsetsTopicResponse, cls.ListOffsetsTopicResponse.ListOffsetsPartitionResponse
    groups = _group((t, pcls(partition_index=i, error_code=code, timestamp=-1, offset=-1, leader_epoch=-1))
                    for t, i in _items(body.topics, "name", "partitions", "partition_index"))
    return cls(version=version, throttle_time_ms=0, topics=[tcls(name=t, partitions=ps) for t, ps in groups.items()])


def _err_metadata(_h, body, version, code):
    cls = _response_class(3)
    tcls = cls.MetadataResponseTopic
    topics = [tcls(error_code=code, name=t.name, topic_id=ZERO_UUID, is_internal=False, partitions=[],
                   authorized_operations=None) for t in (body.topics or [])]
    return cls(version=version, throttle_time_ms=0, brokers=[], cluster_id=None, controller_id=-1,
               topics=topics, authorized_operations=None)


def _err_find_coordinator(_h, body, version, code):
    cls = _response_class(10)
    coordinators = [
        cls.Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code, error_message=None)
        for k in (body.coordinator_keys or [])
    ] if version >= 4 else []
    return cls(version=version, throttle_time_ms=0, error_code=code, error_message=None, node_id=-1, host="",
               port=-1, coordinators=coordinators)


def _err_init_producer_id(_h, body, version, code):
    return _response_class(22)(version=version, throttle_time_ms=0, error_code=code, producer_id=-1,
                               producer_epoch=-1)


def _err_offset_for_leader_epoch(_h, body, version, code):
    cls = _response_class(23)
    tcls, pcls = cls.OffsetForLeaderTopicResult, cls.OffsetForLeaderTopicResult.EpochEndOffset
    groups = _group((t, pcls(error_code=code, partition=i, leader_epoch=-1, end_offset=-1))
                    for t, i in _items(body.topics, "topic", "partitions", "partition"))
    return cls(version=version, throttle_time_ms=0, topics=[tcls(topic=t, partitions=ps) for t, ps in groups.items()])


def _err_create_topics(_h, body, version, code):
    cls = _response_class(19)
    return cls(version=version, throttle_time_ms=0, topics=[
        cls.CreatableTopicResult(name=t.name, topic_id=ZERO_UUID, error_code=code, error_message=None,
                                 num_partitions=-1, replication_factor=-1, configs=[])
        for t in body.topics or []
    ])


def _err_describe_configs(_h, body, version, code):
    cls = _response_class(32)
    return cls(version=version, throttle_time_ms=0, results=[
        cls.DescribeConfigsResult(error_code=code, error_message=None, resource_type=r.resource_type,
                                  resource_name=r.resource_name, configs=[])
        for r in body.resources or []
    ])


def _err_alter_configs(api_key):
    def build(_h, body, version, code):
        cls = _response_class(api_key)
        return cls(version=version, throttle_time_ms=0, responses=[
            cls.AlterConfigsResourceResponse(error_code=code, error_message=None, resource_type=r.resource_type,
                                             resource_name=r.resource_name)
            for r in body.resources or []
        ])
    return build


def _err_elect_leaders(_h, body, version, code):
    cls = _response_class(43)
    tcls, pcls = cls.ReplicaElectionResult, cls.ReplicaElectionResult.PartitionResult
    groups = _group((t, pcls(partition_id=p, error_code=code, error_message=None))
                    for t, p in _items(body.topic_partitions, "topic", "partitions"))
    return cls(version=version, throttle_time_ms=0, error_code=code,
               replica_election_results=[tcls(topic=t, partition_result=ps) for t, ps in groups.items()])


def _err_alter_reassignments(_h, body, version, code):
    cls = _response_class(45)
    tcls, pcls = cls.ReassignableTopicResponse, cls.ReassignableTopicResponse.ReassignablePartitionResponse
    groups = _group((t, pcls(partition_index=i, error_code=code, error_message=None))
                    for t, i in _items(body.topics, "name", "partitions", "partition_index"))
    return cls(version=version, throttle_time_ms=0, allow_replication_factor_change=True, error_code=code,
               error_message=None, responses=[tcls(name=t, partitions=ps) for t, ps in groups.items()])


def _err_list_reassignments(_h, body, version, code):
    return _response_class(46)(version=version, throttle_time_ms=0, error_code=code, error_message=None, topics=[])


def _err_describe_cluster(_h, body, version, code):
    return _response_class(60)(version=version, throttle_time_ms=0, error_code=code, error_message=None,
                               endpoint_type=1, cluster_id="", controller_id=-1, brokers=[],
                               authorized_operations=None)


def _err_api_versions(h, body, version, code):
    return h.api_versions_body(version, Errors(code))


_ERROR_BUILDERS = {
    0: _err_produce,
    1: _err_fetch,
    2: _err_list_offsets,
    3: _err_metadata,
    10: _err_find_coordinator,
    18: _err_api_versions,
    19: _err_create_topics,
    22: _err_init_producer_id,
    23: _err_offset_for_leader_epoch,
    32: _err_describe_configs,
    33: _err_alter_configs(33),
    44: _err_alter_configs(44),
    43: _err_elect_leaders,
    45: _err_alter_reassignments,
    46: _err_list_reassignments,
    60: _err_describe_cluster,
}


def build_server(
    host: str,
    port: int,
    *,
    broker: sv.BrokerServices | None = None,
    admin: sv.AdminServices | None = None,
    extra_handlers: dict[int, Handler] | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    name: str = "node",
) -> WireServer:
    """A ``WireServer`` serving the client APIs (broker and/or admin) plus ``extra_handlers``.

    ``extra_handlers`` maps inter-node api keys (``codec.INTER_NODE_APIS``: 56, 62, 63, 10000) to the
    process's own handlers; their version ranges come from ``codec.ALL_APIS``. Call ``await
    server.start()`` to listen.
    """
    handlers = ClientApiHandlers(broker=broker, admin=admin)
    table = handlers.handlers()
    apis = handlers.own_apis()
    for key, handler in (extra_handlers or {}).items():
        if key not in codec.ALL_APIS:
            raise ValueError(f"no schema for api key {key}")
        table[key] = handler
        apis[key] = codec.ALL_APIS[key]
    handlers.served = apis
    return WireServer(
        apis, table, host, port,
        max_request_bytes=max_request_bytes,
        on_unserved=handlers.on_unserved,
        on_error=lambda req, code: handlers.error_response(req, code),
        name=name,
    )
