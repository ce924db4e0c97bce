"""The group facts of a history, op by op, and how they split by key.

``op_facts`` reads one completed op: the acknowledged commits it carries (one ``Commit`` per key) and, for
a poll (or a committed transaction's polls through the group), one ``Poll``: the rebalances it went
through and the offsets it read. ``Tally`` counts what the result reports (group ops, commits,
assignments, zombie commits); it adds up over a split of the history by process (an op's lines never
cross processes), so the Spark job counts per partition and merges.

The checks judge one key at a time (``key_facts``): every rule compares commits, assignments and reads of
the same key, and the only state that crosses keys (a member's current assignment in
``poll-below-commit``) is rebuilt for one key from each rebalance event narrowed to it: an ``assigned``
event without the key ends the member's floor for it just as one with the key starts it. So each key
needs its own commits and reads and every rebalance event of the history, and ``parts`` says exactly
that: a commit and a poll's reads go to their key, a poll's events to every key. The Python checker routes
the parts in memory (``by_key``); the Spark job routes the same parts, encoded by ``encode_part``, through
a shuffle. Parts are used in history order (the invocation order ``completed_ops`` gives), a poll's
events before its reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from harness.history import completed_ops

EVENTS, READS, COMMIT = "events", "reads", "commit"  # the kinds of parts, in their order within one op


@dataclass(frozen=True)
class Commit:
    """An acknowledged commit of one partition."""

    group: str
    key: int
    offset: int
    generation: int | None
    member: str | None
    process: Any
    invoke_time: int
    complete_time: int
    index: int


@dataclass(frozen=True)
class Assignment:
    """A member was handed ``keys`` in ``generation``, during the poll ``index`` invoked at ``invoke_time``."""

    group: str
    generation: int
    member: str | None
    keys: tuple[int, ...]
    process: Any
    invoke_time: int
    index: int


@dataclass(frozen=True)
class Poll:
    """One ok poll of a member: the rebalances it went through, in order (``("assigned", Assignment)``,
    ``("revoked", keys)``, or ``("unknown", keys)`` for an event the checks cannot read), then the offsets
    it read, by key."""

    process: Any
    index: int
    events: tuple[tuple[str, Any], ...] = ()
    reads: dict[int, list[int]] = field(default_factory=dict)


@dataclass
class GroupFacts:
    """What the checks read: commits, the assignments among the polls' events, the polls in history order."""

    commits: list[Commit] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    polls: list[Poll] = field(default_factory=list)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return None


def is_group_op(op: dict) -> bool:
    """A client op of a consumer group: a commit, or a poll that reports rebalances or its group."""
    if op.get("process") == "nemesis":
        return False
    return op.get("f") == "commit" or bool(op.get("rebalance_log")) or op.get("group") is not None


def _txn_reads(mops: Any) -> dict:
    """The records a transaction's poll micro-ops returned, by key, in the order they were read."""
    reads: dict = {}
    for mop in mops if isinstance(mops, list) else []:
        if isinstance(mop, list) and len(mop) == 2 and mop[0] == "poll" and isinstance(mop[1], dict):
            for key, records in mop[1].items():
                if isinstance(records, list):
                    reads.setdefault(key, []).extend(records)
    return reads


def op_facts(op: dict) -> tuple[list[Commit], Poll | None]:
    """The commits and the poll of one completed client op (``harness.history.complete_op``)."""
    group = str(op.get("group") or "")
    f, typ = op.get("f"), op.get("type")
    if f == "commit" and typ == "ok" and isinstance(op.get("value"), dict):
        generation = _int(op.get("generation"))
        commits = []
        for k, offset in op["value"].items():
            key, off = _int(k), _int(offset)
            if key is None or off is None:
                continue
            commits.append(Commit(group, key, off, generation, op.get("member"), op.get("process"),
                                  op.get("invoke_time") or 0, op.get("complete_time") or op.get("time", 0),
                                  op.get("index", -1)))
        return commits, None
    if not ((f == "poll" or (f == "txn" and op.get("group") is not None)) and typ == "ok" and not op.get("final")):
        return [], None
    events: list[tuple[str, Any]] = []
    for event in op.get("rebalance_log") or []:
        if not isinstance(event, dict):
            continue
        keys = tuple(k for k in (_int(x) for x in event.get("keys") or []) if k is not None)
        generation = _int(event.get("generation"))
        if event.get("type") == "assigned" and generation is not None:
            events.append(("assigned", Assignment(group, generation, event.get("member"), keys, op.get("process"),
                                                  op.get("invoke_time") or 0, op.get("index", -1))))
        else:
            events.append(("revoked" if event.get("type") == "revoked" else "unknown", keys))
    reads: dict[int, list[int]] = {}
    value = op.get("value")
    if f == "txn":  # a committed transaction's polls, through the group (an aborted one read nothing)
        value = _txn_reads(value)
    if isinstance(value, dict):
        for k, records in value.items():
            key = _int(k)
            if key is None or not isinstance(records, list):
                continue
            reads[key] = [o for o in (_int(r[0]) for r in records if isinstance(r, list) and r) if o is not None]
    return [], Poll(op.get("process"), op.get("index", -1), tuple(events), reads)


@dataclass
class Tally:
    """The counts of the checker's result, added up op by op (and over parts of a history with ``merge``)."""

    group_ops: int = 0
    group_lines: int = 0  # history lines of group ops (``has_group_ops``: whether the checker applies)
    commits: int = 0
    judged_commits: int = 0  # commits with a generation
    assignments: int = 0
    generations: set[tuple[str, int]] = field(default_factory=set)
    members: set[str | None] = field(default_factory=set)
    zombie_commits: int = 0
    zombie_commits_refused: int = 0
    zombie_commits_acknowledged: int = 0

    def add_line(self, op: dict) -> None:
        """One history line (zombie commits are counted by their completions, as the history has them)."""
        if is_group_op(op):
            self.group_lines += 1
        if op.get("f") == "commit" and op.get("stall_ms") and op.get("type") != "invoke":
            self.zombie_commits += 1
            if op.get("type") == "ok":
                self.zombie_commits_acknowledged += 1
            elif op.get("type") == "fail" and any(code in str(op.get("error"))
                                                  for code in ("UnknownMemberId", "IllegalGeneration")):
                self.zombie_commits_refused += 1

    def add_op(self, op: dict, commits: list[Commit], poll: Poll | None) -> None:
        """One completed op and its facts (``op_facts``)."""
        if is_group_op(op):
            self.group_ops += 1
        self.commits += len(commits)
        self.judged_commits += sum(1 for c in commits if c.generation is not None)
        for kind, a in poll.events if poll is not None else ():
            if kind == "assigned":
                self.assignments += 1
                self.generations.add((a.group, a.generation))
                self.members.add(a.member)

    def merge(self, other: Tally) -> None:
        """Add ``other``'s counts to these."""
        for name in ("group_ops", "group_lines", "commits", "judged_commits", "assignments", "zombie_commits",
                     "zombie_commits_refused", "zombie_commits_acknowledged"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.generations |= other.generations
        self.members |= other.members

    @property
    def checked(self) -> bool:
        """Whether anything could be judged: an assignment, or a commit that says its generation."""
        return bool(self.assignments or self.judged_commits)

    def counts(self) -> dict[str, int]:
        """The result's ``counts`` (the trace's coordinator moves are added by the caller)."""
        return {"group_ops": self.group_ops, "commits": self.commits, "assignments": self.assignments,
                "generations": len(self.generations), "members": len(self.members),
                "zombie_commits": self.zombie_commits, "zombie_commits_refused": self.zombie_commits_refused,
                "zombie_commits_acknowledged": self.zombie_commits_acknowledged}

    def to_json(self) -> str:
        """The tally as JSON text (``from_json`` reads it back)."""
        data = {k: v for k, v in self.__dict__.items() if k not in ("generations", "members")}
        data["generations"] = sorted(self.generations)
        data["members"] = sorted(self.members, key=lambda m: (m is not None, str(m)))
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> Tally:
        """The tally ``to_json`` wrote."""
        data = json.loads(text)
        data["generations"] = {(g, n) for g, n in data["generations"]}
        data["members"] = set(data["members"])
        return cls(**data)


Step = tuple[list[Commit], Poll | None]  # what one op gives: its commits and its poll


def extract(ops: list[dict]) -> tuple[list[Step], Tally]:
    """The commits and poll of every client op of the history ``ops`` (raw history lines) that has some,
    in invocation order (``completed_ops``), and the tally."""
    tally = Tally()
    steps: list[Step] = []
    for op in ops:
        if op.get("process") != "nemesis":
            tally.add_line(op)
    for op in completed_ops(ops):
        if op.get("process") == "nemesis":
            continue
        commits, poll = op_facts(op)
        tally.add_op(op, commits, poll)
        if commits or poll is not None:
            steps.append((commits, poll))
    return steps, tally


# ------------------------------------------------------------------------------------ one key at a time

def parts(commits: list[Commit], poll: Poll | None) -> list[tuple[int | None, str, Any]]:
    """What one op gives the per-key checks, as ``(key, kind, fact)`` in the order they are used: the
    poll's events (key None: every key needs them), its reads of each key, and each commit under its key."""
    out: list[tuple[int | None, str, Any]] = []
    if poll is not None:
        if poll.events:
            out.append((None, EVENTS, Poll(poll.process, poll.index, poll.events)))
        out.extend((key, READS, Poll(poll.process, poll.index, (), {key: offsets}))
                   for key, offsets in poll.reads.items())
    out.extend((c.key, COMMIT, c) for c in commits)
    return out


def part_keys(key: int | None, kind: str, fact: Any) -> set[int]:
    """The keys of the history one part names: its own, or those its events name."""
    if key is not None:
        return {key}
    return {k for _, detail in fact.events for k in (detail.keys if isinstance(detail, Assignment) else detail)}


def _narrow(kind: str, detail: Any, key: int) -> tuple[str, Any]:
    if isinstance(detail, Assignment):
        return kind, replace(detail, keys=tuple(k for k in detail.keys if k == key))
    return kind, tuple(k for k in detail if k == key)


def key_facts(key: int, routed: Iterable[tuple[str, Any]]) -> GroupFacts:
    """The facts of one key from the parts routed to it, ``(kind, fact)`` in history order: its commits,
    and every poll with the events narrowed to this key (the assignments among them too) and only its
    reads of this key. A poll left with neither events nor reads is dropped: it changes nothing."""
    facts = GroupFacts()
    for kind, fact in routed:
        if kind == COMMIT:
            if fact.key == key:
                facts.commits.append(fact)
            continue
        events = tuple(_narrow(k, detail, key) for k, detail in fact.events)
        reads = {key: fact.reads[key]} if key in fact.reads else {}
        if events or reads:
            facts.polls.append(Poll(fact.process, fact.index, events, reads))
            facts.assignments.extend(detail for k, detail in events if k == "assigned")
    return facts


def by_key(steps: list[Step]) -> dict[int, GroupFacts]:
    """Each key's facts (``key_facts``), from the parts of ``steps`` routed as ``parts`` says: a part with a
    key to that key, events to every key the history names. The Spark job routes the same parts through a
    shuffle."""
    every = [part for commits, poll in steps for part in parts(commits, poll)]
    keys = sorted({k for part in every for k in part_keys(*part)})
    routed: dict[int, list[tuple[str, Any]]] = {key: [] for key in keys}
    for key, kind, fact in every:
        for k in ([key] if key is not None else keys):
            routed[k].append((kind, fact))
    return {key: key_facts(key, routed[key]) for key in keys}


# ------------------------------------------------------------------------------------ parts as JSON text

def encode_part(kind: str, fact: Any) -> str:
    """A part's fact as JSON text (the Spark job moves parts between workers as text)."""
    if kind == COMMIT:
        return json.dumps([fact.group, fact.key, fact.offset, fact.generation, fact.member, fact.process,
                           fact.invoke_time, fact.complete_time, fact.index])
    events = [[k, [d.group, d.generation, d.member, list(d.keys), d.process, d.invoke_time, d.index]
               if isinstance(d, Assignment) else list(d)] for k, d in fact.events]
    return json.dumps([fact.process, fact.index, events, [[k, v] for k, v in fact.reads.items()]])


def decode_part(kind: str, text: str) -> Any:
    """The fact ``encode_part`` wrote."""
    data = json.loads(text)
    if kind == COMMIT:
        return Commit(*data)
    process, index, events, reads = data
    return Poll(process, index,
                tuple((k, Assignment(d[0], d[1], d[2], tuple(d[3]), *d[4:]) if k == "assigned" else tuple(d))
                      for k, d in events),
                {k: v for k, v in reads})
