"""The broker's connections to the controller quorum: registration, heartbeats, AlterPartition, metadata
pulls, admin forwarding.

Requests go to the controller ``broker_session.ControllerDiscovery`` names (the active one, as the
quorum's answers tell, Q15): a voter that does not answer sends the next request to the next voter, a
NOT_CONTROLLER answer to the leader it names (a metadata pull's answer always names it). With a single
controller (``controller.quorum.bootstrap.servers``) there is nothing to choose.

Each concern has its own connection per controller because a controller answers one request at a time per
connection (Kafka's ordering rule): a long-polling metadata pull must not delay a heartbeat past the
session timeout, and a slow admin request must not delay either. Requests use Kafka's API keys and the
message classes of ``wire.messages`` (BrokerRegistration 62 v3 with PreviousBrokerEpoch for K4,
BrokerHeartbeat 63, AlterPartition 56 v3 with broker epochs for C14, kraftcheck's MetadataLogFetch 10000
v1). Errors come back as ``Errors`` values; ``ConnectionError``/``TimeoutError`` mean the controller could
not be reached.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any

from reference_impl.protocol.broker import HeartbeatReply
from reference_impl.protocol.broker_session import ControllerDiscovery
from reference_impl.protocol.errors import Errors, error
from reference_impl.protocol.replica_messages import AlterPartitionRequest, AlterPartitionResponse
from reference_impl.server.config import Endpoint
from reference_impl.server.wire import codec
from reference_impl.server.wire import messages as m
from reference_impl.server.wire.client import WireClient

REGISTRATION_VERSION = 3
HEARTBEAT_VERSION = 0
ALTER_PARTITION_VERSION = 3
METADATA_FETCH_VERSION = 1
FORWARD_ATTEMPTS = 6
FORWARD_RETRY_S = 0.2
UNREACHABLE = (ConnectionError, TimeoutError, OSError)


@dataclass(frozen=True)
class MetadataChunk:
    """A MetadataLogFetch answer: whole batches ``(base_offset, [record dicts])``, the log end, and the quorum
    leader the answering controller knows (-1: none)."""

    error: Errors
    end_offset: int
    batches: list[tuple[int, list[dict[str, Any]]]]
    leader_id: int = -1


class ControllerLink:
    """Typed requests to the active controller, over separate connections per concern and controller."""

    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = 10.0,
                 voters: dict[int, Endpoint] | None = None) -> None:
        """One controller at ``host:port``, or the quorum's ``voters`` (id -> endpoint) when given."""
        self.voters = dict(voters) if voters else {0: Endpoint(host, port)}
        self.discovery = ControllerDiscovery(sorted(self.voters))
        self._client_id = client_id
        self._timeout_s = timeout_s
        self._clients: dict[tuple[str, int], WireClient] = {}

    @classmethod
    def for_voters(cls, voters: dict[int, Endpoint], client_id: str, timeout_s: float = 10.0) -> ControllerLink:
        """A link to the controller quorum ``voters``."""
        first = voters[min(voters)]
        return cls(first.host, first.port, client_id, timeout_s=timeout_s, voters=voters)

    def _client(self, concern: str, voter: int) -> WireClient:
        key = (concern, voter)
        client = self._clients.get(key)
        if client is None:
            ep = self.voters[voter]
            client = self._clients[key] = WireClient(
                ep.host, ep.port, client_id=f"{self._client_id}-{concern}",
                timeout_s=60.0 if concern == "forward" else self._timeout_s, connect_timeout_s=2.0)
        return client

    async def _send(self, concern: str, request: Any, version: int, timeout_s: float | None = None) -> tuple[int, Any]:
        """Send to the current target; an unreachable one moves the discovery on and the error is raised."""
        target = self.discovery.target()
        try:
            return target, await self._client(concern, target).send(request, version, timeout_s=timeout_s)
        except UNREACHABLE:
            self.discovery.failed(target)
            raise

    def _refused(self, target: int, code: int, leader: int | None = None) -> None:
        if code == Errors.NOT_CONTROLLER:
            self.discovery.not_controller(target, leader)

    async def register(self, broker_id: int, cluster_id: str, incarnation_id: str, host: str, port: int,
                       previous_broker_epoch: int) -> tuple[Errors, int]:
        """B1: BrokerRegistration; returns (error, broker epoch)."""
        req = m.BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id=cluster_id, incarnation_id=uuid.UUID(incarnation_id),
            listeners=[m.BrokerRegistrationRequest.Listener(name="PLAINTEXT", host=host, port=port,
                                                            security_protocol=0)],
            features=[], rack=None, is_migrating_zk_broker=False, log_dirs=[],
            previous_broker_epoch=previous_broker_epoch)
        target, resp = await self._send("control", req, REGISTRATION_VERSION)
        self._refused(target, resp.error_code)
        return Errors(resp.error_code), resp.broker_epoch

    async def heartbeat(self, broker_id: int, broker_epoch: int, metadata_offset: int, want_fence: bool,
                        want_shutdown: bool) -> HeartbeatReply:
        """B2 / C5 / C8: one BrokerHeartbeat."""
        req = m.BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=broker_epoch,
                                       current_metadata_offset=metadata_offset, want_fence=want_fence,
                                       want_shut_down=want_shutdown)
        target, resp = await self._send("control", req, HEARTBEAT_VERSION)
        self._refused(target, resp.error_code)
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
        target, resp = await self._send("isr", req, ALTER_PARTITION_VERSION)
        if resp.error_code != 0:
            self._refused(target, resp.error_code)
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
        """Pull committed metadata batches from ``offset`` (long-polls up to ``max_wait_ms``); the answer's
        leader moves the discovery to the active controller (Q15)."""
        req = m.MetadataLogFetchRequest(broker_id=broker_id, broker_epoch=broker_epoch, fetch_offset=offset,
                                        max_records=max_records, max_wait_ms=max_wait_ms)
        target, resp = await self._send("metadata", req, METADATA_FETCH_VERSION, timeout_s=max_wait_ms / 1000 + 10)
        leader = getattr(resp, "leader_id", -1)
        if resp.error_code == Errors.NOT_CONTROLLER:
            self._refused(target, resp.error_code, leader if leader >= 0 else None)
        elif resp.error_code == Errors.NONE:
            self.discovery.learned(target)
        batches = [(r.offset, json.loads(r.json)) for r in resp.records]
        return MetadataChunk(Errors(resp.error_code), resp.high_watermark, batches, leader)

    async def forward(self, api_key: int, api_version: int, request: bytes) -> bytes:
        """Relay an admin request verbatim to the active controller (``BrokerServices.forward_to_controller``).
        An answer of NOT_CONTROLLER (the voter asked is not the active one, or lost its role before the
        change committed) is asked again of the next controller, a few times (Q15)."""
        body = b""
        for attempt in range(FORWARD_ATTEMPTS):
            target = self.discovery.target()
            try:
                body = await self._client("forward", target).send_raw(api_key, api_version, request)
            except UNREACHABLE:
                self.discovery.failed(target)
                if attempt == FORWARD_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(FORWARD_RETRY_S)
                continue
            if not _says_not_controller(api_key, api_version, body):
                return body
            self.discovery.not_controller(target, None)
            await asyncio.sleep(FORWARD_RETRY_S)
        return body

    async def close(self) -> None:
        """Close every connection."""
        for client in self._clients.values():
            await client.close()


def _says_not_controller(api_key: int, api_version: int, body: bytes) -> bool:
    """Whether a forwarded request's answer carries NOT_CONTROLLER anywhere (top level or in an item)."""
    spec = codec.ALL_APIS.get(api_key)
    if spec is None:
        return False
    try:
        decoded = spec.response_class.decode(body, version=api_version).to_dict()
    except Exception:  # not ours to judge: the client decodes it and sees what it sees
        return False
    return _has_code(decoded, int(Errors.NOT_CONTROLLER))


def _has_code(value: Any, code: int) -> bool:
    if isinstance(value, dict):
        return value.get("error_code") == code or any(_has_code(v, code) for v in value.values())
    if isinstance(value, list):
        return any(_has_code(v, code) for v in value)
    return False
