"""The three group checks over ``extract.GroupFacts`` (the package docstring states each rule).

They are written for any facts, and are run on one key's (``extract.key_facts``): ``check_key`` is what
the Python checker runs for each key and what the Spark job runs on its workers."""

from __future__ import annotations

from collections import defaultdict

from checkers.groups.extract import Assignment, Commit, GroupFacts


def double_assignment(facts: GroupFacts) -> list[dict]:
    """Partitions owned by more than one member in one generation of a group."""
    owners: dict[tuple[str, int, int], dict[str | None, list[int]]] = defaultdict(dict)
    for a in facts.assignments:
        for key in a.keys:
            owners[(a.group, a.generation, key)].setdefault(a.member, []).append(a.index)
    return [{"group": group, "generation": generation, "key": key, "members": sorted(map(str, members)),
             "ops": sorted(i for idx in members.values() for i in idx)}
            for (group, generation, key), members in sorted(owners.items()) if len(members) > 1]


def _assignment_times(facts: GroupFacts) -> dict[tuple[str, int, str | None, int], int]:
    """``(group, generation, member, key) -> invoke time`` of the poll in which the member got the key."""
    out: dict[tuple[str, int, str | None, int], int] = {}
    for a in facts.assignments:
        for key in a.keys:
            out.setdefault((a.group, a.generation, a.member, key), a.invoke_time)
    return out


def commit_regression(facts: GroupFacts) -> list[dict]:
    """Acknowledged commits that moved a partition's committed offset back (package docstring)."""
    handed = _assignment_times(facts)
    by_key: dict[tuple[str, int], list[Commit]] = defaultdict(list)
    for c in facts.commits:
        if c.generation is not None:
            by_key[(c.group, c.key)].append(c)
    found = []
    for (group, key), commits in sorted(by_key.items()):
        commits.sort(key=lambda c: c.complete_time)
        for b in commits:
            got_key_at = handed.get((group, b.generation, b.member, key))
            worst: Commit | None = None
            for a in commits:
                if a.complete_time >= b.invoke_time:
                    break  # sorted by completion: no later one completed before b began
                if a.offset <= b.offset:
                    continue
                if a.generation > b.generation or (a.generation == b.generation and a.member == b.member) or (
                        a.generation < b.generation and got_key_at is not None and a.complete_time < got_key_at):
                    if worst is None or a.offset > worst.offset:
                        worst = a
            if worst is not None:
                found.append({"group": group, "key": key, "offset": b.offset, "generation": b.generation,
                              "member": b.member, "op": b.index, "earlier_offset": worst.offset,
                              "earlier_generation": worst.generation, "earlier_op": worst.index})
    return found


def poll_below_commit(facts: GroupFacts) -> list[dict]:
    """Records a member read below an offset its group committed before the member got the partition."""
    by_group: dict[str, list[Commit]] = defaultdict(list)
    for c in facts.commits:
        if c.generation is not None:
            by_group[c.group].append(c)

    def floor(a: Assignment, key: int) -> Commit | None:
        best = None
        for c in by_group.get(a.group, ()):
            if c.key == key and c.complete_time < a.invoke_time and c.generation <= a.generation and (
                    best is None or c.offset > best.offset):
                best = c
        return best

    by_process: dict = {}
    for poll in facts.polls:
        by_process.setdefault(poll.process, []).append(poll)
    found = []
    for process, polls in by_process.items():
        floors: dict[int, tuple[Commit, Assignment]] = {}
        for poll in polls:
            for kind, detail in poll.events:
                if kind == "assigned":
                    floors = {}
                    for key in detail.keys:
                        c = floor(detail, key)
                        if c is not None:
                            floors[key] = (c, detail)
                elif kind == "revoked":
                    for key in detail:
                        floors.pop(key, None)
                else:
                    floors = {}  # an event this check cannot read: judge nothing until the next assignment
            for key, offsets in poll.reads.items():
                if key not in floors:
                    continue
                commit, assignment = floors[key]
                below = [o for o in offsets if o < commit.offset]
                if below:
                    found.append({"group": assignment.group, "key": key, "process": process, "op": poll.index,
                                  "offsets": below[:10], "committed": commit.offset, "commit_op": commit.index,
                                  "generation": assignment.generation, "member": assignment.member})
    return found


CHECKS = {
    "double-assignment": double_assignment,
    "commit-regression": commit_regression,
    "poll-below-commit": poll_below_commit,
}


def check_key(facts: GroupFacts) -> dict[str, list[dict]]:
    """Every check on one key's facts: kind -> anomalies, in the check's own order."""
    return {kind: check(facts) for kind, check in CHECKS.items()}


def find_anomalies(per_key: dict[int, GroupFacts]) -> dict[str, list[dict]]:
    """Every check on every key (``extract.by_key``): kind -> anomalies, by key, then in each key's order
    (the order the Spark job sorts its rows into)."""
    found: dict[str, list[dict]] = {kind: [] for kind in CHECKS}
    for key in sorted(per_key):
        for kind, rows in check_key(per_key[key]).items():
            found[kind].extend(rows)
    return found
