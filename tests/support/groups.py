"""Consumer-group histories for the group checks: a builder for hand-made ones (``History``, ``base``,
``txn_poll``), the named fixtures the engines are compared on (``FIXTURES``), and ``random_group_history``,
a run of several members, keys and generations with anomalies planted at random."""

from __future__ import annotations

import random


class History:
    """Builds a history op by op on a clock of its own (each op a tick)."""

    def __init__(self) -> None:
        self.ops: list[dict] = []
        self.t = 0

    def _add(self, process, f, typ, value, **extra) -> int:
        self.t += 10
        self.ops.append({"index": len(self.ops), "time": self.t, "type": typ, "process": process, "f": f,
                         "value": value, **extra})
        return self.t

    def op(self, process, f, value, result, typ="ok", **extra):
        self._add(process, f, "invoke", value)
        self._add(process, f, typ, result, **extra)
        return self

    def send(self, key, offset, value):
        return self.op(9, "send", [key, value], [key, [offset, value]])

    def poll(self, process, gen, member, reads=None, assigned=None, revoked=None, group="g"):
        log = []
        if revoked is not None:
            log.append({"type": "revoked", "keys": revoked, "generation": gen, "member": member})
        if assigned is not None:
            log.append({"type": "assigned", "keys": assigned, "generation": gen, "member": member})
        value = {str(k): [[o, o] for o in offsets] for k, offsets in (reads or {}).items()}
        return self.op(process, "poll", None, value, rebalance_log=log, group=group, generation=gen, member=member)

    def commit(self, process, gen, member, offsets, typ="ok", group="g", **extra):
        return self.op(process, "commit", None, {str(k): o for k, o in offsets.items()}, typ=typ, group=group,
                       generation=gen, member=member, **extra)

    def final(self, process, keys, upto):
        """A final read of every key up to ``upto``."""
        return self.op(process, "poll", None, {str(k): [[o, o] for o in range(upto)] for k in keys}, final=True)


def base() -> History:
    """Member a owns key 0 in generation 1, reads 0..4, commits 5; then generation 2 hands key 0 to b."""
    h = History()
    for o in range(10):
        h.send(0, o, o)
    h.poll(1, 1, "a", assigned=[0], reads={0: [0, 1, 2, 3, 4]})
    h.commit(1, 1, "a", {0: 5})
    h.poll(1, 2, "a", revoked=[0], assigned=[])
    return h


def txn_poll(h: History, process, gen, member, reads, typ="ok", assigned=None):
    """A transaction whose polls went through the group (``--txn`` with ``--sub-via subscribe``)."""
    log = [] if assigned is None else [{"type": "assigned", "keys": assigned, "generation": gen, "member": member}]
    mops = [["poll", {str(k): [[o, o] for o in offsets]}] for k, offsets in reads.items()]
    return h.op(process, "txn", [["poll"]] * len(mops), mops, typ=typ, rebalance_log=log, group="g",
                generation=gen, member=member)


def clean() -> History:
    """A valid handover: b takes key 0 over at a's commit and commits further."""
    h = base()
    h.poll(2, 2, "b", assigned=[0], reads={0: [5, 6]})
    h.commit(2, 2, "b", {0: 7})
    return h


def poll_below_commit() -> History:
    """b, handed key 0 after a committed 5, reads 3 and 4 again."""
    h = base()
    h.poll(2, 2, "b", assigned=[0], reads={0: [3, 4, 5]})
    return h


def commit_regression() -> History:
    """The zombie of generation 1 commits 5 after generation 2 committed 8, and it is acknowledged."""
    h = base()
    h.poll(2, 2, "b", assigned=[0], reads={0: [5, 6, 7]})
    h.commit(2, 2, "b", {0: 8})
    h.commit(1, 1, "a", {0: 5}, stall_ms=8000)
    return h


def double_assignment() -> History:
    """Generation 2 hands key 1 to both b and c."""
    h = base()
    h.poll(2, 2, "b", assigned=[0, 1])
    h.poll(3, 2, "c", assigned=[1])
    return h


def txn_below_commit() -> History:
    """A committed transaction of b reads below a's commit through the group."""
    h = base()
    txn_poll(h, 2, 2, "b", {0: [3, 4, 5]}, assigned=[0])
    return h


FIXTURES = {  # name -> (builder, the kinds it must show)
    "clean": (clean, []),
    "poll-below-commit": (poll_below_commit, ["poll-below-commit"]),
    "commit-regression": (commit_regression, ["commit-regression"]),
    "double-assignment": (double_assignment, ["double-assignment"]),
    "txn-below-commit": (txn_below_commit, ["poll-below-commit"]),
}


def with_final(h: History, keys=(0,), upto: int = 10) -> list[dict]:
    """The history's ops with a final read appended (so a queue check has its final phase)."""
    h.final(5, keys, upto)
    return h.ops


def random_group_history(seed: int, *, keys: int = 4, members: int = 3, generations: int = 8,
                         records: int = 40, p_double: float = 0.04, p_below: float = 0.02,
                         p_zombie: float = 0.08, p_txn: float = 0.2, groups: tuple[str, ...] = ("g",)) -> list[dict]:
    """A subscribing run: a producer writes ``records`` per key; each group goes through ``generations``
    rebalances that share the keys among ``members`` processes, who poll from their group's committed
    position and commit what they read. Planted at random: a key handed to two members of one generation
    (``p_double``), a member that starts below the commit (``p_below``), an acknowledged commit of an
    older generation after a newer one committed more (``p_zombie``); some reads are transactions
    (``p_txn``), some commits are refused, one commit is acknowledged only after the next generation
    began reading (the race Kafka allows), and some events lack a generation or a type."""
    rng = random.Random(seed)
    h = History()
    for o in range(records):
        for k in range(keys):
            h.send(k, o, o * keys + k)
    process = 10

    def complete(pending, group, committed):
        pp, pgen, pmember, poffsets = pending
        h._add(pp, "commit", "ok", {str(k): o for k, o in poffsets.items()}, group=group, generation=pgen,
               member=pmember)
        for k, o in poffsets.items():
            committed[k] = max(committed[k], o)

    for group in groups:
        committed = dict.fromkeys(range(keys), 0)
        owned: dict[int, list[int]] = {}
        pending = None  # a commit invoked and not yet completed: (process, gen, member, offsets)
        zombie = None  # a commit of an earlier generation, made after this one's
        for gen in range(1, generations + 1):
            procs = list(range(process, process + members))
            share = {p: [] for p in procs}
            for k in range(keys):
                share[rng.choice(procs)].append(k)
            if rng.random() < p_double:
                k = rng.randrange(keys)
                other = rng.choice([p for p in procs if k not in share[p]] or procs)
                share[other].append(k)
            stale = []
            for p in procs:
                member = f"{group}-m{p}-{gen}"
                if pending is not None and pending[0] == p:
                    complete(pending, group, committed)
                    pending = None
                revoked = owned.get(p, [])
                reads = {}
                for k in share[p]:
                    start = committed[k]
                    if rng.random() < p_below and start > 0:
                        start = rng.randrange(start)
                    end = min(records, start + rng.randint(0, 6))
                    reads[k] = list(range(start, end))
                if rng.random() < 0.1:
                    h.op(p, "poll", None, {}, rebalance_log=[{"keys": share[p]}], group=group)  # unreadable event
                if rng.random() < p_txn:
                    log = [{"type": "revoked", "keys": revoked, "generation": gen, "member": member},
                           {"type": "assigned", "keys": share[p], "generation": gen, "member": member}]
                    mops = [["poll", {str(k): [[o, o * keys + k] for o in offs]}] for k, offs in reads.items()]
                    h.op(p, "txn", [["poll"]] * len(mops), mops, rebalance_log=log, group=group, generation=gen,
                         member=member)
                else:
                    h.poll(p, gen, member, reads=reads, assigned=share[p], revoked=revoked, group=group)
                if pending is not None:  # acknowledged after a member of the next generation read
                    complete(pending, group, committed)
                    pending = None
                owned[p] = share[p]
                offsets = {k: offs[-1] + 1 for k, offs in reads.items() if offs}
                if not offsets:
                    continue
                roll = rng.random()
                if roll < 0.1:
                    h.commit(p, gen, member, offsets, typ="fail", error="CommitFailedError: RebalanceInProgress")
                elif roll < 0.2 and gen < generations:
                    h._add(p, "commit", "invoke", None)
                    pending = (p, gen, member, offsets)
                else:
                    h.commit(p, gen, member, offsets)
                    for k, o in offsets.items():
                        committed[k] = max(committed[k], o)
                    stale.append((p, gen, member, {k: max(0, o - rng.randint(1, 3)) for k, o in offsets.items()}))
            if zombie is not None:
                p, g, member, offsets = zombie
                h.commit(p, g, member, offsets, stall_ms=5000)
                zombie = None
            if stale and rng.random() < p_zombie:
                zombie = rng.choice(stale)
            if rng.random() < 0.1:
                h.commit(98, None, None, {0: 1})  # a commit that does not say its generation
        if pending is not None:
            complete(pending, group, committed)
        process += members
    h.final(99, range(keys), records)
    return h.ops
