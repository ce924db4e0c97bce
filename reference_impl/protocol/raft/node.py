"""One voter of the KRaft quorum (Kafka's ``KafkaRaftClient`` + ``QuorumState``), sans-IO.

The driver (the controller process, the simulator, a test) owns sockets and clocks. It hands the node
every request it receives (``handle_request``, which returns the answer), every answer to a request the
node sent (``handle_response``) or its failure (``request_failed``), and calls ``poll(now)`` when the time
``next_wakeup_ms`` says has come; in between it sends what ``drain_outbox`` yields and writes what
``drain_events`` yields to the trace. ``append`` writes records as leader. The node's log and election
store are injected: it appends, truncates and flushes the log, and writes its election state, itself.

States (Kafka's names): **unattached** (no leader known in the epoch; may have voted, ``voted_for``),
**prospective** (KIP-996 pre-vote in the current epoch), **candidate**, **leader**, **follower**,
**resigned** (a leader that gave up its epoch). The rules, Q1-Q13 of docs/protocol-rules.md:

- Q1 the election state (epoch, vote, leader) is written durably before the node acts on it;
- Q2 a vote is granted to a candidate whose log is at least as up to date (last epoch, then end offset),
  at most once per epoch, and never while a leader of the epoch is known; an older epoch is
  FENCED_LEADER_EPOCH, a newer one moves the voter to it first. The vote stays part of the voter's state
  for the rest of the epoch, as a follower too. Candidates trace every answer they get (``quorum_vote``),
  so a second grant shows even when the voter traced neither;
- Q3 a candidate bumps the epoch and votes for itself; a majority makes it leader; a majority of rejections
  or the election timeout sends it into a random exponential backoff before it tries again;
- Q4 with ``pre_vote`` a voter whose leader went silent first asks, without bumping its epoch, whether it
  could win; voters that still hear from a leader refuse (a voter cut off alone cannot disrupt a healthy
  quorum by inflating epochs);
- Q5 a new leader's epoch starts at its LEO (``epoch_start_offset``); when the log is not empty (and the
  quorum has more than one voter) it appends an epoch-start record (Kafka's LeaderChange control record)
  so a record of its own epoch can commit the earlier ones; it sends BeginQuorumEpoch to every voter until
  acknowledged (by answer or by a fetch);
- Q6 BeginQuorumEpoch / EndQuorumEpoch from an older epoch are FENCED_LEADER_EPOCH; otherwise the voter
  follows the sender in that epoch;
- Q7 the leader validates a fetch: an older request epoch is FENCED_LEADER_EPOCH, a newer one
  UNKNOWN_LEADER_EPOCH, a non-leader answers NOT_LEADER_OR_FOLLOWER; a diverging log gets the diverging
  epoch (L9/L11 over the quorum log) without any state update; otherwise the fetch offset is the voter's
  end offset and the answer carries records from it and the HWM;
- Q8 the HWM (``leader_state``): majority end offset, above the epoch start, never lower;
- Q9 a follower keeps one fetch outstanding, from its LEO with its last epoch; on a diverging epoch it
  truncates (F3's cut) but never below its HWM; records are appended and flushed before the next fetch
  (the fetch offset acknowledges them); its HWM becomes min(leader's HWM, LEO) and never decreases;
- Q10 a follower that hears nothing from its leader for ``fetch_timeout_ms`` (and an unattached voter after
  its election timeout) starts an election;
- Q11 check-quorum: a leader not fetched from by a majority within 1.5 fetch timeouts resigns;
- Q12 a resigned leader sends EndQuorumEpoch naming its successors most up to date first; a follower of it
  shortens its fetch timeout by its position in that list;
- Q13 any answer from a newer epoch moves the node to that epoch (following the leader it names, else
  unattached); an answer from an older epoch is ignored.

A broken rule the node can see itself (two leaders named for one epoch, a truncation below the HWM) raises
``InvariantViolation``: a core self-check, as in Kafka (which throws there too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.divergence import diverging_epoch, truncation_offset
from reference_impl.protocol.errors import Errors, InvariantViolation
from reference_impl.protocol.raft.election_state import ElectionState, ElectionStateStore
from reference_impl.protocol.raft.leader_state import LeaderState
from reference_impl.protocol.raft.log import RaftLog
from reference_impl.protocol.raft.messages import (
    NO_LEADER,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    Outbound,
    RaftBatch,
    RaftRequest,
    RaftResponse,
    VoteRequest,
    VoteResponse,
)

if TYPE_CHECKING:  # the caller owns randomness; the core only takes a generator
    import random

UNATTACHED = "unattached"
PROSPECTIVE = "prospective"
CANDIDATE = "candidate"
LEADER = "leader"
FOLLOWER = "follower"
RESIGNED = "resigned"


@dataclass(frozen=True)
class RaftConfig:
    """The quorum's timers (Kafka's ``controller.quorum.*`` settings) and the pre-vote switch."""

    election_timeout_ms: int = 1000       # randomised in [T, 2T)
    fetch_timeout_ms: int = 2000          # Q10
    election_backoff_max_ms: int = 1000   # Q3
    retry_backoff_ms: int = 20            # after a failed request to a node
    request_timeout_ms: int = 2000        # an unanswered request counts as failed after this
    fetch_max_records: int = 5000
    fetch_max_wait_ms: int = 500          # how long a leader may hold a fetch with nothing new (well inside Q10)
    pre_vote: bool = True                 # Q4 (KIP-996)

    @property
    def check_quorum_timeout_ms(self) -> int:
        """Q11: Kafka's 1.5 x fetch timeout."""
        return self.fetch_timeout_ms * 3 // 2


EpochStartRecord = Callable[[int, int, tuple[int, ...], tuple[int, ...]], Any]


class RaftNode:
    """One voter (see the module docstring)."""

    def __init__(self, node_id: int, voters: Sequence[int], log: RaftLog, store: ElectionStateStore,
                 config: RaftConfig, rng: random.Random, now_ms: int,
                 epoch_start_record: EpochStartRecord) -> None:
        if node_id not in voters:
            raise ValueError(f"node {node_id} is not one of the voters {sorted(voters)}")
        self.id = node_id
        self.voters = tuple(sorted(voters))
        self.log = log
        self.store = store
        self.config = config
        self.rng = rng
        self._epoch_start_record = epoch_start_record
        state = store.read() or ElectionState()
        self.epoch = state.epoch
        self.voted_for = state.voted_for
        self.leader_id = state.leader_id
        self.role = UNATTACHED
        self.high_watermark = 0  # not persisted: a restarted voter learns it again (Kafka)
        self.leader: LeaderState | None = None
        self.version = 0  # bumped whenever the log, the HWM or the role changes (wakes held fetches)
        self._outbox: list[Outbound] = []
        self._events: list[dict[str, Any]] = []
        self._correlation = 0
        self._inflight: dict[int, tuple[int, str, int]] = {}  # dst -> (correlation id, kind, sent at)
        self._retry_at: dict[int, int] = {}                   # dst -> no request before this time
        self._granted: set[int] = set()
        self._rejected: set[int] = set()
        self._retries = 0
        self._deadline = 0          # election / fetch / check-quorum deadline of the current state
        self._backoff_until: int | None = None
        self._resign_acks: set[int] = set()
        self._successors: tuple[int, ...] = ()
        self._last_leader_contact: int | None = None
        self._hwm_news: dict[int, bool] = {}  # voter -> its last fetch answer carries a HWM it had not had
        self._trace("start", now_ms, log_end=log.end_offset, flushed=log.flushed_offset)
        if self.leader_id == self.id:
            # Kafka's QuorumState.initialize: a leader that restarts gives its epoch up (it cannot know what
            # it appended and never flushed, nor lead again in the same epoch).
            self._to_resigned(now_ms, ())
        elif self.leader_id is not None:
            self._to_follower(self.epoch, self.leader_id, now_ms)
        else:
            self._to_unattached_same_epoch(now_ms)
        if self.voters == (self.id,) and self.role != LEADER:
            self._start_election(now_ms)  # a quorum of one elects itself at once

    # =========================================================================== queries
    @property
    def majority(self) -> int:
        """Voters needed for a quorum."""
        return len(self.voters) // 2 + 1

    @property
    def is_leader(self) -> bool:
        """Leader of the current epoch."""
        return self.role == LEADER

    @property
    def epoch_start_offset(self) -> int | None:
        """Q5: where the current leader epoch starts (leader only)."""
        return self.leader.epoch_start_offset if self.leader is not None else None

    @property
    def leader_ready(self) -> bool:
        """The leader has committed every record of earlier epochs (its HWM passed its epoch start, or the
        log was empty when it was elected): only then may the state machine act on the log as leader."""
        return self.leader is not None and self.high_watermark > self.leader.commit_point

    def drain_outbox(self) -> list[Outbound]:
        """The requests to send now."""
        out, self._outbox = self._outbox, []
        return out

    def drain_events(self) -> list[dict[str, Any]]:
        """Trace events since the last call."""
        out, self._events = self._events, []
        return out

    def next_wakeup_ms(self) -> int:
        """The next time ``poll`` has something to do (a deadline, a backoff, a retry, a request timeout)."""
        times = [self._deadline if self._backoff_until is None else self._backoff_until]
        times += [sent + self.config.request_timeout_ms for _, _, sent in self._inflight.values()]
        times += list(self._retry_at.values())
        return min(times)

    # =========================================================================== timers
    def poll(self, now_ms: int) -> None:
        """Act on every timer due at ``now_ms`` and send what the state owes (Q3, Q4, Q5, Q10-Q12)."""
        for dst, (corr, _, sent) in list(self._inflight.items()):
            if now_ms - sent >= self.config.request_timeout_ms:
                self.request_failed(dst, corr, now_ms)
        self._retry_at = {d: t for d, t in self._retry_at.items() if t > now_ms}
        role = self.role
        if role == LEADER:
            assert self.leader is not None
            if len(self.voters) == 1:
                self._deadline = now_ms + self.config.check_quorum_timeout_ms  # nobody to check
            elif now_ms >= self.leader.check_quorum_deadline:
                self._to_resigned(now_ms, tuple(self.leader.successors()))  # Q11
                return
            else:
                self._deadline = self.leader.check_quorum_deadline
            for v in self.voters:
                if v != self.id and v not in self.leader.acknowledged:
                    self._send(v, BeginQuorumEpochRequest(self.id, self.epoch), now_ms)
        elif role in (CANDIDATE, PROSPECTIVE):
            if self._backoff_until is not None:
                if now_ms >= self._backoff_until:
                    self._start_election(now_ms, retry=True)
            elif now_ms >= self._deadline:
                self._back_off(now_ms)
            else:
                self._request_votes(now_ms)
            self._maybe_fetch(now_ms)
        elif role == FOLLOWER:
            if now_ms >= self._deadline:
                self._start_election(now_ms)  # Q10
            else:
                self._maybe_fetch(now_ms)
        elif role == UNATTACHED:
            if now_ms >= self._deadline:
                self._start_election(now_ms)  # Q10
        elif role == RESIGNED:
            if now_ms >= self._deadline:
                self._to_candidate(now_ms)
            else:
                for v in self.voters:
                    if v != self.id and v not in self._resign_acks:
                        self._send(v, EndQuorumEpochRequest(self.id, self.epoch, self._successors), now_ms)

    def _random_election_timeout(self) -> int:
        t = self.config.election_timeout_ms
        return t + self.rng.randrange(max(1, t))

    def _back_off(self, now_ms: int) -> None:
        """Q3: Kafka's binary exponential election backoff, capped."""
        self._retries += 1
        base = max(1, self.config.retry_backoff_ms)
        delay = min(base * self.rng.randrange(2 << min(20, self._retries - 1)), self.config.election_backoff_max_ms)
        self._backoff_until = now_ms + delay

    # =========================================================================== transitions
    def _persist(self) -> None:
        """Q1: the election state goes to the store before anything acts on it."""
        self.store.write(ElectionState(self.epoch, self.voted_for, self.leader_id))

    def _enter(self, role: str, now_ms: int, reason: str) -> None:
        if self.role == LEADER and role != LEADER:
            self.leader = None
        self.role = role
        self._inflight.clear()
        self._retry_at.clear()
        self._backoff_until = None
        self.version += 1
        self._trace(reason, now_ms)

    def _to_unattached_same_epoch(self, now_ms: int) -> None:
        self._enter(UNATTACHED, now_ms, "unattached")
        self._deadline = now_ms + self._random_election_timeout()

    def _to_unattached(self, epoch: int, now_ms: int) -> None:
        """Q2/Q13: a newer epoch without a known leader."""
        if epoch <= self.epoch:
            raise InvariantViolation(f"voter {self.id}: unattached at epoch {epoch}, already at {self.epoch}")
        self.epoch, self.voted_for, self.leader_id = epoch, None, None
        self._persist()
        self._to_unattached_same_epoch(now_ms)

    def _to_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        """Q6/Q13: follow ``leader_id`` in ``epoch``."""
        if leader_id == self.id:
            raise InvariantViolation(f"voter {self.id}: told it leads epoch {epoch} without being elected")
        if epoch < self.epoch or (epoch == self.epoch and self.leader_id not in (None, leader_id)):
            raise InvariantViolation(f"voter {self.id}: leader {leader_id} of epoch {epoch}, but it knows "
                                     f"leader {self.leader_id} of epoch {self.epoch}")
        if epoch > self.epoch:
            self.voted_for = None
        self.epoch, self.leader_id = epoch, leader_id
        self._persist()
        self._enter(FOLLOWER, now_ms, "follower")
        self._last_leader_contact = now_ms
        self._deadline = now_ms + self.config.fetch_timeout_ms
        self._maybe_fetch(now_ms)

    def _start_election(self, now_ms: int, retry: bool = False) -> None:
        """Q3/Q4/Q10: a pre-vote round first when configured (and more than one voter), else a candidacy."""
        if not retry:
            self._retries = 0
        if self.config.pre_vote and len(self.voters) > 1:
            # KIP-996: a candidate that lost its round asks again without bumping the epoch
            self._enter(PROSPECTIVE, now_ms, "prospective")
        else:
            self._to_candidate(now_ms)
            return
        self._granted, self._rejected = {self.id}, set()
        self._deadline = now_ms + self._random_election_timeout()
        self._request_votes(now_ms)

    def _to_candidate(self, now_ms: int) -> None:
        """Q3: bump the epoch, vote for itself (durably), ask the others."""
        retries = self._retries
        self.epoch, self.voted_for, self.leader_id = self.epoch + 1, self.id, None
        self._persist()
        self._enter(CANDIDATE, now_ms, "candidate")
        self._retries = retries
        self._granted, self._rejected = {self.id}, set()
        self._deadline = now_ms + self._random_election_timeout()
        if not self._maybe_win(now_ms):
            self._request_votes(now_ms)

    def _maybe_win(self, now_ms: int) -> bool:
        if len(self._granted) < self.majority:
            return False
        if self.role == PROSPECTIVE:
            self._to_candidate(now_ms)
            return True
        self._to_leader(now_ms)
        return True

    def _to_leader(self, now_ms: int) -> None:
        """Q5: lead the epoch; write the epoch-start record when the log is not empty."""
        self.leader_id = self.id
        self._persist()
        start = self.log.end_offset
        granting = tuple(sorted(self._granted))
        # Q5: a record of the new epoch commits the earlier ones; not needed when there are none, nor in a
        # quorum of one (its flushed log is a majority by itself)
        writes_record = start > 0 and len(self.voters) > 1
        self._enter(LEADER, now_ms, "leader")
        self.leader = LeaderState(self.id, self.voters, self.epoch, start, self.high_watermark, now_ms,
                                  self.config.check_quorum_timeout_ms, writes_record)
        self._deadline = self.leader.check_quorum_deadline
        if writes_record:
            self._append(RaftBatch(start, self.epoch, (self._epoch_start_record(
                self.id, self.epoch, self.voters, granting),)), now_ms)
        else:
            self._after_leader_progress(self.leader.update_local(self.log.flushed_offset), now_ms)
        for v in self.voters:
            if v != self.id:
                self._send(v, BeginQuorumEpochRequest(self.id, self.epoch), now_ms)

    def _to_resigned(self, now_ms: int, successors: tuple[int, ...]) -> None:
        """Q11/Q12: give the epoch up; tell the voters; stand for the next epoch after an election timeout."""
        self._enter(RESIGNED, now_ms, "resigned")
        self._successors = successors
        self._resign_acks = set()
        self._deadline = now_ms + self._random_election_timeout()
        for v in self.voters:
            if v != self.id:
                self._send(v, EndQuorumEpochRequest(self.id, self.epoch, successors), now_ms)

    def resign(self, now_ms: int) -> None:
        """Graceful: a leader gives up its epoch (a controlled stop)."""
        if self.role == LEADER:
            assert self.leader is not None
            self._to_resigned(now_ms, tuple(self.leader.successors()))

    def _maybe_transition(self, leader_id: int | None, epoch: int, now_ms: int) -> None:
        """Q13: move to a newer epoch, or follow the leader just learned for the current one."""
        if epoch > self.epoch:
            if leader_id is not None:
                self._to_follower(epoch, leader_id, now_ms)
            else:
                self._to_unattached(epoch, now_ms)
        elif epoch == self.epoch and leader_id is not None and leader_id != self.id:
            if self.leader_id is None or (self.leader_id == leader_id and self.role != FOLLOWER):
                self._to_follower(epoch, leader_id, now_ms)
            elif self.leader_id != leader_id:
                raise InvariantViolation(f"voter {self.id}: leader {leader_id} of epoch {epoch}, but it knows "
                                         f"leader {self.leader_id}")
        elif epoch == self.epoch and leader_id == self.id and self.role != LEADER:
            if self.role != RESIGNED:
                raise InvariantViolation(f"voter {self.id}: named leader of epoch {epoch} it never won")

    # =========================================================================== requests in
    def handle_request(self, src: int, request: RaftRequest, now_ms: int) -> RaftResponse:
        """Answer a request from voter ``src``."""
        if isinstance(request, FetchRequest):
            return self._handle_fetch(src, request, now_ms)
        if isinstance(request, VoteRequest):
            return self._handle_vote(request, now_ms)
        if isinstance(request, BeginQuorumEpochRequest):
            return self._handle_begin_epoch(request, now_ms)
        if isinstance(request, EndQuorumEpochRequest):
            return self._handle_end_epoch(request, now_ms)
        raise ValueError(f"unknown quorum request {request!r}")

    def _leader_or_none(self) -> int:
        return NO_LEADER if self.leader_id is None else self.leader_id

    def _vote_answer(self, error: Errors, granted: bool) -> VoteResponse:
        return VoteResponse(error, self._leader_or_none(), self.epoch, granted)

    def _handle_vote(self, req: VoteRequest, now_ms: int) -> VoteResponse:
        """Q2 (standard vote) and Q4 (pre-vote)."""
        illegal = req.last_epoch > req.candidate_epoch if req.pre_vote else req.last_epoch >= req.candidate_epoch
        if req.candidate_id not in self.voters or req.end_offset < 0 or req.last_epoch < 0 or illegal:
            return self._vote_answer(Errors.INVALID_REQUEST, False)
        if req.candidate_epoch < self.epoch:
            return self._vote_answer(Errors.FENCED_LEADER_EPOCH, False)
        deadline = self._deadline
        if req.candidate_epoch > self.epoch:
            self._to_unattached(req.candidate_epoch, now_ms)
        up_to_date = (req.last_epoch, req.end_offset) >= (self.log.last_epoch, self.log.end_offset)
        granted = self._can_grant(req.candidate_id, up_to_date, req.pre_vote, now_ms)
        if not granted:
            # Raft's rule (Kafka restarts the timer here): a refused candidate does not postpone this voter's
            # own election, or one voter with a stale log could keep every up-to-date one from standing
            self._deadline = min(self._deadline, deadline)
        if granted and not req.pre_vote and self.voted_for is None:
            self.voted_for = req.candidate_id
            self._persist()  # Q1: durable before the answer leaves
            self._deadline = now_ms + self._random_election_timeout()
            self._trace("voted", now_ms)
        return self._vote_answer(Errors.NONE, granted)

    def _can_grant(self, candidate: int, up_to_date: bool, pre_vote: bool, now_ms: int) -> bool:
        role = self.role
        if role in (LEADER, RESIGNED):
            return False
        if role == FOLLOWER:
            # Q4: a voter that still hears from its leader does not help anyone replace it.
            heard = self._last_leader_contact is not None and now_ms - self._last_leader_contact < \
                self.config.fetch_timeout_ms
            return pre_vote and up_to_date and not heard
        if pre_vote:
            return up_to_date
        if self.voted_for is not None:
            return self.voted_for == candidate
        if self.leader_id is not None:
            return False
        return up_to_date

    def _handle_begin_epoch(self, req: BeginQuorumEpochRequest, now_ms: int) -> BeginQuorumEpochResponse:
        """Q6."""
        if req.leader_id not in self.voters:
            return BeginQuorumEpochResponse(Errors.INVALID_REQUEST, self._leader_or_none(), self.epoch)
        if req.leader_epoch < self.epoch:
            return BeginQuorumEpochResponse(Errors.FENCED_LEADER_EPOCH, self._leader_or_none(), self.epoch)
        self._maybe_transition(req.leader_id, req.leader_epoch, now_ms)
        if self.role == FOLLOWER:
            self._last_leader_contact = now_ms
        return BeginQuorumEpochResponse(Errors.NONE, self._leader_or_none(), self.epoch)

    def _handle_end_epoch(self, req: EndQuorumEpochRequest, now_ms: int) -> EndQuorumEpochResponse:
        """Q6/Q12."""
        if req.leader_id not in self.voters:
            return EndQuorumEpochResponse(Errors.INVALID_REQUEST, self._leader_or_none(), self.epoch)
        if req.leader_epoch < self.epoch:
            return EndQuorumEpochResponse(Errors.FENCED_LEADER_EPOCH, self._leader_or_none(), self.epoch)
        self._maybe_transition(req.leader_id, req.leader_epoch, now_ms)
        if self.role == FOLLOWER and self.leader_id == req.leader_id:
            self._deadline = now_ms + self._successor_backoff(req.preferred_successors)
            self._last_leader_contact = None  # Q4: the leader said it is gone
        return EndQuorumEpochResponse(Errors.NONE, self._leader_or_none(), self.epoch)

    def _successor_backoff(self, successors: tuple[int, ...]) -> int:
        """Q12: Kafka's strict exponential backoff by position among the preferred successors."""
        cap = self.config.election_backoff_max_ms
        if self.id not in successors:
            return cap
        position = successors.index(self.id)
        if position == 0:
            return 0
        base = cap >> (len(successors) - 1)
        return min(cap, base << (position - 1))

    def _handle_fetch(self, src: int, req: FetchRequest, now_ms: int) -> FetchResponse:
        """Q7 (and Q8 through the leader state)."""
        if src not in self.voters or src == self.id or req.fetch_offset < 0 or req.last_fetched_epoch < 0 \
                or req.last_fetched_epoch > req.current_leader_epoch:
            return FetchResponse(Errors.INVALID_REQUEST, self._leader_or_none(), self.epoch)
        if req.current_leader_epoch < self.epoch:
            return FetchResponse(Errors.FENCED_LEADER_EPOCH, self._leader_or_none(), self.epoch)
        if req.current_leader_epoch > self.epoch:
            return FetchResponse(Errors.UNKNOWN_LEADER_EPOCH, self._leader_or_none(), self.epoch)
        if self.role != LEADER:
            return FetchResponse(Errors.NOT_LEADER_OR_FOLLOWER, self._leader_or_none(), self.epoch)
        assert self.leader is not None
        self.leader.acknowledged.add(src)
        self.leader.record_follower_contact(src, now_ms)
        self._deadline = self.leader.check_quorum_deadline
        diverging = diverging_epoch(self.log.epoch_start_offsets(), self.log.end_offset, self.epoch,
                                    req.fetch_offset, req.last_fetched_epoch)
        if diverging is not None:
            return FetchResponse(Errors.NONE, self.id, self.epoch, self.high_watermark, diverging)
        self._after_leader_progress(self.leader.update_voter(src, req.fetch_offset, now_ms), now_ms)
        batches = tuple(self.log.read(req.fetch_offset, min(req.max_records, self.config.fetch_max_records)))
        self._hwm_news[src] = self.high_watermark > self.leader.hwm_sent.get(src, -1)
        self.leader.hwm_sent[src] = self.high_watermark
        return FetchResponse(Errors.NONE, self.id, self.epoch, self.high_watermark, None, batches)

    def fetch_should_wait(self, src: int, request: RaftRequest, response: RaftResponse) -> bool:
        """Whether the driver may hold this fetch (long polling) instead of answering now: no error, no
        divergence, no records, and no HWM the follower has not been sent yet (Kafka's fetch purgatory;
        answering a new HWM at once lets followers apply commits without waiting for the next append)."""
        return (isinstance(request, FetchRequest) and isinstance(response, FetchResponse)
                and response.error == Errors.NONE and response.diverging_epoch is None and not response.batches
                and not self._hwm_news.get(src, False))

    # =========================================================================== leader appends
    def append(self, records: Sequence[Any], now_ms: int) -> tuple[int, int] | None:
        """Append ``records`` as one batch as leader; returns the batch's (base offset, end offset), or
        None when this node does not lead."""
        if self.role != LEADER or not records:
            return None
        batch = RaftBatch(self.log.end_offset, self.epoch, tuple(records))
        self._append(batch, now_ms)
        return batch.base_offset, batch.next_offset

    def _append(self, batch: RaftBatch, now_ms: int) -> None:
        self.log.append(batch)
        self.log.flush()  # the leader counts only what is durable (Kafka's flushLeaderLog)
        self.version += 1
        assert self.leader is not None
        self._after_leader_progress(self.leader.update_local(self.log.flushed_offset), now_ms)

    def _after_leader_progress(self, advanced: bool, now_ms: int) -> None:
        if advanced and self.leader is not None:
            self._set_high_watermark(self.leader.high_watermark, now_ms)

    def _set_high_watermark(self, hwm: int, now_ms: int) -> None:
        if hwm > self.high_watermark:
            self.high_watermark = hwm
            self.version += 1
            self._events.append({"kind": "quorum_hwm", "voter": self.id, "epoch": self.epoch, "hwm": hwm,
                                 "role": self.role})

    # =========================================================================== responses in
    def handle_response(self, src: int, correlation_id: int, response: RaftResponse, now_ms: int) -> None:
        """An answer from ``src`` to the request with ``correlation_id`` (stale answers are ignored)."""
        entry = self._inflight.get(src)
        if entry is None or entry[0] != correlation_id:
            return
        del self._inflight[src]
        error, leader, epoch = response.error, response.leader_id, response.leader_epoch
        leader_id = None if leader < 0 else leader
        if epoch < self.epoch or error == Errors.UNKNOWN_LEADER_EPOCH:
            self._retry_later(src, now_ms)
            return  # Q13: we are ahead; the answer is no longer relevant
        if epoch > self.epoch or error in (Errors.FENCED_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER):
            newer = epoch > self.epoch
            self._maybe_transition(leader_id, epoch, now_ms)
            if error != Errors.NONE or newer:
                self._retry_later(src, now_ms)
                return
        elif leader_id is not None and self.leader_id is None and leader_id != self.id:
            # Q13 within the epoch: a node that knew no leader of its epoch learns one (a prospective that
            # knows one goes back to following only when a fetch from it succeeds, KIP-996)
            self._to_follower(epoch, leader_id, now_ms)
            if error != Errors.NONE or not isinstance(response, FetchResponse):
                return
        if error != Errors.NONE:
            self._retry_later(src, now_ms)
            return
        if isinstance(response, VoteResponse):
            self._vote_answered(src, response.vote_granted, now_ms)
        elif isinstance(response, BeginQuorumEpochResponse):
            if self.role == LEADER and self.leader is not None:
                self.leader.acknowledged.add(src)
        elif isinstance(response, EndQuorumEpochResponse):
            if self.role == RESIGNED:
                self._resign_acks.add(src)
        elif isinstance(response, FetchResponse):
            self._fetched(src, response, now_ms)

    def request_failed(self, dst: int, correlation_id: int, now_ms: int) -> None:
        """The request to ``dst`` got no answer (timeout, refused connection): retry after a backoff."""
        entry = self._inflight.get(dst)
        if entry is None or entry[0] != correlation_id:
            return
        del self._inflight[dst]
        self._retry_later(dst, now_ms)

    def _retry_later(self, dst: int, now_ms: int) -> None:
        self._retry_at[dst] = now_ms + self.config.retry_backoff_ms

    def _vote_answered(self, src: int, granted: bool, now_ms: int) -> None:
        # Every answer is traced, counted or not (one that arrives during a backoff was granted all the same):
        # a voter that forgets or never records a vote traces nothing of it, so only its candidates can show
        # that it voted twice in one epoch (I22). No condition picks what is traced, so none can hide a vote.
        self._events.append({"kind": "quorum_vote", "voter": self.id, "epoch": self.epoch, "from_voter": src,
                             "granted": granted, "pre_vote": self.role == PROSPECTIVE})
        if self.role not in (CANDIDATE, PROSPECTIVE) or self._backoff_until is not None:
            return
        (self._granted if granted else self._rejected).add(src)
        if self._maybe_win(now_ms):
            return
        if len(self._rejected) >= self.majority:
            self._back_off(now_ms)  # Q3: no chance left in this round
        self._maybe_fetch(now_ms)  # the answer freed the way to the leader a prospective still knows

    def _request_votes(self, now_ms: int) -> None:
        pre = self.role == PROSPECTIVE
        for v in self.voters:
            if v != self.id and v not in self._granted and v not in self._rejected:
                self._send(v, VoteRequest(self.id, self.epoch, self.log.last_epoch, self.log.end_offset, pre), now_ms)

    # =========================================================================== follower fetching
    def _maybe_fetch(self, now_ms: int) -> None:
        # a prospective that knows its epoch's leader keeps fetching from it (KIP-996): one answer and it
        # follows again, without disturbing anyone
        if self.role in (FOLLOWER, PROSPECTIVE) and self.leader_id is not None and self.leader_id != self.id:
            self._send(self.leader_id, FetchRequest(self.id, self.epoch, self.log.end_offset, self.log.last_epoch,
                                                    self.config.fetch_max_records), now_ms)

    def _fetched(self, src: int, resp: FetchResponse, now_ms: int) -> None:
        """Q9: truncate on divergence, or append, flush and learn the HWM; then fetch again."""
        if src != self.leader_id or self.role not in (FOLLOWER, PROSPECTIVE):
            return
        if self.role == PROSPECTIVE:
            self._to_follower(self.epoch, src, now_ms)
        if resp.diverging_epoch is not None:
            div = resp.diverging_epoch
            if div.end_offset < self.high_watermark:
                raise InvariantViolation(f"voter {self.id}: leader {src} asks to truncate to {div.end_offset}, "
                                         f"below the HWM {self.high_watermark}")
            cut = truncation_offset(self.log.epoch_start_offsets(), self.log.end_offset, div)
            if cut < self.high_watermark:
                raise InvariantViolation(f"voter {self.id}: divergence cut {cut} below the HWM {self.high_watermark}")
            before = self.log.end_offset
            after = self.log.truncate_to(cut)
            self.version += 1
            self._events.append({"kind": "quorum_truncate", "voter": self.id, "epoch": self.epoch,
                                 "from_offset": before, "to_offset": after, "hwm": self.high_watermark})
        else:
            appended = False
            for batch in resp.batches:
                if batch.next_offset <= self.log.end_offset:
                    continue
                if batch.base_offset != self.log.end_offset:
                    break  # not from our fetch offset (a stale answer): fetch again
                self.log.append(batch)
                appended = True
            if appended:
                self.log.flush()  # Q9: the next fetch offset acknowledges them, so they must be durable
                self.version += 1
            if resp.high_watermark >= 0:
                self._set_high_watermark(min(resp.high_watermark, self.log.end_offset), now_ms)
        self._last_leader_contact = now_ms
        self._deadline = now_ms + self.config.fetch_timeout_ms
        self._maybe_fetch(now_ms)

    # =========================================================================== plumbing
    def _send(self, dst: int, request: RaftRequest, now_ms: int) -> None:
        """Queue ``request`` unless one is already out to ``dst`` or ``dst`` is backing off."""
        if dst in self._inflight or self._retry_at.get(dst, 0) > now_ms:
            return
        self._correlation += 1
        self._inflight[dst] = (self._correlation, type(request).__name__, now_ms)
        self._outbox.append(Outbound(dst, self._correlation, request))

    def _trace(self, reason: str, now_ms: int, **extra: Any) -> None:
        self._events.append({"kind": "quorum_state", "voter": self.id, "epoch": self.epoch, "state": self.role,
                             "leader": self.leader_id, "voted_for": self.voted_for, "hwm": self.high_watermark,
                             "log_end": self.log.end_offset, "reason": reason, **extra})
