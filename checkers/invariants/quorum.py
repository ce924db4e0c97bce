"""The controller quorum's invariants I17-I22 (docs/protocol-rules.md section 4), and one-copy controller events.

Every voter of the metadata quorum applies every committed record and traces it (``source: "controller"``
events with the record's ``offset``), so a record shows up once per voter, at different times. The first
copy goes on to the other invariants (I1-I16 read one controller); every later copy (the sweep names it
``events.CONTROLLER_COPY``) must be equal to it (I20) and moves nothing else. The voters' own
``quorum_state``, ``quorum_hwm`` and ``quorum_truncate`` events, and the answers candidates got to their
Vote requests (``quorum_vote``), give the rest:

- **I17 election safety**: at most one voter becomes leader in a quorum epoch;
- **I18 epoch monotonicity**: a voter's epoch never decreases, restarts included (the election state is
  durable, Q1), and entering pre-vote leaves it as it is (Q4: a prospective asks in its current epoch, so
  a voter cut off alone cannot inflate it);
- **I19 HWM monotonicity and durability**: a voter's HWM never decreases while it runs, it never
  truncates below it, and after a restart its log still reaches the highest HWM it reported (what it
  acknowledged was flushed first, Q9);
- **I20 committed prefix agreement**: the record traced at a committed offset is the same on every voter
  and forever (no committed record lost or replaced);
- **I21 only committed metadata is applied**: a voter applies (and traces) a record only below the committed
  end (the largest HWM any voter reported so far); a broker's applied metadata offset never passes the
  committed end and never goes back while the broker runs;
- **I22 one vote per voter and epoch**: in each quorum epoch a voter grants its vote to one candidate at
  most and keeps it: the votes granted to candidates (their ``quorum_vote`` answers, pre-votes left out:
  KIP-996 lets a voter grant those to several) and the vote the voter's own state names agree, and once a
  vote is known every later state of that voter in that epoch names it (forgotten, it could be granted
  again; after a restart too, Q1). A voter's state names a vote only once it cast it: its own candidacy or
  a grant (``reason: voted``) to a voter the trace showed standing as candidate in that epoch (not a
  prospective's pre-vote, not a request of an older epoch). The candidates' side matters because a voter
  that never records a vote traces nothing of it.

A trace from before the quorum (a spec without ``controllers``) has none of these events; the invariants
are then not applicable rather than unknown.

``QuorumView`` is the part of ``state.TraceState`` these rules read (moved by ``apply`` only); the judges
below are the rules ``rules.RULES`` registers for I17-I22.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from checkers.invariants.events import (
    BROKER_APPLIED,
    CONTROLLER_COPY,
    QUORUM_HWM,
    QUORUM_STATE,
    QUORUM_VOTE,
    Step,
)
from harness.checked_spec import CheckedSpec

QUORUM_NEEDS: dict[str, str] = {
    "I17": "quorum_state{voter, epoch, state=leader}",
    "I18": "quorum_state{voter, epoch} (reason start after a restart)",
    "I19": "quorum_hwm{voter, hwm}, quorum_truncate{voter, to_offset, hwm}, quorum_state{reason=start, log_end}",
    "I20": "controller events with offset from every voter (source controller, voter)",
    "I21": "controller events with offset (every voter's), broker_metadata{broker, offset} / "
           "metadata_offset{broker, offset} vs quorum_hwm{hwm}",
    "I22": "quorum_vote{voter (the candidate), epoch, from_voter, granted, pre_vote}, "
           "quorum_state{voter, epoch, state, reason, voted_for}",
}
PROSPECTIVE = "prospective"  # the Raft role of a voter in pre-vote (KIP-996)
# What says who traced a record and when, not what the record is (the harness adds node_name and _line).
_NOT_CONTENT = ("time", "node", "node_name", "voter", "quorum_epoch")


def quorum_applicable(spec: CheckedSpec) -> bool:
    """Whether the run had a controller quorum tracing I17-I22's events (specs name ``controllers``)."""
    return spec.controllers is not None


def _digest(ev: dict) -> str:
    body = {k: v for k, v in ev.items() if k not in _NOT_CONTENT and not k.startswith("_")}
    return hashlib.blake2b(json.dumps(body, sort_keys=True, default=str).encode(), digest_size=8).hexdigest()


def record_key(ev: dict) -> tuple | None:
    """What names a controller record in the trace: its offset (and the kind, partition and broker, since
    one record may trace several events); None for an event that is no committed record."""
    offset = ev.get("offset")
    if not isinstance(offset, int):
        return None
    return (offset, ev.get("kind"), ev.get("partition"), ev.get("broker"))


class QuorumView:
    """The quorum's part of the trace state (see the module docstring)."""

    def __init__(self) -> None:
        self.records: dict[tuple, list] = {}                # record key -> [first event, its digest or None]
        self.leaders: dict[int, tuple[Any, dict]] = {}     # quorum epoch -> (leader, event)
        self.epochs: dict[Any, tuple[int, dict]] = {}      # voter -> (epoch, event)
        self.hwm: dict[Any, tuple[int, dict]] = {}         # voter -> (HWM in this incarnation, event)
        self.best_hwm: dict[Any, tuple[int, dict]] = {}    # voter -> (highest HWM ever reported, event)
        self.committed_end = -1                            # largest HWM any voter reported
        self.committed_event: dict | None = None
        self.applied: dict[Any, tuple[int, dict]] = {}     # broker node -> (applied offset, event)
        self.votes: dict[tuple[Any, int], tuple[Any, dict]] = {}  # (voter, epoch) -> (its vote, first event)
        self.candidacies: set[tuple[Any, int]] = set()     # (voter, epoch) it stood as candidate in

    def is_copy(self, ev: dict) -> bool:
        """Whether ``ev`` (a controller event) is a later copy of a record the trace already showed."""
        key = record_key(ev)
        return key is not None and key in self.records

    def first_copy(self, ev: dict) -> tuple[dict, str]:
        """The first copy of the record ``ev`` copies, and its digest."""
        entry = self.records[record_key(ev)]
        if entry[1] is None:
            entry[1] = _digest(entry[0])
        return entry[0], entry[1]

    def apply(self, step: Step) -> bool:
        """Move the quorum's state; True when the event was the quorum's alone (nothing else reads it)."""
        ev, kind = step.ev, step.kind
        if step.ctl:
            key = record_key(ev)
            if key is not None and key not in self.records:
                self.records[key] = [ev, None]
            return False
        if kind == QUORUM_STATE:
            voter, epoch = ev.get("voter"), ev.get("epoch")
            if voter is None or not isinstance(epoch, int):
                return True
            self.epochs[voter] = (epoch, ev)
            voted = ev.get("voted_for")
            if voted is not None:
                self.votes.setdefault((voter, epoch), (voted, ev))
            if ev.get("state") == "candidate":
                self.candidacies.add((voter, epoch))
            if ev.get("state") == "leader" and epoch not in self.leaders:
                self.leaders[epoch] = (voter, ev)
            if ev.get("reason") == "start":
                self.hwm.pop(voter, None)  # a new incarnation learns its HWM again
            return True
        if kind == QUORUM_VOTE:
            epoch, granter = ev.get("epoch"), ev.get("from_voter")
            if _counts_as_vote(ev) and granter is not None and isinstance(epoch, int):
                self.votes.setdefault((granter, epoch), (ev.get("voter"), ev))
            return True
        if kind == QUORUM_HWM:
            voter, hwm = ev.get("voter"), ev.get("hwm")
            if voter is not None and isinstance(hwm, int):
                self.hwm[voter] = (hwm, ev)
                if voter not in self.best_hwm or hwm > self.best_hwm[voter][0]:
                    self.best_hwm[voter] = (hwm, ev)
                if hwm > self.committed_end:
                    self.committed_end, self.committed_event = hwm, ev
            return True
        if kind == BROKER_APPLIED:
            node, offset = ev.get("node"), ev.get("offset")
            if isinstance(offset, int) and node is not None and offset >= self.applied.get(node, (-1,))[0]:
                self.applied[node] = (offset, ev)  # the furthest it applied since it started
            return False
        if kind == "broker_state":
            if ev.get("state") == "STARTING":
                self.applied.pop(ev.get("node"), None)  # it applies its metadata from the start again
            return True
        return kind is not None and kind.startswith("quorum_")


def one_leader_per_epoch(state: Any, step: Step, res: Any, memory: Any) -> None:
    """I17: at most one voter becomes leader in a quorum epoch."""
    ev = step.ev
    voter, epoch = ev.get("voter"), ev.get("epoch")
    if ev.get("state") != "leader" or voter is None or not isinstance(epoch, int):
        return
    other = state.quorum.leaders.get(epoch)
    if other is not None and other[0] != voter:
        res.bad("I17", f"two leaders in quorum epoch {epoch}: voters {other[0]} and {voter}", [other[1], ev])
    else:
        res.ok("I17")


def epochs_never_go_back(state: Any, step: Step, res: Any, memory: Any) -> None:
    """I18: a voter's quorum epoch never decreases, restarts included, and pre-vote does not change it (Q4)."""
    ev = step.ev
    voter, epoch = ev.get("voter"), ev.get("epoch")
    if voter is None or not isinstance(epoch, int):
        return
    last = state.quorum.epochs.get(voter)
    if last is not None and epoch < last[0]:
        res.bad("I18", f"voter {voter}'s quorum epoch went from {last[0]} back to {epoch}", [last[1], ev])
    elif last is not None and ev.get("state") == PROSPECTIVE and epoch != last[0]:
        # Q4: pre-vote asks in the current epoch; only a candidate bumps it (Q3)
        res.bad("I18", f"voter {voter} entered pre-vote in epoch {epoch}, not its epoch {last[0]} (Q4)",
                [last[1], ev])
    else:
        res.ok("I18")


def hwm_durable(state: Any, step: Step, res: Any, memory: Any) -> None:
    """I19: a voter's HWM never decreases while it runs, it never truncates below it, and its log still
    reaches the highest HWM it reported when it starts again."""
    ev, kind, q = step.ev, step.kind, state.quorum
    voter = ev.get("voter")
    if voter is None:
        return
    if kind == QUORUM_STATE:
        best, end = q.best_hwm.get(voter), ev.get("log_end")
        if ev.get("reason") != "start" or best is None or not isinstance(end, int):
            return
        if end < best[0]:
            res.bad("I19", f"voter {voter} restarted with its log ending at {end}, below the HWM {best[0]} it "
                           f"had reported: committed records it held are gone", [best[1], ev])
        else:
            res.ok("I19")
        return
    last = q.hwm.get(voter)
    if kind == QUORUM_HWM:
        hwm = ev.get("hwm")
        if not isinstance(hwm, int):
            return
        if last is not None and hwm < last[0]:
            res.bad("I19", f"voter {voter}'s HWM went from {last[0]} back to {hwm}", [last[1], ev])
        else:
            res.ok("I19")
        return
    to = ev.get("to_offset")  # quorum_truncate
    if last is not None and isinstance(to, int) and to < last[0]:
        res.bad("I19", f"voter {voter} truncated its log to {to}, below its HWM {last[0]}", [last[1], ev])
    elif last is not None:
        res.ok("I19")


def committed_prefixes_agree(state: Any, step: Step, res: Any, memory: Any) -> None:
    """I20: every voter's copy of a committed record equals the first (a first copy counts as checked:
    every later one must equal it)."""
    ev = step.ev
    if step.kind != CONTROLLER_COPY:
        if record_key(ev) is not None:
            res.ok("I20")
        return
    if "voter" not in ev:
        return
    first, digest = state.quorum.first_copy(ev)
    if digest != _digest(ev):
        res.bad("I20", f"offset {ev['offset']}: voter {ev.get('voter')} applied a {ev.get('kind')} that "
                       f"differs from what voter {first.get('voter')} applied there", [first, ev])
    else:
        res.ok("I20")


def only_committed_applied(state: Any, step: Step, res: Any, memory: Any) -> None:
    """I21: a voter applies a record only below the committed end; a broker's applied metadata offset stays
    below it and never goes back while the broker runs."""
    ev, q = step.ev, state.quorum
    if q.committed_event is None:
        return  # no quorum events in this trace (a run from before the quorum)
    offset = ev.get("offset")
    if not isinstance(offset, int):
        return
    if step.ctl:
        if "voter" not in ev:
            return
        if offset >= q.committed_end:
            res.bad("I21", f"voter {ev['voter']} applied the {ev.get('kind')} record at offset {offset}, but "
                           f"nothing past offset {q.committed_end - 1} was committed", [q.committed_event, ev])
        else:
            res.ok("I21")
        return
    broker = ev.get("node")  # the broker that applied (the event's writer)
    if broker is None:
        return
    if offset >= q.committed_end:
        res.bad("I21", f"broker {broker} applied metadata up to offset {offset}, but nothing past offset "
                       f"{q.committed_end - 1} was committed", [q.committed_event, ev])
        return
    last = q.applied.get(broker)
    if last is not None and offset < last[0]:
        res.bad("I21", f"broker {broker}'s applied metadata went from offset {last[0]} back to {offset}",
                [last[1], ev])
        return
    res.ok("I21")


def _counts_as_vote(ev: dict) -> bool:
    """A ``quorum_vote`` answer that granted a vote (a pre-vote promises nothing, KIP-996)."""
    return ev.get("granted") is True and ev.get("pre_vote") is False and ev.get("voter") is not None


def one_vote_per_epoch(state: Any, step: Step, res: Any, memory: Any) -> None:
    """I22: a voter grants its vote of an epoch to one candidate at most, and keeps it for the epoch."""
    ev, votes = step.ev, state.quorum.votes
    epoch = ev.get("epoch")
    if not isinstance(epoch, int):
        return
    if step.kind == QUORUM_VOTE:
        voter, candidate = ev.get("from_voter"), ev.get("voter")
        if not _counts_as_vote(ev) or voter is None:
            return
        known = votes.get((voter, epoch))
        if known is not None and known[0] != candidate:
            res.bad("I22", f"voter {voter} granted its vote of quorum epoch {epoch} to {known[0]} and to "
                           f"{candidate}", [known[1], ev])
        else:
            res.ok("I22")
        return
    voter = ev.get("voter")
    if voter is None or "voted_for" not in ev:
        return
    voted, known = ev["voted_for"], votes.get((voter, epoch))
    where = f"voter {voter}'s state in quorum epoch {epoch} ({ev.get('state')}, {ev.get('reason')})"
    if known is not None:
        if voted == known[0]:
            res.ok("I22")
        elif voted is None:
            res.bad("I22", f"{where} names no vote, but it had voted for {known[0]} in that epoch: forgotten, "
                           f"the vote could be granted again", [known[1], ev])
        else:
            res.bad("I22", f"{where} names a vote for {voted}, but it had voted for {known[0]} in that epoch",
                    [known[1], ev])
    elif voted is not None:
        if voted == voter and ev.get("state") == "candidate":
            res.ok("I22")
        elif ev.get("reason") != "voted":
            res.bad("I22", f"{where} names a vote for {voted} it never cast (no candidacy, no grant in that "
                           f"epoch)", [ev])
        elif (voted, epoch) not in state.quorum.candidacies:
            res.bad("I22", f"{where}: a vote for {voted}, which never stood as candidate in that epoch", [ev])
        else:
            res.ok("I22")
