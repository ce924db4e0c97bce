"""Rules the simulator's nodes check where the core's decisions leave the node (no trace event shows them).

The trace invariants and the evidence check see what the core traces; some rules of
docs/protocol-rules.md are about what a node does with a request, which only the node sees, so the
simulated broker checks them itself, against what it knows independently of the core's own bookkeeping:

- **L1**: a leader appends an acks=all write only while its committed ISR has at least MinISR members (the
  write must be refused up front with NOT_ENOUGH_REPLICAS, not appended and then nacked);
- **L8**: a leader answers a follower's fetch with data only in the leader epoch the fetch names, and only
  while it leads (a fetch from a follower that knows another epoch is fenced);
- **L12**: at most one AlterPartition per partition in flight (sent, neither answered nor timed out, and
  not answered by newer metadata either: a new leader or partition epoch ends the wait, L17), and only for
  a real change of the ISR;
- **L18** (and L8 for ListOffsets): a ListOffsets answer comes only from the leader, in the leader epoch
  the request names (when it names one), once its HWM has reached its leader epoch start, and names
  committed offsets only: LATEST is the HWM, EARLIEST the log start, a lookup by timestamp the base offset
  of a committed batch (or -1);
- **Q2, Q4** (the controller quorum): a voter that follows a leader of its epoch grants no vote of that
  epoch (Q2: only pre-votes may be asked of it); a follower that got a successful Fetch answer from its
  leader within the fetch timeout refuses a pre-vote (Q4, KIP-996), and so does the leader of the epoch
  (or a resigned one), which grants nothing of its epoch. The simulated controller keeps
  the time of that answer itself, from the network's delivery, not from the Raft node's own timer;
- **C9**: a broker in controlled shutdown stops before its session timeout only after the controller
  answered a heartbeat with "you may shut down" (the broker's own flag is what the core sets; the node
  keeps the controller's word). A stop at the timeout is the server's bound, allowed.

A broken rule ends the run as a finding with the rule's name (an ``InvariantViolation`` with ``rule``).
"""

from __future__ import annotations

from typing import Any

from reference_impl.protocol.errors import Errors, InvariantViolation
from reference_impl.protocol.replica import LEADER
from reference_impl.protocol.replica_messages import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP


class RuleBroken(InvariantViolation):
    """A node saw the core break ``rule``."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"{rule}: {message}")
        self.rule = rule


def check_vote_answer(voter: int, before: tuple[int, int | None, str], request: Any, answer: Any,
                      leader_heard_ms_ago: int | None, fetch_timeout_ms: int) -> None:
    """Q2 and Q4 on one granted Vote answer (see the module docstring). ``before`` is the voter's (epoch,
    leader, role) when the request arrived; ``leader_heard_ms_ago`` how long ago a successful Fetch answer of
    that leader in that epoch reached the voter (None: none since it last learned the leader, or the leader
    said with EndQuorumEpoch that it is gone)."""
    if not answer.vote_granted or answer.error != Errors.NONE:
        return
    epoch, leader, role = before
    kind = "pre-vote" if request.pre_vote else "vote"
    if request.candidate_epoch != epoch:
        return
    if role in ("leader", "resigned"):
        # the leader of the epoch (or one stepping down) is the one voter sure to have heard from it
        raise RuleBroken("Q4" if request.pre_vote else "Q2",
                         f"voter {voter}, {role} of epoch {epoch}, granted {request.candidate_id} a {kind}")
    if leader is None or role != "follower":
        return
    where = f"voter {voter}, following {leader} in epoch {epoch}, granted {request.candidate_id} a {kind}"
    if not request.pre_vote:
        raise RuleBroken("Q2", f"{where}: a voter that knows the leader of an epoch votes for nobody in it")
    if leader_heard_ms_ago is not None and leader_heard_ms_ago < fetch_timeout_ms:
        raise RuleBroken("Q4", f"{where} {leader_heard_ms_ago} ms after its leader last answered a fetch "
                               f"(fetch timeout {fetch_timeout_ms} ms): a voter that hears from its leader "
                               f"refuses pre-votes")


def check_list_offsets(broker: int, replica: Any, timestamp: int, epoch: int, answer: Any) -> None:
    """L18 and L8 on one ListOffsets answer (see the module docstring)."""
    if not answer.error.ok:
        return
    where = f"broker {broker} answered ListOffsets({timestamp}) with {answer.offset}"
    if replica.role != LEADER:
        raise RuleBroken("L8", f"{where} as {replica.role}")
    if epoch >= 0 and epoch != replica.leader_epoch:
        raise RuleBroken("L8", f"{where} to a request of leader epoch {epoch}, its own is {replica.leader_epoch}")
    hwm, leso = replica.high_watermark, replica.leso
    if leso is None or hwm < leso:
        raise RuleBroken("L18", f"{where} while its HWM {hwm} is below its leader epoch start {leso}")
    if timestamp == LATEST_TIMESTAMP:
        expected = hwm
    elif timestamp == EARLIEST_TIMESTAMP:
        expected = replica.log.log_start_offset
    else:
        committed = {b.base_offset for b in replica.log.batches() if b.last_offset < hwm}
        if answer.offset != -1 and answer.offset not in committed:
            raise RuleBroken("L18", f"{where}, not the base offset of a committed batch (HWM {hwm})")
        return
    if answer.offset != expected:
        raise RuleBroken("L18", f"{where}, expected {expected} (HWM {hwm}, log start {replica.log.log_start_offset})")
