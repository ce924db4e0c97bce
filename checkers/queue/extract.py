"""Turn a queue-workload history into per-operation records and per-key version orders.

This is the extraction step of the queue checker whose rules are stated in ``checkers/queue/anomalies.py``
(section "Extraction" and "Version order" of its docstring); the Spark implementation follows the same
rules. Nothing here decides validity: it only normalises both encodings of docs/history-schema.md (single
``send``/``poll`` ops and multi-micro-op ``txn`` ops) into one shape.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from harness.history import complete_op

CLIENT_FS = ("send", "poll", "txn")
# Ops that replace the set of keys (partitions) a consumer follows; Jepsen treats both alike.
SUBSCRIPTION_FS = ("assign", "subscribe")


_KEY_CACHE: dict[str, Any] = {}


def norm_key(k: Any) -> Any:
    """Keys are integers; JSON object keys arrive as decimal strings, so turn those back into ints."""
    if type(k) is str:
        got = _KEY_CACHE.get(k)
        if got is not None:
            return got
        try:
            got = int(k)
        except ValueError:
            got = k
        if len(_KEY_CACHE) < 100_000:  # keys are few (partitions); do not grow without bound
            _KEY_CACHE[k] = got
        return got
    return k


def value_sort_key(v: Any) -> tuple:
    """Total order on values: numbers by value, then anything else by its string form (schema: ints)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return (1, str(v))
    return (0, v)


class OpRec:
    """One client operation (invocation + completion) with its sends and reads unpacked.

    ``index`` is the completion's history index (the invocation's when the history ended first), ``type``
    the completion type (``info`` when missing), ``sends`` a list of ``(key, value, offset|None)`` in
    micro-op order, ``reads`` a dict ``key -> [(offset|None, value), ...]`` in the order returned (a pair
    is a tuple or the history's own 2-list: read it, never change it). ``assign`` is the key list of an
    ``assign`` or ``subscribe`` op (None for other ops); ``txn`` tells a transaction (``f`` ``txn``, or
    two or more micro-ops); ``rebalanced`` the keys the completion's ``rebalance_log`` names.
    """

    __slots__ = ("index", "invoke_index", "process", "f", "type", "invoke_time", "complete_time",
                 "final", "sends", "reads", "hwm", "assign", "seek", "txn", "rebalanced")

    def __init__(self, index, invoke_index, process, f, type_, invoke_time, complete_time, final):
        self.index = index
        self.invoke_index = invoke_index
        self.process = process
        self.f = f
        self.type = type_
        self.invoke_time = invoke_time
        self.complete_time = complete_time
        self.final = final
        self.sends: list[tuple[Any, Any, Any]] = []
        self.reads: dict[Any, list[tuple[Any, Any]]] = {}
        self.hwm: dict[Any, int] | None = None
        self.assign: list | None = None
        self.seek = False
        self.txn = f == "txn"
        self.rebalanced: frozenset = frozenset()

    def __repr__(self) -> str:
        return f"OpRec({self.index}, p={self.process}, {self.type} {self.f}, sends={self.sends}, reads={self.reads})"


def _unpack_send(rec: OpRec, k: Any, x: Any) -> None:
    # A completed send carries [offset, value]; an invocation (or an info/fail copy of it) the bare value.
    if isinstance(x, list) and len(x) == 2:
        offset, value = x
    else:
        offset, value = None, x
    if rec.type == "fail" or not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        # A failed send has no offset in any log; a non-integer offset is unknown, and so is a negative one:
        # Kafka's clients report -1 for an acknowledged write whose offset they were not told (the
        # RecordMetadata of a retried batch the broker called a duplicate: hasOffset() is false).
        offset = None
    rec.sends.append((norm_key(k), value, offset))


def _unpack_poll(rec: OpRec, result: Any) -> None:
    if not isinstance(result, dict):
        return
    reads = rec.reads
    cached = _KEY_CACHE.get
    for k, pairs in result.items():
        key = cached(k) if type(k) is str else None
        if key is None:
            key = norm_key(k)
        seq = reads.get(key)
        if not isinstance(pairs, list):
            if seq is None:
                reads[key] = []
            continue
        # Fastest path: well-formed [[offset, value], ...] with integer offsets (the hot loop): the
        # history's own 2-lists are kept as the pairs (read-only; consumers unpack or index them as they do
        # tuples), which saves allocating and freeing millions of tuples. The first sequence of a key is
        # the history's own list too (read-only as well: a later poll micro-op of the same key makes a
        # new list instead of extending it).
        if all([type(p) is list and len(p) == 2 and type(p[0]) is int for p in pairs]):
            reads[key] = pairs if seq is None else seq + pairs
            continue
        # The slow path appends to a list of this record's own (a copy: ``seq`` may be the history's):
        # pairs that are not 2-lists are skipped, an offset that is not an integer (a float equal to one,
        # a boolean) is unknown, as the contract says and as the columnar history stores it.
        seq = reads[key] = [] if seq is None else list(seq)
        for pair in pairs:
            if isinstance(pair, list) and len(pair) == 2:
                o = pair[0]
                if not isinstance(o, int) or isinstance(o, bool):
                    o = None
                seq.append((o, pair[1]))


def _is_mops(x: Any) -> bool:
    """Jepsen's encoding: ``send``/``poll`` ops may carry a micro-op list like ``txn`` ops do."""
    return isinstance(x, list) and bool(x) and isinstance(x[0], list) and bool(x[0]) and x[0][0] in ("send", "poll")


def _fill(rec: OpRec, cval: Any, ival: Any) -> None:
    """Unpack the sends and reads of a record whose value is not one of the two common shapes: ``cval``
    is the completion's value (None when nothing came back), ``ival`` the invocation's."""
    f = rec.f
    if f in ("send", "poll") and (_is_mops(cval) or (not isinstance(cval, dict | list) and _is_mops(
            ival)) or (f == "send" and _is_mops(ival))):
        f = "txn"
    if f == "send":
        value = cval if isinstance(cval, list) and len(cval) == 2 else ival
        if isinstance(value, list) and len(value) == 2:
            _unpack_send(rec, value[0], value[1])
    elif f == "poll":
        if rec.type != "invoke":
            _unpack_poll(rec, cval)
    elif f == "txn":
        mops = cval if _is_mops(cval) or (isinstance(cval, list) and not cval) else ival
        if not isinstance(mops, list):
            return
        if len(mops) > 1:
            rec.txn = True  # Jepsen's send/poll ops with several micro-ops are transactions too
        for mop in mops:
            if not isinstance(mop, list) or not mop:
                continue
            if mop[0] == "send" and len(mop) == 3:
                _unpack_send(rec, mop[1], mop[2])
            elif mop[0] == "poll" and len(mop) == 2:
                _unpack_poll(rec, mop[1])


def iter_records(ops: Iterable[dict]) -> Iterator[OpRec]:
    """Pair client ops by process and unpack them: each record as its completion is read, then the
    invocations never completed, in history order. ``ops`` is iterated once and only the open
    invocations are kept, so a history can be streamed through (``checkers.history.parquet``).

    A pair is completed by the one rule every reader uses (``harness.history.complete_op``: an
    invocation never completed becomes ``info``). Nemesis ops and ops of other ``f`` than
    send/poll/txn/assign/subscribe are ignored. A completion without an open invocation, or of another
    ``f`` than it, is ignored (``pair_ops`` reports those), and so is an invocation that a second one of
    its process replaced.
    """
    open_by_process: dict[Any, dict] = {}
    for op in ops:
        process = op.get("process")
        if type(process) is not int:  # nemesis ops (and anything that is not a client)
            continue
        if op["type"] == "invoke":
            open_by_process[process] = op
            continue
        invoke = open_by_process.pop(process, None)
        f = op.get("f")
        if invoke is None or invoke.get("f") != f or (f not in CLIENT_FS and f not in SUBSCRIPTION_FS):
            continue
        yield make_record(complete_op(invoke, op))  # its index is the completion's
    for invoke in open_by_process.values():
        f = invoke.get("f")
        if f in CLIENT_FS or f in SUBSCRIPTION_FS:
            yield make_record(complete_op(invoke, None))  # its index is the invocation's


def extract(ops: Iterable[dict]) -> list[OpRec]:
    """``iter_records`` as a list in op-index order (the order the checks process records in)."""
    out = list(iter_records(ops))
    indices = [r.index for r in out]
    if any(map(operator.gt, indices, islice(indices, 1, None))):
        out.sort(key=lambda r: r.index)  # stable, as before
    return out


def make_record(op: dict) -> OpRec | None:
    """The record of one completed op (``harness.history.complete_op``), or None when its ``f`` is not a
    queue op."""
    f = op["f"]
    if f not in CLIENT_FS and f not in SUBSCRIPTION_FS:
        return None
    rec = OpRec(op["index"], op["invoke_index"], op["process"], f, op["type"], op["invoke_time"],
                op["complete_time"], op.get("final") is True)
    if f in SUBSCRIPTION_FS:
        keys = op["invoke_value"]
        rec.assign = [norm_key(k) for k in keys] if isinstance(keys, list) else []
        rec.seek = op.get("seek_to_beginning") is True
        return rec
    cval = op.get("value")
    # Fast paths for the two common shapes (single-op encoding); everything else goes through _fill.
    if f == "poll" and type(cval) is dict:
        _unpack_poll(rec, cval)
    elif (f == "send" and type(cval) is list and len(cval) == 2 and type(cval[0]) is not list
          and type(cval[1]) is list):
        _unpack_send(rec, cval[0], cval[1])
    else:
        _fill(rec, cval, op["invoke_value"])
    marks = op.get("hwm")
    if not isinstance(marks, dict) and rec.final:
        marks = op.get("ends")  # the end offsets a final read went up to (workloads/clients.py)
    if isinstance(marks, dict):
        rec.hwm = {norm_key(k): v for k, v in marks.items() if type(v) is int}
    log = op.get("rebalance_log")
    if log:
        rec.rebalanced = _rebalanced_keys(log)
    return rec


def _rebalanced_keys(log: Any) -> frozenset:
    """The keys named by a completion's ``rebalance_log`` (Jepsen: a list of ``{"keys": [...]}`` events,
    the partitions the consumer was assigned while the op ran)."""
    keys: set = set()
    if isinstance(log, list):
        for event in log:
            if isinstance(event, dict) and isinstance(event.get("keys"), list):
                keys.update(norm_key(k) for k in event["keys"])
    return frozenset(keys)


_MISSING = object()


class VersionOrders:
    """Per-key logs built from the history (docstring of ``checkers/queue/anomalies.py``, "Version order").

    ``offsets[k]`` = the key's observed offsets, sorted (index i = dense rank); ``first[k][v]`` /
    ``last[k][v]`` = smallest / largest index at which v was observed; ``conflicts[(k, o)]`` = the set of
    values of an offset observed with several; ``values_at(k, i)`` = sorted values at index i; ``log`` and
    ``by_index`` give the whole structure (built on first use: the common checks do not need them).

    Observations are kept as "first value per offset" plus a set only where an offset disagrees, because
    most reads repeat what was already seen (many consumers read the same records).
    """

    def __init__(self) -> None:
        self._first_value: dict[Any, dict[int, Any]] = {}
        self.conflicts: dict[tuple, set] = {}
        self.offsets: dict[Any, list[int]] = {}
        self.first: dict[Any, dict[Any, int]] = {}
        self.last: dict[Any, dict[Any, int]] = {}
        self._log: dict | None = None
        self._by_index: dict | None = None
        self.has_duplicates: set = set()  # keys with a value observed at two offsets
        # keys read with an offset that is not an int and not equal to an int offset already observed
        # (None, strings, floats...): for the others, every read pair's value sits at its offset's index
        self.odd_offsets: set = set()

    def observe(self, k: Any, seq) -> None:
        """Record a read sequence ``[(offset, value), ...]`` of key ``k`` (null/non-int offsets skipped)."""
        fv = self._first_value.get(k)
        if fv is None:
            fv = self._first_value[k] = {}
        elif len(seq) > 16:
            # Most reads repeat records already observed: when every (offset, value) pair of the sequence
            # is already there with the same value (checked in C), there is nothing to record.
            try:
                d = dict(seq)
            except (TypeError, ValueError):
                d = None
            if d is not None and len(d) == len(seq) and d.items() <= fv.items():
                return
        for o, v in seq:
            cur = fv.get(o, _MISSING)
            if cur is _MISSING:
                if type(o) is int:
                    fv[o] = v
                else:
                    self.odd_offsets.add(k)
            elif cur != v:
                c = self.conflicts.get((k, o))
                if c is None:
                    self.conflicts[(k, o)] = {cur, v}
                else:
                    c.add(v)

    def observe_send(self, k: Any, offset: int, value: Any) -> None:
        """Record that ``value`` was acknowledged at ``offset`` of key ``k``."""
        self.observe(k, ((offset, value),))

    def finish(self) -> None:
        """Compute dense indices and first/last indices once every observation is in."""
        conflicts = self.conflicts
        for k, fv in self._first_value.items():
            if not fv:
                continue
            offsets = sorted(fv)
            first: dict[Any, int] = {}
            last: dict[Any, int] = {}
            setdefault = first.setdefault
            if conflicts:
                for i, o in enumerate(offsets):
                    c = conflicts.get((k, o))
                    for v in (c if c is not None else (fv[o],)):
                        setdefault(v, i)
                        last[v] = i
            else:
                for i, o in enumerate(offsets):
                    v = fv[o]
                    setdefault(v, i)
                    last[v] = i
            self.offsets[k] = offsets
            self.first[k] = first
            self.last[k] = last
            if len(first) < len(offsets) or any(last[v] != i for v, i in first.items()):
                self.has_duplicates.add(k)

    def log_pairs(self, k: Any) -> list[list]:
        """``[[offset, first value observed there], ...]`` of key k in offset order (index i = entry i), as
        lists so that a read sequence of the history's own pairs compares equal to a run of it."""
        fv = self._first_value[k]
        return [[o, fv[o]] for o in self.offsets[k]]

    def values_at(self, k: Any, i: int) -> list:
        """Sorted values observed at index i of key k."""
        o = self.offsets[k][i]
        c = self.conflicts.get((k, o)) if self.conflicts else None
        return sorted(c, key=value_sort_key) if c is not None else [self._first_value[k][o]]

    def values_at_offset(self, k: Any, o: int) -> set:
        """The set of values observed at offset o of key k (empty when never observed)."""
        c = self.conflicts.get((k, o)) if self.conflicts else None
        if c is not None:
            return set(c)
        fv = self._first_value.get(k, {})
        return {fv[o]} if o in fv else set()

    @property
    def by_index(self) -> dict[Any, list[list]]:
        """``{k: [values_at(k, 0), values_at(k, 1), ...]}`` (built once, on demand)."""
        if self._by_index is None:
            self._by_index = {k: [self.values_at(k, i) for i in range(len(offs))]
                              for k, offs in self.offsets.items()}
        return self._by_index

    @property
    def log(self) -> dict[Any, dict[int, set]]:
        """``{k: {offset: set(values)}}`` (built once, on demand)."""
        if self._log is None:
            self._log = {k: {o: self.values_at_offset(k, o) for o in offs} for k, offs in self.offsets.items()}
        return self._log

    def vindex(self, k: Any, v: Any) -> int | None:
        """The first index at which ``v`` appears in key ``k``'s log, or None when never observed."""
        first = self.first.get(k)
        return None if first is None else first.get(v)

    def skipped(self, k: Any, i1: int, i2: int) -> list:
        """Values at indices strictly between i1 and i2, by index then value."""
        out: list = []
        for i in range(i1 + 1, i2):
            out.extend(self.values_at(k, i))
        return out
