"""The admin APIs: CreateTopics, DescribeConfigs, AlterConfigs / IncrementalAlterConfigs, ElectLeaders,
AlterPartitionReassignments and ListPartitionReassignments.

On the controller they are served with ``services.AdminServices``. A broker has none: it relays the raw
request to the controller with ``forward_to_controller`` (KRaft brokers forward the same way), so
kafka-python's KafkaAdminClient works against whatever node Metadata names as ``controller_id``; a
controller it cannot reach becomes NOT_CONTROLLER, one that does not answer in time REQUEST_TIMED_OUT, in
every item of the request (``error_responses``). DescribeConfigs is the exception: Kafka brokers answer it
themselves (a BROKER resource names the broker the client must ask), so a broker whose services offer
``describe_configs`` does.
"""

from __future__ import annotations

import logging

from kafka.protocol.api_message import ApiMessage

from reference_impl.protocol.errors import Errors
from reference_impl.server import services as sv
from reference_impl.server.apis.common import response_class, topic_uuid
from reference_impl.server.apis.error_responses import error_response
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.codec import DecodedRequest
from reference_impl.server.wire.server import Handler

log = logging.getLogger("kraftcheck.client_apis")

ADMIN_API_KEYS = frozenset({
    ApiKey.CREATE_TOPICS, ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.ELECT_LEADERS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS,
})


class AdminApis:
    """The admin handlers of one node: served with ``admin``, else relayed through ``broker`` (module
    docstring). Stateless over the services."""

    def __init__(self, admin: sv.AdminServices | None, broker: sv.BrokerServices | None) -> None:
        if admin is None and broker is None:
            raise ValueError("admin APIs need admin services or a broker to forward through")
        self.admin = admin
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        """Map api key -> async handler, for every key of ``ADMIN_API_KEYS``."""
        return dict.fromkeys(ADMIN_API_KEYS, self.handle_admin)

    async def handle_admin(self, request: DecodedRequest) -> ApiMessage | None:
        """Admin APIs: served locally with ``AdminServices``, else relayed raw to the controller."""
        key = request.api_key
        if self.admin is None:
            local = getattr(self.broker, "describe_configs", None)
            if key == ApiKey.DESCRIBE_CONFIGS and local is not None:
                # Kafka brokers answer DescribeConfigs themselves (a BROKER resource names the broker the
                # client must ask); it is not one of the forwarded APIs.
                return await self._describe_configs(request, local)
            return await self._forward(request)
        if key == ApiKey.CREATE_TOPICS:
            return await self._create_topics(request)
        if key == ApiKey.DESCRIBE_CONFIGS:
            return await self._describe_configs(request, self.admin.describe_configs)
        if key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
            return await self._alter_configs(request)
        if key == ApiKey.ELECT_LEADERS:
            return await self._elect_leaders(request)
        if key == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
            return await self._alter_reassignments(request)
        return await self._list_reassignments(request)

    async def _forward(self, request: DecodedRequest) -> ApiMessage | None:
        try:
            body = await self.broker.forward_to_controller(request.api_key, request.api_version, request.raw)
        except TimeoutError:
            return error_response(request, Errors.REQUEST_TIMED_OUT)
        except (ConnectionError, OSError) as exc:
            log.warning("forwarding api %d to the controller failed: %r", request.api_key, exc)
            return error_response(request, Errors.NOT_CONTROLLER)
        # Re-decode so the answer is re-encoded under this connection's correlation id and header.
        return response_class(request.api_key).decode(body, version=request.api_version)

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
        cls = response_class(ApiKey.CREATE_TOPICS)
        rcls = cls.CreatableTopicResult
        return cls(
            version=request.api_version,
            throttle_time_ms=0,
            topics=[
                rcls(
                    name=r.name, topic_id=topic_uuid(r.topic_id), error_code=int(r.error),
                    error_message=r.error_message, num_partitions=r.num_partitions,
                    replication_factor=r.replication_factor, configs=[],
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
        cls = response_class(ApiKey.DESCRIBE_CONFIGS)
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
        """AlterConfigs (every entry a SET, the resource's dynamic set replaced) and
        IncrementalAlterConfigs (per-entry SET/DELETE/APPEND/SUBTRACT); one result per resource."""
        body = request.body
        incremental = request.api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS
        resources = [
            sv.AlterConfigsResource(
                r.resource_type, r.resource_name,
                tuple((c.name, c.config_operation if incremental else 0, c.value) for c in (r.configs or [])),
            )
            for r in body.resources
        ]
        results = await self.admin.alter_configs(resources, incremental, bool(body.validate_only))
        cls = response_class(request.api_key)
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
        cls = response_class(ApiKey.ELECT_LEADERS)
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
        cls = response_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
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
        cls = response_class(ApiKey.LIST_PARTITION_REASSIGNMENTS)
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
