"""Request/response codec on top of kafka-python's schema classes (no hand-written message codecs).

A request frame payload is ``RequestHeader`` (v1, or v2 with tagged fields when the API version is
flexible) followed by the body; a response is ``ResponseHeader`` (v0, or v1 when flexible; ApiVersions
always v0 so a client can read it before it knows our versions) followed by the body. ``ApiRegistry``
maps an api key to its request/response classes and the version range this node serves; decoding and
encoding go through kafka-python's compiled struct codecs.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import (
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)

from reference_impl.server.wire import messages
from reference_impl.server.wire.api_keys import ApiKey


class MalformedRequest(ValueError):
    """The bytes are not a valid request: the connection that sent them is closed (never the broker)."""


@dataclass(frozen=True)
class ApiSpec:
    """One API as served here: classes from kafka-python (or ``wire.messages``) and a version range."""

    api_key: int
    request_class: type[ApiMessage]
    response_class: type[ApiMessage]
    min_version: int
    max_version: int

    def supports(self, version: int) -> bool:
        """True when this node serves ``version`` of the API."""
        return self.min_version <= version <= self.max_version

    def flexible(self, version: int) -> bool:
        """True when ``version`` uses the flexible (compact + tagged fields) encoding."""
        return self.request_class.flexible_version_q(version)


# Version ranges the issue asks for (kafka-python, librdkafka and aiokafka all negotiate down to them).
CLIENT_APIS: tuple[ApiSpec, ...] = (
    ApiSpec(ApiKey.PRODUCE, ProduceRequest, ProduceResponse, 3, 9),
    ApiSpec(ApiKey.FETCH, messages.FetchRequest, FetchResponse, 4, 12),
    ApiSpec(ApiKey.LIST_OFFSETS, ListOffsetsRequest, ListOffsetsResponse, 1, 7),
    ApiSpec(ApiKey.METADATA, MetadataRequest, MetadataResponse, 0, 12),
    ApiSpec(ApiKey.FIND_COORDINATOR, FindCoordinatorRequest, FindCoordinatorResponse, 0, 4),
    ApiSpec(ApiKey.API_VERSIONS, ApiVersionsRequest, ApiVersionsResponse, 0, 3),
    ApiSpec(ApiKey.CREATE_TOPICS, CreateTopicsRequest, CreateTopicsResponse, 2, 7),
    ApiSpec(ApiKey.INIT_PRODUCER_ID, InitProducerIdRequest, InitProducerIdResponse, 0, 4),
    ApiSpec(ApiKey.OFFSET_FOR_LEADER_EPOCH, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, 2, 4),
    ApiSpec(ApiKey.DESCRIBE_CONFIGS, DescribeConfigsRequest, DescribeConfigsResponse, 1, 4),
    ApiSpec(ApiKey.ALTER_CONFIGS, AlterConfigsRequest, AlterConfigsResponse, 0, 2),
    ApiSpec(ApiKey.INCREMENTAL_ALTER_CONFIGS, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, 0, 1),
    ApiSpec(ApiKey.ELECT_LEADERS, ElectLeadersRequest, ElectLeadersResponse, 0, 2),
    ApiSpec(ApiKey.ALTER_PARTITION_REASSIGNMENTS, AlterPartitionReassignmentsRequest,
            AlterPartitionReassignmentsResponse, 0, 1),
    ApiSpec(ApiKey.LIST_PARTITION_REASSIGNMENTS, ListPartitionReassignmentsRequest,
            ListPartitionReassignmentsResponse, 0, 0),
    ApiSpec(ApiKey.DESCRIBE_CLUSTER, DescribeClusterRequest, DescribeClusterResponse, 0, 1),
    # the group coordinator (the classic protocol)
    ApiSpec(ApiKey.OFFSET_COMMIT, OffsetCommitRequest, OffsetCommitResponse, 2, 8),
    ApiSpec(ApiKey.OFFSET_FETCH, OffsetFetchRequest, OffsetFetchResponse, 1, 7),
    ApiSpec(ApiKey.JOIN_GROUP, JoinGroupRequest, JoinGroupResponse, 2, 9),
    ApiSpec(ApiKey.HEARTBEAT, HeartbeatRequest, HeartbeatResponse, 0, 4),
    ApiSpec(ApiKey.LEAVE_GROUP, LeaveGroupRequest, LeaveGroupResponse, 0, 5),
    ApiSpec(ApiKey.SYNC_GROUP, SyncGroupRequest, SyncGroupResponse, 0, 5),
    ApiSpec(ApiKey.DESCRIBE_GROUPS, DescribeGroupsRequest, DescribeGroupsResponse, 0, 5),
    ApiSpec(ApiKey.LIST_GROUPS, ListGroupsRequest, ListGroupsResponse, 0, 4),
    # a transactional producer's offsets go to the group's coordinator (KIP-98; v3 adds KIP-447's member)
    ApiSpec(ApiKey.TXN_OFFSET_COMMIT, TxnOffsetCommitRequest, TxnOffsetCommitResponse, 0, 3),
)

INTER_NODE_APIS: tuple[ApiSpec, ...] = (
    ApiSpec(ApiKey.ALTER_PARTITION, messages.AlterPartitionRequest, messages.AlterPartitionResponse, 0, 3),
    ApiSpec(ApiKey.BROKER_REGISTRATION, messages.BrokerRegistrationRequest, messages.BrokerRegistrationResponse,
            0, 3),
    ApiSpec(ApiKey.BROKER_HEARTBEAT, messages.BrokerHeartbeatRequest, messages.BrokerHeartbeatResponse, 0, 0),
    ApiSpec(ApiKey.METADATA_LOG_FETCH, messages.MetadataLogFetchRequest, messages.MetadataLogFetchResponse, 0, 1),
    # KIP-966's unclean recovery (K7): the active controller asks brokers for their log ends
    ApiSpec(ApiKey.GET_REPLICA_LOG_INFO, messages.GetReplicaLogInfoRequest, messages.GetReplicaLogInfoResponse,
            0, 0),
    # the controller quorum (KIP-595, KIP-996); its Fetch is the client Fetch above, on the controller listener
    ApiSpec(ApiKey.VOTE, messages.VoteRequest, messages.VoteResponse, 0, 2),
    ApiSpec(ApiKey.BEGIN_QUORUM_EPOCH, messages.BeginQuorumEpochRequest, messages.BeginQuorumEpochResponse, 0, 0),
    ApiSpec(ApiKey.END_QUORUM_EPOCH, messages.EndQuorumEpochRequest, messages.EndQuorumEpochResponse, 0, 0),
    ApiSpec(ApiKey.DESCRIBE_QUORUM, DescribeQuorumRequest, DescribeQuorumResponse, 0, 1),
)

# Transactions (KIP-98), served by a broker's transaction coordinator (``server.apis.txn``, added to a broker's
# server as extra handlers): AddPartitionsToTxn from clients (0-3) and from partition leaders verifying a
# transaction (v4, KIP-890 part 1), AddOffsetsToTxn (the group's offsets partition joins the transaction),
# EndTxn from clients (v4+ is KIP-890 part 2's, not implemented),
# WriteTxnMarkers from a coordinator to the partition leaders.
TXN_APIS: tuple[ApiSpec, ...] = (
    ApiSpec(ApiKey.ADD_PARTITIONS_TO_TXN, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, 0, 4),
    ApiSpec(ApiKey.ADD_OFFSETS_TO_TXN, AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, 0, 3),
    ApiSpec(ApiKey.END_TXN, EndTxnRequest, EndTxnResponse, 0, 3),
    ApiSpec(ApiKey.WRITE_TXN_MARKERS, WriteTxnMarkersRequest, WriteTxnMarkersResponse, 0, 1),
)

ALL_APIS: dict[int, ApiSpec] = {s.api_key: s for s in CLIENT_APIS + INTER_NODE_APIS + TXN_APIS}

API_VERSIONS_KEY = ApiKey.API_VERSIONS


@dataclass(frozen=True)
class DecodedRequest:
    """A request taken off the wire: header fields, the decoded body (None when the version is not
    served) and the raw payload (kept for forwarding admin requests to the controller)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: ApiMessage | None
    raw: bytes


def peek_header(payload: bytes) -> tuple[int, int, int]:
    """Return ``(api_key, api_version, correlation_id)``: the fixed 8 bytes every request starts with,
    readable even for an API this node does not know."""
    if len(payload) < 8:
        raise MalformedRequest(f"request of {len(payload)} bytes is shorter than a request header")
    return struct.unpack_from(">hhi", payload, 0)


def decode_request(payload: bytes, apis: dict[int, ApiSpec]) -> DecodedRequest:
    """Decode one request payload (frame without its size prefix).

    Unknown api keys and unserved versions come back with ``body=None`` (the caller answers
    UNSUPPORTED_VERSION or closes); bytes that do not parse raise ``MalformedRequest``.
    """
    api_key, api_version, correlation_id = peek_header(payload)
    spec = apis.get(api_key)
    if spec is None or not spec.supports(api_version):
        return DecodedRequest(api_key, api_version, correlation_id, None, None, bytes(payload))
    return _decode_with(spec, payload, api_version, correlation_id)


def decode_unserved(payload: bytes, spec: ApiSpec) -> DecodedRequest | None:
    """Decode a request for a version this node does not serve but kafka-python's schema knows, so an
    error response can be encoded at the version the client asked for; None when the schema cannot."""
    api_key, api_version, correlation_id = peek_header(payload)
    if not 0 <= api_version <= spec.request_class.max_version:
        return None
    return _decode_with(spec, payload, api_version, correlation_id)


def _decode_with(spec: ApiSpec, payload: bytes, api_version: int, correlation_id: int) -> DecodedRequest:
    """Decode header + body of ``payload`` with ``spec``'s request class at ``api_version``."""
    api_key = spec.api_key
    buf = io.BytesIO(payload)
    try:
        header = RequestHeader.decode(buf, flexible=spec.flexible(api_version))
        body = spec.request_class.decode(memoryview(payload)[buf.tell():], version=api_version)
    except MalformedRequest:
        raise
    except Exception as exc:  # kafka-python raises struct.error/ValueError/IndexError/... on bad bytes
        raise MalformedRequest(f"cannot decode api {api_key} v{api_version}: {exc!r}") from exc
    check_nulls(body, spec.request_class._struct, api_version, spec.request_class.__name__)
    return DecodedRequest(api_key, api_version, correlation_id, header.client_id, body, bytes(payload))


def check_nulls(obj, struct_field, version: int, path: str) -> None:
    """Raise ``MalformedRequest`` when a field the schema says is not nullable decoded as null.

    kafka-python decodes a -1 length as None whatever the schema says; Kafka rejects such a request as
    malformed, and so do we, so handlers can rely on the schema (a list is a list, a name is a string).
    """
    for fld in struct_field.fields.values():
        if not fld.for_version_q(version) or fld.tagged_field_q(version):
            continue  # absent in this version, or tagged (optional by construction)
        value = getattr(obj, fld.name)
        if value is None and getattr(fld, "_type_str", None) == "uuid":
            continue  # kafka-python decodes the all-zero UUID (Kafka's "no id") as None
        if value is None:
            if not fld.nullable_for_version_q(version):
                raise MalformedRequest(f"{path}.{fld.name} is null but not nullable in v{version}")
            continue
        if fld.is_struct():
            check_nulls(value, fld, version, f"{path}.{fld.name}")
        elif fld.is_struct_array():
            for item in value:
                check_nulls(item, fld, version, f"{path}.{fld.name}[]")
        elif fld.is_array() and getattr(fld.array_of, "_type_str", None) != "uuid" and None in value:
            # (a zero UUID element, e.g. in BrokerRegistration's LogDirs, decodes as None too)
            raise MalformedRequest(f"{path}.{fld.name} holds a null element")


def encode_response(response: ApiMessage, api_version: int, correlation_id: int) -> bytes:
    """Encode ``response`` as a size-prefixed frame with the response header for ``api_version``
    (ApiVersionsResponse's class keeps its header at v0 whatever the body version)."""
    # Set the version before attaching the header: kafka-python's version setter assumes a request header.
    if response.API_KEY == API_VERSIONS_KEY and response.error_code:
        # A failed ApiVersions answer is always a v0 body: clients parse it as v0 whatever they asked for,
        # because they may not know which versions we speak yet.
        api_version = 0
    # (A decoded message, e.g. a relayed controller answer, has no header slot set at all.)
    response._header = None
    response.API_VERSION = api_version
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def encode_bare_error(api_key: int, api_version: int, correlation_id: int, error_code: int) -> bytes:
    """A size-prefixed frame of a response header and one int16 error code, for a request whose response
    schema we do not have (an unknown api key, or a version beyond kafka-python's schema).

    No real body can be encoded without a schema, so the client cannot parse one anyway; what matters is
    that the correlation id lets it fail that one request (and see UNSUPPORTED_VERSION) instead of hanging
    or having the connection reset under its other in-flight requests. The header is v0 for an unknown
    api key, as Kafka-compatible servers answer; for a known key it follows that API's flexibility at the
    requested version (versions above the first flexible one stay flexible in Kafka's schemas), so a
    client that knows the version reads the header it expects.
    """
    spec = ALL_APIS.get(api_key)
    flexible = spec is not None and api_key != API_VERSIONS_KEY and spec.flexible(api_version)
    header = struct.pack(">i", correlation_id) + (b"\x00" if flexible else b"")  # v1: empty tagged fields
    body = header + struct.pack(">h", error_code)
    return struct.pack(">i", len(body)) + body


def response_header_length(api_key: int, api_version: int, payload: bytes) -> int:
    """Length of the response header at the start of ``payload`` (4 bytes, plus the tagged-field section
    when the response header is v1). Used to strip a controller's header when relaying a response."""
    spec = ALL_APIS.get(api_key)
    if spec is None:
        raise MalformedRequest(f"unknown api key {api_key}")
    if api_key == API_VERSIONS_KEY or not spec.flexible(api_version):
        return 4
    # v1 header: correlation id + tagged fields (an unsigned varint count, then tag/size/value triples).
    pos = 4
    count, pos = _read_uvarint(payload, pos)
    for _ in range(count):
        _tag, pos = _read_uvarint(payload, pos)
        size, pos = _read_uvarint(payload, pos)
        pos += size
    if pos > len(payload):
        raise MalformedRequest("truncated response header")
    return pos


def _read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode an unsigned varint at ``pos``; return ``(value, next_pos)``."""
    shift = value = 0
    while True:
        if pos >= len(data) or shift > 28:
            raise MalformedRequest("bad varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
