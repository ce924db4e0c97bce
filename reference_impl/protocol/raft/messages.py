"""The KRaft quorum's RPCs (KIP-595, KIP-996) as plain values.

Each request and response carries the fields of Apache Kafka's message of the same name that the quorum
rules read (``clients/src/main/resources/common/message/{Vote,BeginQuorumEpoch,EndQuorumEpoch,Fetch}*``),
for the single metadata partition; the cluster id, the topic/partition wrapping, directory ids and
endpoints are left out (one static voter set, docs/kafka-differences.md). The servers translate them to
and from Kafka's wire messages; the simulator passes them as they are.

Every response names the responder's epoch and the leader it knows (``leader_id`` -1 for none): that is
how a node learns of a newer epoch from any answer (Q13).
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_impl.protocol.divergence import EpochEndOffset
from reference_impl.protocol.errors import Errors

NO_LEADER = -1


@dataclass(frozen=True)
class RaftBatch:
    """One batch of the replicated log: records appended together, in the epoch of the leader that wrote
    them. ``records`` are opaque to the quorum (the controller's metadata records)."""

    base_offset: int
    epoch: int
    records: tuple

    @property
    def next_offset(self) -> int:
        """The offset after the batch (its exclusive end)."""
        return self.base_offset + len(self.records)


@dataclass(frozen=True)
class VoteRequest:
    """Vote (52): a candidate asks for a vote in ``candidate_epoch`` (already bumped), or, with ``pre_vote``
    (KIP-996), a prospective asks whether it could win, in its current epoch. ``last_epoch`` and
    ``end_offset`` describe its log (Q2's up-to-date comparison)."""

    candidate_id: int
    candidate_epoch: int
    last_epoch: int
    end_offset: int
    pre_vote: bool = False


@dataclass(frozen=True)
class VoteResponse:
    """Vote (52) answer."""

    error: Errors
    leader_id: int
    leader_epoch: int
    vote_granted: bool


@dataclass(frozen=True)
class BeginQuorumEpochRequest:
    """BeginQuorumEpoch (53): the new leader announces itself to the voters (Q5, Q6)."""

    leader_id: int
    leader_epoch: int


@dataclass(frozen=True)
class BeginQuorumEpochResponse:
    """BeginQuorumEpoch (53) answer."""

    error: Errors
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True)
class EndQuorumEpochRequest:
    """EndQuorumEpoch (54): a resigning leader tells the voters, listing successors by end offset (Q12)."""

    leader_id: int
    leader_epoch: int
    preferred_successors: tuple[int, ...] = ()


@dataclass(frozen=True)
class EndQuorumEpochResponse:
    """EndQuorumEpoch (54) answer."""

    error: Errors
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True)
class FetchRequest:
    """Fetch (1) on the controller listener: a voter replicates the leader's log from its own end (Q9)."""

    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_records: int = 5000


@dataclass(frozen=True)
class FetchResponse:
    """Fetch (1) answer: an error, or the leader's HWM with either records from the fetch offset or the
    diverging epoch the follower must truncate to (Q7)."""

    error: Errors
    leader_id: int
    leader_epoch: int
    high_watermark: int = -1
    diverging_epoch: EpochEndOffset | None = None
    batches: tuple[RaftBatch, ...] = ()


RaftRequest = VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | FetchRequest
RaftResponse = VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse | FetchResponse


@dataclass(frozen=True)
class Outbound:
    """A request the node wants sent: to voter ``dst``; the driver hands the answer (or its failure) back
    with the same ``correlation_id``."""

    dst: int
    correlation_id: int
    request: RaftRequest
