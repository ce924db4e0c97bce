"""The contract between the Kafka wire layer and the processes that hold state.

The wire layer (``reference_impl.server.wire`` + the handlers of ``reference_impl.server.apis``) decodes
requests, validates what can be validated without state (framing, schemas, record-batch CRCs, version
ranges), calls ONE of the async methods below, and encodes the dataclass it gets back into the right
response version. It never touches logs, metadata or timers itself. The node processes implement these protocols:

- ``BrokerServices`` in the broker process (partition logs, replica state, metadata image);
- ``AdminServices`` in the controller process (the admin APIs are served there; a broker does not
  implement them but relays the raw request with ``BrokerServices.forward_to_controller``, as KRaft
  brokers do, so kafka-python's KafkaAdminClient can talk to whichever node Metadata names as
  ``controller_id``).

Conventions for every result dataclass:
- ``error`` is a Kafka error code (``reference_impl.protocol.errors.Errors``), ``Errors.NONE`` for success;
  errors are values, never exceptions. An exception escaping a services method is a broken invariant: the
  wire layer logs it and answers UNKNOWN_SERVER_ERROR for that request (the connection survives).
- Offsets are 0-based, LEO and HWM exclusive (docs/protocol-rules.md conventions). ``-1`` means "unknown /
  none" for offsets, epochs and node ids, as on the wire.
- Record data is always raw bytes in Kafka's v2 record-batch format (one or more batches concatenated),
  exactly as it appears on the wire and on disk; ``wire.records`` has the helpers to parse, verify and
  rewrite batch headers.

Waiting belongs to the services object: ``produce`` with acks=all returns only when the ack verdict is
known (L5) or ``timeout_ms`` elapsed (REQUEST_TIMED_OUT); ``fetch`` long-polls up to ``max_wait_ms`` until
``min_bytes`` are available (or a partition has an error / a diverging epoch). The wire layer keeps
per-connection response order itself, so these methods may be slow without blocking other connections.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from reference_impl.protocol.errors import Errors

# ---------------------------------------------------------------------------------------------------------
# Metadata / DescribeCluster
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerEndpoint:
    """A broker as clients see it: its id and the advertised listener (``advertised.listeners``)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionMetadata:
    """One partition in a Metadata answer, straight from the broker's materialized metadata image.

    ``leader`` is -1 when there is no leader (T6); ``leader_epoch`` is the real leader epoch (clients use
    it to fence stale leaders in Fetch / ListOffsets / OffsetForLeaderEpoch). ``offline_replicas`` lists
    replicas whose broker is fenced or unregistered.
    """

    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: Errors = Errors.NONE


@dataclass(frozen=True)
class TopicMetadata:
    """One topic in a Metadata answer; ``error`` is UNKNOWN_TOPIC_OR_PARTITION for an unknown name.

    ``topic_id`` is the topic's UUID as a string (``str(uuid.UUID)`` form) or None when unknown.
    """

    name: str
    partitions: tuple[PartitionMetadata, ...] = ()
    topic_id: str | None = None
    is_internal: bool = False
    error: Errors = Errors.NONE


@dataclass(frozen=True)
class ClusterMetadata:
    """A Metadata / DescribeCluster answer.

    ``brokers`` must contain only registered, UNFENCED brokers (readiness contract: the harness waits until
    all N brokers appear). ``controller_id`` is the node clients should send admin requests to: a broker id
    (typically the answering broker itself, which forwards admin requests to the controller as KRaft
    brokers do), never the controller's own node id, which clients cannot reach through Metadata.
    ``topics`` holds the topics asked for (all topics when the request asked for all).
    """

    cluster_id: str
    controller_id: int
    brokers: tuple[BrokerEndpoint, ...]
    topics: tuple[TopicMetadata, ...] = ()


# ---------------------------------------------------------------------------------------------------------
# Produce
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProduceResult:
    """The outcome of appending one partition's record batches.

    ``base_offset`` is the offset given to the first record (for an idempotent duplicate, the offset the
    original append got, with ``error`` NONE, as Kafka answers duplicates). ``log_start_offset`` is the
    partition's log start. Errors: NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS (L1, nothing appended),
    NOT_ENOUGH_REPLICAS_AFTER_APPEND (L5), REQUEST_TIMED_OUT, OUT_OF_ORDER_SEQUENCE_NUMBER,
    INVALID_PRODUCER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR...
    """

    error: Errors = Errors.NONE
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None


# ---------------------------------------------------------------------------------------------------------
# Fetch
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FetchPartitionSpec:
    """One partition of a Fetch request (field names as in Kafka's FetchRequest v4-v12).

    ``current_leader_epoch`` (-1 = not checked) drives L8; ``last_fetched_epoch`` (-1 = none) drives the
    divergence check L9 for follower fetches.
    """

    topic: str
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1


@dataclass(frozen=True)
class FetchSpec:
    """A whole Fetch request as the services object sees it.

    ``replica_id`` >= 0 means a follower fetch from that broker (serve up to the LEO, apply L8-L10 and
    update follower state); -1 means a consumer (serve only up to the HWM). ``replica_epoch`` is the
    follower's broker epoch when the request carried one (-1 otherwise: Kafka's Fetch v4-12 has no such
    field; kraftcheck followers send it in the ``ReplicaState`` tagged field, see ``wire.messages``).
    The call must wait up to ``max_wait_ms`` until at least ``min_bytes`` of records are available
    across partitions, or any partition has an error or a diverging epoch.
    """

    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    partitions: tuple[FetchPartitionSpec, ...]
    replica_epoch: int = -1
    rack_id: str = ""


@dataclass(frozen=True)
class FetchPartitionResult:
    """One partition of a Fetch answer.

    ``records`` is raw v2 record batches starting at (or before, batch-aligned) the fetch offset, at most
    about ``partition_max_bytes`` (at least one whole batch even if bigger, as Kafka does).
    ``diverging_epoch`` is ``(epoch, end_offset)`` when L9 found divergence (then ``records`` is empty).
    ``current_leader`` is ``(leader_id, leader_epoch)``, filled on NOT_LEADER_OR_FOLLOWER /
    FENCED_LEADER_EPOCH so the client can skip a metadata round trip.
    """

    topic: str
    partition: int
    error: Errors = Errors.NONE
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    diverging_epoch: tuple[int, int] | None = None
    current_leader: tuple[int, int] | None = None
    preferred_read_replica: int = -1
    # read_committed: (producer id, first offset) of the aborted transactions in ``records`` (KIP-98)
    aborted_transactions: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True)
class FetchResult:
    """The whole Fetch answer: per-partition results in request order (plus a top-level error)."""

    partitions: tuple[FetchPartitionResult, ...]
    error: Errors = Errors.NONE
    throttle_time_ms: int = 0


# ---------------------------------------------------------------------------------------------------------
# ListOffsets / OffsetForLeaderEpoch / InitProducerId
# ---------------------------------------------------------------------------------------------------------

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


@dataclass(frozen=True)
class ListOffsetsPartitionSpec:
    """One partition of a ListOffsets request: ``timestamp`` is -1 latest, -2 earliest, -3 max timestamp,
    or a time in ms (the earliest offset whose record timestamp is >= it)."""

    topic: str
    partition: int
    timestamp: int
    current_leader_epoch: int = -1


@dataclass(frozen=True)
class ListOffsetsResult:
    """One partition of a ListOffsets answer.

    For consumers (replica_id -1) "latest" is the HWM (read_uncommitted) and L18 applies: until the leader's
    HWM reaches its LESO, answer OFFSET_NOT_AVAILABLE. ``leader_epoch`` is the epoch of the record at
    ``offset`` (-1 when none).
    """

    topic: str
    partition: int
    error: Errors = Errors.NONE
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


@dataclass(frozen=True)
class EpochQuery:
    """One partition of an OffsetForLeaderEpoch request: end offset of ``leader_epoch`` (L11) as known by a
    leader whose epoch must equal ``current_leader_epoch`` (-1 = not checked; else L8's errors)."""

    topic: str
    partition: int
    leader_epoch: int
    current_leader_epoch: int = -1


@dataclass(frozen=True)
class EpochEndOffset:
    """One partition of an OffsetForLeaderEpoch answer: ``(leader_epoch, end_offset)`` as L11 computes."""

    topic: str
    partition: int
    error: Errors = Errors.NONE
    leader_epoch: int = -1
    end_offset: int = -1


@dataclass(frozen=True)
class ProducerIdResult:
    """An InitProducerId answer: a fresh producer id (epoch 0), or the bumped epoch when the request named
    an existing ``producer_id``/``producer_epoch`` (KIP-360)."""

    error: Errors = Errors.NONE
    producer_id: int = -1
    producer_epoch: int = -1


# ---------------------------------------------------------------------------------------------------------
# Admin (served by the controller; brokers forward)
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewTopic:
    """A CreateTopics entry: ``num_partitions`` / ``replication_factor`` are -1 for the configured default;
    ``assignments`` maps partition index to replica list when given explicitly; ``configs`` holds topic
    configs such as ``min.insync.replicas``."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: dict[int, tuple[int, ...]] = field(default_factory=dict)
    configs: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class CreateTopicResult:
    """A CreateTopics answer entry (TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG...)."""

    name: str
    error: Errors = Errors.NONE
    error_message: str | None = None
    topic_id: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1


RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4


@dataclass(frozen=True)
class ConfigEntry:
    """One config value; ``source`` uses Kafka's ConfigSource numbers (1 topic, 4 static broker, 5 default)."""

    name: str
    value: str | None
    read_only: bool = False
    is_default: bool = False
    source: int = 5
    is_sensitive: bool = False


@dataclass(frozen=True)
class ConfigResourceResult:
    """A DescribeConfigs answer entry for one resource (``resource_type`` 2 = topic, 4 = broker)."""

    resource_type: int
    resource_name: str
    error: Errors = Errors.NONE
    error_message: str | None = None
    configs: tuple[ConfigEntry, ...] = ()


@dataclass(frozen=True)
class AlterConfigsResource:
    """One resource of an AlterConfigs (33) / IncrementalAlterConfigs (44) request. ``configs`` holds
    ``(name, operation, value)``; operation is Kafka's AlterConfigOp (0 SET, 1 DELETE, 2 APPEND,
    3 SUBTRACT); AlterConfigs entries are all SET (the whole dynamic set of the resource is replaced)."""

    resource_type: int
    resource_name: str
    configs: tuple[tuple[str, int, str | None], ...] = ()


@dataclass(frozen=True)
class AlterConfigsResult:
    """The answer for one resource of an AlterConfigs / IncrementalAlterConfigs request."""

    resource_type: int
    resource_name: str
    error: Errors = Errors.NONE
    error_message: str | None = None


@dataclass(frozen=True)
class TopicPartition:
    """A (topic, partition) pair."""

    topic: str
    partition: int


@dataclass(frozen=True)
class ElectionResult:
    """An ElectLeaders answer entry (ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
    ELIGIBLE_LEADERS_NOT_AVAILABLE...)."""

    topic: str
    partition: int
    error: Errors = Errors.NONE
    error_message: str | None = None


@dataclass(frozen=True)
class Reassignment:
    """An AlterPartitionReassignments entry: ``replicas`` is the target, or None to cancel (C21)."""

    topic: str
    partition: int
    replicas: tuple[int, ...] | None


@dataclass(frozen=True)
class ReassignmentResult:
    """An AlterPartitionReassignments answer entry (INVALID_REPLICATION_FACTOR for a refused RF change
    under KIP-860, NO_REASSIGNMENT_IN_PROGRESS for a cancel with nothing to cancel, C16 errors...)."""

    topic: str
    partition: int
    error: Errors = Errors.NONE
    error_message: str | None = None


@dataclass(frozen=True)
class OngoingReassignment:
    """A ListPartitionReassignments answer entry: the full replica set while it runs, and its adding /
    removing sets."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


# ---------------------------------------------------------------------------------------------------------
# The protocols
# ---------------------------------------------------------------------------------------------------------


@runtime_checkable
class BrokerServices(Protocol):
    """What a broker process offers the client-facing wire handlers (implemented in ``server.broker``)."""

    async def metadata(self, topics: list[str] | None, allow_auto_topic_creation: bool) -> ClusterMetadata:
        """Answer from the materialized metadata image: ``topics`` None means all topics.

        Unknown topics come back with UNKNOWN_TOPIC_OR_PARTITION (no auto-creation unless the broker
        implements it through the controller).
        """

    async def produce(
        self,
        topic: str,
        partition: int,
        records: bytes,
        acks: int,
        timeout_ms: int,
        transactional_id: str | None = None,
    ) -> ProduceResult:
        """Append ``records`` (v2 batches, CRC already verified by the wire layer) as leader (L1, L2).

        acks 0/1 return after the local append (L7); acks=-1 ("all") returns when L5 decides, or
        REQUEST_TIMED_OUT after ``timeout_ms``. Idempotent producers: batches carry producer id / epoch /
        base sequence; a duplicate of a recent batch returns the original base offset with NONE, a gap
        returns OUT_OF_ORDER_SEQUENCE_NUMBER. For acks=0 the wire layer still awaits this call (so order
        is kept) but sends no response.
        """

    async def fetch(self, spec: FetchSpec) -> FetchResult:
        """Serve a consumer (replica_id -1: up to the HWM) or follower (replica_id >= 0: L8-L10, up to the
        LEO, with diverging epochs) fetch, long-polling up to ``spec.max_wait_ms``."""

    async def list_offsets(
        self, replica_id: int, isolation_level: int, partitions: list[ListOffsetsPartitionSpec]
    ) -> list[ListOffsetsResult]:
        """Answer ListOffsets per partition in request order (L18 for the latest offset)."""

    async def offset_for_leader_epoch(self, replica_id: int, queries: list[EpochQuery]) -> list[EpochEndOffset]:
        """Answer OffsetForLeaderEpoch per partition in request order (L11 as leader, L8 fencing)."""

    async def init_producer_id(
        self,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> ProducerIdResult:
        """Allocate a producer id for an idempotent producer (transactions are not supported: a non-null
        ``transactional_id`` may be refused with a Kafka error such as TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        or UNSUPPORTED_VERSION)."""

    # Optional: ``async def describe_configs(resources) -> list[ConfigResourceResult]`` (the signature of
    # ``AdminServices.describe_configs``). A broker that has it answers DescribeConfigs itself, as Kafka
    # brokers do; without it DescribeConfigs is forwarded like the other admin APIs.

    async def forward_to_controller(self, api_key: int, api_version: int, request: bytes) -> bytes:
        """Relay an admin request to the active controller and return its response.

        ``request`` is the complete request as the client sent it (request header + body, without the
        4-byte size prefix). ``wire.client.WireClient.send_raw`` does the work: it replaces the correlation
        id with its own, sends, and returns the response BODY (the controller's response header stripped),
        which the wire layer wraps in a response header carrying the client's correlation id. Raise
        ``ConnectionError``/``TimeoutError`` when the controller cannot be reached: the wire layer then
        answers the admin API's per-item error NOT_CONTROLLER / REQUEST_TIMED_OUT.
        """


@runtime_checkable
class AdminServices(Protocol):
    """The admin APIs, served where the cluster metadata is decided (the controller process).

    ``client_apis.ClientApiHandlers(admin=...)`` (its ``apis.admin.AdminApis``) handles CreateTopics, DescribeConfigs, AlterConfigs,
    IncrementalAlterConfigs, ElectLeaders,
    AlterPartitionReassignments and ListPartitionReassignments locally with this object; without one,
    they are forwarded through ``BrokerServices.forward_to_controller``. Each method completes once the
    change is committed to the metadata log (C1), or returns the validation error without change.
    """

    async def create_topics(
        self, topics: list[NewTopic], timeout_ms: int, validate_only: bool
    ) -> list[CreateTopicResult]:
        """Create topics (placement, default RF/partitions from config); results in request order."""

    async def describe_configs(
        self, resources: list[tuple[int, str, list[str] | None]]
    ) -> list[ConfigResourceResult]:
        """Describe ``(resource_type, resource_name, config_names or None for all)`` resources."""

    async def alter_configs(
        self, resources: list[AlterConfigsResource], incremental: bool, validate_only: bool
    ) -> list[AlterConfigsResult]:
        """Change dynamic configs (committed as ConfigRecords); ``incremental`` False replaces the resource's
        whole dynamic set (AlterConfigs), True applies the listed operations (IncrementalAlterConfigs);
        ``validate_only`` checks without committing. Results in request order."""

    async def elect_leaders(
        self, election_type: int, partitions: list[TopicPartition] | None, timeout_ms: int
    ) -> list[ElectionResult]:
        """Run preferred (0) or unclean (1) elections (C10, C12); None means all partitions."""

    async def alter_partition_reassignments(
        self, reassignments: list[Reassignment], allow_replication_factor_change: bool, timeout_ms: int
    ) -> list[ReassignmentResult]:
        """Start (C16, C18) or cancel (C21) reassignments; with ``allow_replication_factor_change`` False a
        target whose size differs from the current RF is refused with INVALID_REPLICATION_FACTOR (KIP-860).
        Request v0 has no such field: it means True, as in Kafka."""

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None
    ) -> list[OngoingReassignment]:
        """List ongoing reassignments (only partitions with non-empty adding or removing)."""
