"""The consumer-group invariants I23 and I24 (docs/protocol-rules.md sections 2.8 and 4), from the group
coordinators' own trace events.

The history judges groups from the clients' side (``checkers/groups``: what consumers were told and
committed); these rules judge the coordinator's decisions themselves, whichever broker made them:

- ``group_generation``: a generation's record is committed (members are told it only then), with its
  members and the record's offset in the group's ``__consumer_offsets`` partition;
- ``group_assignment``: a SyncGroup answer hands a member its topic-partitions of a generation (decoded
  from the consumer protocol; an assignment that could not be decoded is traced as such and skipped);
- ``group_commit``: an OffsetCommit or TxnOffsetCommit whose records committed and which was answered NONE,
  with the generation and member the request carried, the group's generation and state the coordinator
  validated it against, and its records' offset in the same partition.

**I23 (G-commit)**, Kafka's ``validateOffsetCommit``: a commit that names a generation or a member (a
*managed* commit) is accepted only from the group's current generation, and a member id it names must be a
member. Judged three ways, each independent of the others: the generation carried is the one the
coordinator validated against (its own report); the member is among the members of that generation as
its ``group_generation`` event named them; and in the offsets partition's log, the newest generation of
the group written before the commit's records is the one it carries (the log is the one order every
coordinator of the group agrees on: Kafka validates and appends under the group's lock, so a later
generation's record can only follow). A commit with generation -1 and no member (from outside group
management) is accepted by an OffsetCommit only while the group is Empty (no members: its newest
generation before it in the log has none, when the log holds the generation the coordinator was at: a
group emptied by a rebalance is Empty in memory at once, also when the record of its empty generation
failed, in Kafka too); a TxnOffsetCommit without them is accepted in any state (Kafka
exempts it: older TxnOffsetCommit versions carry neither, and the transaction, not the generation,
fences the producer). Kafka checks the member against the group's current members, which while a
rebalance is being prepared may include a member that joined after the generation began; such a member
has never been told the generation (a member learns it only from its JoinGroup answer), so no client that
follows the protocol commits with it, and I23 holds it to the generation's members. Static membership
(KIP-345), which replaces a member id inside a generation, is not implemented by the reference brokers
and would need an event of its own.

**I24 (G-assign)**: within one generation of a group, no topic-partition is handed to two members.
Generation numbers are never handed out twice (a generation's record is committed before any member
hears of it, so the next coordinator continues above it), so (group, generation) names one assignment.

``GroupView`` is the part of ``state.TraceState`` these rules read (moved by ``apply`` only).
"""

from __future__ import annotations

from typing import Any

from checkers.invariants.events import GROUP_ASSIGNMENT, GROUP_GENERATION, Step
from harness.checked_spec import CheckedSpec

GROUP_NEEDS: dict[str, str] = {
    "I23": "group_commit{group, generation, member, group_generation, group_state, txn, offsets_partition, "
           "log_offset}, group_generation{group, generation, members, offsets_partition, log_offset}",
    "I24": "group_assignment{group, generation, member, assigned} (undecodable ones skipped)",
}
EMPTY = "Empty"  # the state of a group without members (Kafka's GroupState name)


def groups_applicable(spec: CheckedSpec) -> bool:
    """Whether the run's consumers were members of a consumer group (``sub_via`` names subscribe)."""
    return "subscribe" in str(spec.sub_via or "")


class GroupView:
    """The groups' part of the trace state (see the module docstring)."""

    def __init__(self) -> None:
        self.generations: dict[tuple[Any, Any], dict] = {}        # (group, generation) -> its first event
        self.logged: dict[tuple[Any, Any], list[tuple[int, dict]]] = {}  # (offsets partition, group) ->
        #                                                   (log offset, event) of each generation's record
        self.handed: dict[tuple[Any, Any], dict[tuple, tuple[Any, dict]]] = {}  # (group, generation) ->
        #                                                   topic-partition -> (member, event) that got it

    def apply(self, step: Step) -> None:
        """Move the groups' state by a group coordinator's event (one of ``events.GROUP_KINDS``)."""
        ev, kind = step.ev, step.kind
        if kind == GROUP_GENERATION:
            key = (ev.get("group"), ev.get("generation"))
            self.generations.setdefault(key, ev)
            offset = ev.get("log_offset")
            if isinstance(offset, int) and offset >= 0:
                self.logged.setdefault((ev.get("offsets_partition"), key[0]), []).append((offset, ev))
        elif kind == GROUP_ASSIGNMENT:
            assigned = ev.get("assigned")
            if isinstance(assigned, list):
                handed = self.handed.setdefault((ev.get("group"), ev.get("generation")), {})
                for tp in assigned:
                    handed.setdefault(tuple(tp), (ev.get("member"), ev))

    def generation_before(self, ev: dict) -> dict | None:
        """The group's generation whose record is the last one before ``ev``'s records in its offsets
        partition's log (None when the trace shows none, or ``ev`` has no log offset)."""
        offset = ev.get("log_offset")
        if not isinstance(offset, int) or offset < 0:
            return None
        best = None
        for logged, gen_ev in self.logged.get((ev.get("offsets_partition"), ev.get("group")), ()):
            if logged < offset and (best is None or logged > best[0]):
                best = (logged, gen_ev)
        return None if best is None else best[1]


def commits_carry_the_generation(state: Any, step: Step, res: Any, memory: Any) -> None:
    """I23: an accepted offset commit carries the group's current generation and a member of it (module
    docstring); one from outside group management only into an Empty group (OffsetCommit)."""
    ev, view = step.ev, state.groups
    group, generation, member = ev.get("group"), ev.get("generation"), ev.get("member")
    if group is None or not isinstance(generation, int) or not isinstance(member, str):
        return
    before = view.generation_before(ev)
    events = [before, ev]
    problems = []
    if generation < 0 and not member:
        if ev.get("txn") is True:
            res.ok("I23")  # Kafka accepts a TxnOffsetCommit without generation and member in any state
            return
        if ev.get("group_state", EMPTY) != EMPTY:
            problems.append(f"the group was {ev['group_state']}, not Empty")
        # the log shows the group's membership only if it holds the generation the coordinator was at: a
        # group emptied by a rebalance is Empty at once, also when its (empty) generation's record failed
        if before is not None and before.get("members") and before.get("generation") == ev.get("group_generation"):
            problems.append(f"its generation {before.get('generation')} written before it has members "
                            f"{before['members']}")
        what = "a commit from outside group management (generation -1, no member)"
    else:
        current = ev.get("group_generation")
        if isinstance(current, int) and generation != current:
            problems.append(f"the group was at generation {current}")
        started = view.generations.get((group, generation))
        if member and started is not None and member not in (started.get("members") or ()):
            problems.append(f"{member} is no member of generation {generation} ({started.get('members')})")
            events.insert(0, started)
        if before is not None and before.get("generation") != generation:
            problems.append(f"the newest generation of the group written before it in its offsets partition "
                            f"is {before.get('generation')}")
        what = f"a commit of generation {generation} by {member or 'no member'}"
    if problems:
        kind = "TxnOffsetCommit" if ev.get("txn") is True else "OffsetCommit"
        res.bad("I23", f"group {group}: {kind} accepted, {what}, but " + "; ".join(problems), events)
    else:
        res.ok("I23")


def one_owner_per_partition(state: Any, step: Step, res: Any, memory: Any) -> None:
    """I24: within one generation of a group, no topic-partition is handed to two members."""
    ev = step.ev
    assigned = ev.get("assigned")
    if not isinstance(assigned, list):
        res.notes.setdefault("I24", "no decodable assignment in the trace (undecodable ones are not judged)")
        return
    group, generation, member = ev.get("group"), ev.get("generation"), ev.get("member")
    handed = state.groups.handed.get((group, generation), {})
    clashes = [(tuple(tp), handed[tuple(tp)]) for tp in assigned
               if tuple(tp) in handed and handed[tuple(tp)][0] != member]
    if clashes:
        others = sorted({str(owner) for _tp, (owner, _ev) in clashes})
        tps = [list(tp) for tp, _owner in clashes]
        res.bad("I24", f"group {group} generation {generation}: {tps} handed to {member} and to {others}",
                [*(owner_ev for _tp, (_owner, owner_ev) in clashes[:3]), ev])
    else:
        res.ok("I24")
