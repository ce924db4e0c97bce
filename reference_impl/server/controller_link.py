"""The broker's connections to the controller: registration, heartbeats, AlterPartition, metadata pulls,
admin forwarding.

Each concern has its own connection because the controller answers one request at a time per connection
(Kafka's ordering rule): a long-polling metadata pull must not delay a heartbeat past the session timeout,
and a slow admin request must not delay either. Requests use Kafka's API keys and the message classes of
``wire.messages`` (BrokerRegistration 62 v3 with PreviousBrokerEpoch for K4, BrokerHeartbeat 63,
AlterPartition 56 v3 with broker epochs for C14, kraftcheck's MetadataLogFetch 10000). Errors come back as
``Errors`` values; ``ConnectionError``/``TimeoutError`` mean the controller could not be reached.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from reference_impl.protocol.broker import HeartbeatReply
from reference_impl.protocol.errors import Errors, error
from reference_impl.protocol.replica_messages import AlterPartitionRequest, AlterPartitionResponse
from reference_impl.server.wire import messages as m
from reference_impl.server.wire.client import WireClient

REGISTRATION_VERSION = 3
HEARTBEAT_VERSION = 0
ALTER_PARTITION_VERSION = 3
METADATA_FETCH_VERSION = 0


@dataclass(frozen=True)
class MetadataChunk:
    """A MetadataLogFetch answer: whole batches ``(base_offset, [record dicts])`` and the log end."""

    error: Errors
    end_offset: int
    batches: list[tuple[int, list[dict[str, Any]]]]


class ControllerLink:
    """Typed requests to the controller at ``host:port`` over separate connections per concern."""

    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = 10.0) -> None:
        self._control = WireClient(host, port, client_id=client_id + "-control", timeout_s=timeout_s,
                                   connect_timeout_s=2.0)
        self._metadata = WireClient(host, port, client_id=client_id + "-metadata", timeout_s=timeout_s,
                                    connect_timeout_s=2.0)
        self._isr = WireClient(host, port, client_id=client_id + "-isr", timeout_s=timeout_s,
                               connect_timeout_s=2.0)
        self._forward = WireClient(host, port, client_id=client_id + "-forward", timeout_s=60.0,
                                   connect_timeout_s=2.0)

    async def register(self, broker_id: int, cluster_id: str, incarnation_id: str, host: str, port: int,
                       previous_broker_epoch: int) -> tuple[Errors, int]:
        """B1: BrokerRegistration; returns (error, broker epoch)."""
        req = m.BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id=cluster_id, incarnation_id=uuid.UUID(incarnation_id),
            listeners=[m.BrokerRegistrationRequest.Listener(name="PLAINTEXT", host=host, port=port,
                                                            security_protocol=0)],
            features=[], rack=None, is_migrating_zk_broker=False, log_dirs=[],
            previous_broker_epoch=previous_broker_epoch)
        resp = await self._control.send(req, REGISTRATION_VERSION)
        return Errors(resp.error_code), resp.broker_epoch

    async def heartbeat(self, broker_id: int, broker_epoch: int, metadata_offset: int, want_fence: bool,
                        want_shutdown: bool) -> HeartbeatReply:
        """B2 / C5 / C8: one BrokerHeartbeat."""
        req = m.BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=broker_epoch,
                                       current_metadata_offset=metadata_offset, want_fence=want_fence,
                                       want_shut_down=want_shutdown)
        resp = await self._control.send(req, HEARTBEAT_VERSION)
        return HeartbeatReply(Errors(resp.error_code), resp.is_caught_up, resp.is_fenced, resp.should_shut_down)

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionResponse:
        """L12-L16: send one ISR proposal; a top-level error is reported as the partition's error."""
        part = m.AlterPartitionRequest.TopicData.PartitionData
        req = m.AlterPartitionRequest(
            broker_id=request.broker_id, broker_epoch=request.broker_epoch,
            topics=[m.AlterPartitionRequest.TopicData(topic_id=uuid.UUID(request.topic_id), partitions=[
                part(partition_index=request.partition_id, leader_epoch=request.leader_epoch,
                     new_isr_with_epochs=[part.BrokerState(broker_id=x.broker_id, broker_epoch=x.broker_epoch)
                                          for x in request.new_isr],
                     leader_recovery_state=0 if request.leader_recovery_state == "RECOVERED" else 1,
                     partition_epoch=request.partition_epoch)])])
        resp = await self._isr.send(req, ALTER_PARTITION_VERSION)
        if resp.error_code != 0:
            return AlterPartitionResponse(error=error(Errors(resp.error_code)))
        for topic in resp.topics:
            for p in topic.partitions:
                if p.partition_index == request.partition_id:
                    return AlterPartitionResponse(error=error(Errors(p.error_code)), leader_id=p.leader_id,
                                                  leader_epoch=p.leader_epoch,
                                                  partition_epoch=p.partition_epoch, isr=tuple(p.isr))
        return AlterPartitionResponse(error=error(Errors.UNKNOWN_SERVER_ERROR, "partition missing in reply"))

    async def fetch_metadata(self, broker_id: int, broker_epoch: int, offset: int, max_wait_ms: int,
                             max_records: int = 5000) -> MetadataChunk:
        """Pull committed metadata batches from ``offset`` (long-polls up to ``max_wait_ms``)."""
        req = m.MetadataLogFetchRequest(broker_id=broker_id, broker_epoch=broker_epoch, fetch_offset=offset,
                                        max_records=max_records, max_wait_ms=max_wait_ms)
        resp = await self._metadata.send(req, METADATA_FETCH_VERSION, timeout_s=max_wait_ms / 1000 + 10)
        batches = [(r.offset, json.loads(r.json)) for r in resp.records]
        return MetadataChunk(Errors(resp.error_code), resp.high_watermark, batches)

    async def forward(self, api_key: int, api_version: int, request: bytes) -> bytes:
        """Relay an admin request verbatim (``BrokerServices.forward_to_controller``)."""
        return await self._forward.send_raw(api_key, api_version, request)

    async def close(self) -> None:
        """Close every connection."""
        for client in (self._control, self._metadata, self._isr, self._forward):
            await client.close()
