"""Values that cross the boundary of a partition replica (``replica.PartitionReplica``).

Requests and replies here are what the server turns into Kafka wire messages (Fetch, Produce,
ListOffsets, AlterPartition) and back; actions are what a metadata change asks the server to do
(join or leave a fetcher, delete a log). All are frozen dataclasses of plain values, errors are
``KafkaError`` values (never exceptions).
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_impl.protocol.divergence import EpochEndOffset
from reference_impl.protocol.errors import OK, KafkaError
from reference_impl.protocol.historical_bugs import check_historical_bug
from reference_impl.protocol.log import NO_CONTROL, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, LogBatch
from reference_impl.protocol.records import RECOVERED

ACKS_ALL = -1
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
READ_UNCOMMITTED = 0  # Fetch / ListOffsets isolation_level (KIP-98)
READ_COMMITTED = 1


VARIANTS = ("v3.5", "kip966")
"""The protocol variants (L4): KIP-966 Eligible Leader Replicas off and on. The harness side, which may not
import this package, repeats the list in ``harness.spec.VARIANTS``; a test keeps the two equal."""

REPLICA_LAG_TIME_MAX_MS = 30_000
"""``replica.lag.time.max.ms``: Kafka's default since 2.5 (KIP-537), the default of the servers and of the
core. A run spec sets its own (``harness.spec``: shorter, so that short runs see ISR shrinks)."""


@dataclass(frozen=True)
class ReplicaConfig:
    """Per-partition protocol settings (variant, MinISR, lag window)."""

    variant: str = "v3.5"  # "v3.5" | "kip966" (L4)
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = REPLICA_LAG_TIME_MAX_MS  # L14
    fetch_backoff_ms: int = 1_000  # F2: back off after a fetch error, then wait for metadata
    fetch_max_bytes: int = 1 << 20
    alter_partition_retry_ms: int = 100  # L16: resend an AlterPartition whose outcome is unknown
    trace_log_summaries: bool = True  # log_summary trace events (I4, I16); off only to measure their cost
    historical_bug: str | None = None  # a replaced Kafka design to run instead (historical_bugs); None: off
    # KIP-890 part 1 (transaction.partition.verification.enable): a batch that would open a transaction
    # needs the coordinator's confirmation (ProduceBatch.verification_guard); False is Kafka before 3.6
    transaction_verification: bool = True

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown protocol variant {self.variant!r}")
        check_historical_bug(self.historical_bug)


@dataclass(frozen=True)
class ProduceBatch:
    """A client's batch before the leader assigns its offsets and epoch (L2)."""

    record_count: int
    payload: bytes = b""
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    max_timestamp: int = -1
    attributes: int = 0  # the batch's attribute bits (transactional, control: KIP-98)
    control_type: int = NO_CONTROL  # a marker's type, for a control batch
    # the guard of a KIP-890 verification the coordinator confirmed (ProducerStateManager.start_verification)
    verification_guard: int | None = None


@dataclass(frozen=True)
class AppendResult:
    """The leader's immediate answer to a produce.

    ``ack_id`` is set when an acks=all write waits for the HWM (L5): its final verdict then arrives later as
    a ``CompletedAck`` with that id from ``PartitionReplica.drain_completed_acks()``. Otherwise ``error`` is
    final. ``duplicate`` marks an idempotent retry answered with the original offsets.
    """

    error: KafkaError = OK
    base_offset: int = -1
    last_offset: int = -1
    ack_id: int | None = None
    duplicate: bool = False

    @property
    def pending(self) -> bool:
        """True when the verdict will come later as a ``CompletedAck``."""
        return self.ack_id is not None


@dataclass(frozen=True)
class CompletedAck:
    """The final verdict of a pending acks=all produce (L5): NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND or
    NOT_LEADER_OR_FOLLOWER."""

    ack_id: int
    error: KafkaError
    base_offset: int
    last_offset: int


@dataclass(frozen=True)
class FetchRequest:
    """A follower's fetch for one partition (F1)."""

    replica_id: int
    broker_epoch: int
    leader_id: int
    leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_bytes: int


@dataclass(frozen=True)
class FetchPartitionResult:
    """The answer to a fetch for one partition (follower or consumer), as in Kafka's FetchResponse."""

    error: KafkaError = OK
    leader_epoch: int = -1
    fetch_offset: int = -1  # echoed, so the follower can drop stale replies (F2)
    high_watermark: int = -1
    log_start_offset: int = -1
    last_stable_offset: int = -1
    diverging_epoch: EpochEndOffset | None = None
    batches: tuple[LogBatch, ...] = ()
    # read_committed only: (producer id, first offset) of the aborted transactions in the batches' range
    aborted_transactions: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class ListOffsetsResult:
    """A ListOffsets answer; ``OFFSET_NOT_AVAILABLE`` while the leader's HWM is below its LESO (L18)."""

    error: KafkaError = OK
    offset: int = -1
    timestamp: int = -1
    leader_epoch: int = -1


@dataclass(frozen=True)
class IsrMember:
    """One member of a proposed ISR; ``broker_epoch`` is -1 for members already in the ISR (C14)."""

    broker_id: int
    broker_epoch: int = -1


@dataclass(frozen=True)
class AlterPartitionRequest:
    """The leader's ISR proposal (L12-L15): docs/conformance.md's ``alter_partition`` input + partition."""

    topic_id: str
    partition_id: int
    broker_id: int
    broker_epoch: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[IsrMember, ...]
    leader_recovery_state: str = RECOVERED

    @property
    def isr_ids(self) -> list[int]:
        """The proposed ISR as broker ids."""
        return [m.broker_id for m in self.new_isr]


@dataclass(frozen=True)
class AlterPartitionResponse:
    """The controller's answer to an ``AlterPartitionRequest`` (error, or the committed state)."""

    error: KafkaError = OK
    leader_id: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    isr: tuple[int, ...] = ()


@dataclass(frozen=True)
class StartFetching:
    """T5: add the partition to the fetcher for ``leader_id`` (fetch offset = LEO, see ``build_fetch``)."""

    leader_id: int
    leader_epoch: int


@dataclass(frozen=True)
class StopFetching:
    """T3, T6, T1: remove the partition from whatever fetcher it is in."""


@dataclass(frozen=True)
class DeleteLog:
    """T1: the broker is no longer a replica: delete the partition's log; the replica object is dead."""


Action = StartFetching | StopFetching | DeleteLog
