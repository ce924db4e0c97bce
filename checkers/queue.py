"""Queue anomalies of a Kafka-style send/poll history: the definitions and the exact result shapes.

This docstring is the **contract** between this module and the Spark implementation
(``spark_analysis``): on the same history both must return identical ``queue_anomalies`` results for the
kinds in ``SPARK_KINDS``. The definitions follow Jepsen's Kafka workload (``jepsen.tests.kafka``) with
the deviations marked [dev], which make every result deterministic and expressible as joins, group-bys and
window functions. Do not change a shape silently: bump ``CONTRACT_VERSION`` and tell the Spark engineer.

Extraction
----------
* Client ops are those whose ``process`` is an int. Each invocation is paired with the next completion of
  the same process (same ``f``). An invocation never completed counts as type ``info``.
* An op is named by its **op index** = the history ``index`` of its completion (of the invocation when it
  never completed). Every ``op``/``ops``/``writer``/``reader``/``earlier``/``later`` field below is an op
  index. Ops are processed in op-index order.
* ``f`` is ``send``, ``poll``, ``txn``, ``assign`` or ``subscribe``; others (and nemesis ops) are ignored.
  A ``send`` or ``poll`` whose value is a micro-op list (Jepsen's own encoding, ``[["send", k, v], ...]``)
  is read as a ``txn``. A **transaction** is an op of ``f`` ``txn`` or with two or more micro-ops.
* **Sends** (micro-op order within the op): ``send`` with value ``[k, [offset, v]]`` or ``[k, v]``; the
  completion's value is used when it is a 2-list, else the invocation's. ``txn``: the completion's
  micro-op list when it is a list, else the invocation's; ``["send", k, [offset, v]]`` or
  ``["send", k, v]``. The offset is null when absent, not an integer, or the op's type is ``fail``.
* **Reads**: ``poll`` completion value ``{k: [[offset, v], ...]}`` and ``["poll", {k: [...]}]`` micro-ops
  of a ``txn`` completion. An op's read sequence for key k is the concatenation, in micro-op order, of
  its pairs for k; ``pos`` is the 0-based position in that sequence. A non-integer offset is null.
* Keys that are decimal strings (JSON object keys) become ints. Values are compared by equality; "sorted"
  lists of values are ascending (the schema makes values ints).
* ``ok read`` = a read row of an op whose type is ``ok``. ``writer(k, v)`` = the op with the smallest op
  index that sends v to k. A writer is **committed** if its type is ``ok``, or ``info`` and at least one of
  its sends (k', v') is read by some ok read of k'.

Version order (per key k)
-------------------------
* The log of k is the set of observations (k, offset, v) from (a) every read row with a non-null offset,
  of any op type (Kafka never lets a poll see unsafe data, so even info polls count); (b) every send with
  a non-null offset whose op is committed.
* ``index(k, o)`` = 0-based dense rank of offset o among the distinct offsets in k's log (gaps ignored).
* ``first(k, v)`` / ``last(k, v)`` = the smallest / largest index at which v is observed. "The index of v"
  below means ``first(k, v)`` [dev: Jepsen picks one value per offset by hash order].
* ``values_at(k, i)`` = the sorted values observed at index i. ``skipped`` lists = ``values_at`` of every
  index strictly between the two indices, concatenated in index order.

Anomaly kinds and result shapes (every kind maps to a list of dicts; lists sorted as stated)
---------------------------------------------------------------------------------------------
``inconsistent-offsets``: an offset of k observed with >= 2 distinct values.
    ``{"key", "offset", "values": sorted distinct values, "ops": sorted distinct op indices that observed
    any value at (k, offset) (read rows of any type, committed sends)}``. Sorted by (key, offset).
``duplicate``: a value observed at >= 2 distinct offsets of k.
    ``{"key", "value", "offsets": sorted distinct offsets}``. Sorted by (key, value).
``lost-write``: for key k with ok reads, ``bound`` = max index of the values read by ok reads of k (values
    with an index). Every value v in k's log with ``last(k, v) <= bound``, not read by any ok read of k,
    whose writer exists and is committed, is lost.
    ``{"key", "value", "offset": smallest offset v was observed at, "index": first(k, v),
    "max_read_index": bound, "writer", "max_read": smallest op index of an ok op that read k some value
    whose first index == bound}``. Sorted by (key, index, value).
``poll-skip`` / ``nonmonotonic-poll``: per process, ops (any completion type) with a non-empty read
    sequence of k are compared to the process's *baseline* for k: the last value of k read by its latest
    earlier ``ok`` op with a non-empty read sequence of k. delta = index(first value read now) - index(
    baseline value), both must have an index. delta > 1 -> poll-skip, delta < 1 -> nonmonotonic-poll.
    Only ok ops set the baseline. An ok or info ``assign``/``subscribe`` op of the process replaces the keys
    it follows (an info one is taken as applied, as Jepsen does): the baselines of keys not in its value are
    dropped, so a key the process acquires again is not compared with what it read before; with
    ``"seek_to_beginning": true`` (on the invoke or completion) it instead sets the baseline of every key
    in its value to the *log start*: value null, index -1, baseline op = the assign (so a consumer that
    seeks to the beginning and first reads index 2 skipped indices 0 and 1) [dev: Jepsen keeps the old
    baseline of a key still assigned].
    The **final** ops (``"final": true``) of a process are one fresh consumer reading from the beginning,
    with baselines of their own: a key's first final read is compared with the log start (baseline op =
    the final op itself, value null); a later final op of the process is compared with what its previous
    ok final op read of that key (a final reader may poll several times, as Jepsen's does); an ok/info
    final ``assign``/``subscribe`` starts them over. Final ops neither use nor change the other baselines
    [dev].
    [dev: Jepsen lets an empty read of k reset the baseline; here empty reads are ignored.]
    poll-skip: ``{"key", "process", "ops": [baseline op, op], "values": [v, v'], "delta", "skipped"}``;
    nonmonotonic-poll: the same without ``skipped``. Both sorted by (key, ops[1]).
``int-poll-skip`` / ``int-nonmonotonic-poll``: within one op's read sequence of k, each consecutive pair
    (v1 at pos-1, v2 at pos) with indices: delta = index(v2) - index(v1); > 1 skip, < 1 nonmonotonic.
    ``{"key", "op", "pos", "values": [v1, v2], "delta"}`` (+ ``"skipped"`` for int-poll-skip). Sorted by
    (key, op, pos). Keys named in the op's ``rebalance_log`` (``[{"keys": [k, ...]}, ...]`` on the
    completion: the consumer was rebalanced while the op ran) are not checked, as in Jepsen.
``nonmonotonic-send``: per process, ``ok``/``info`` ops that send to k, in op order: the first value this
    op sends to k vs the last value the process's previous such op sent to k; both with an index and
    delta < 1. An ok/info ``assign``/``subscribe`` of the process drops the keys not in its value, as for
    polls (Jepsen). ``{"key", "process", "ops": [prev, op], "values": [v, v'], "delta"}``. Sorted by
    (key, ops[1]).
``int-nonmonotonic-send`` / ``int-send-skip``: within one ``ok``/``info`` op, consecutive sends to k (pos =
    position among the op's sends to k), both with an index: delta < 1 nonmonotonic, delta > 1 skip (another
    value sits between two sends of one transaction). ``{"key", "op", "pos", "values", "delta"}`` (+
    ``"skipped"`` for int-send-skip). Sorted by (key, op, pos). [dev: Jepsen also looks at fail ops; a
    fail op's value only has an index when some read returned it, which is a G1a.]
``G1a`` (aborted read): an ok read of (k, v) whose writer's type is ``fail``.
    ``{"key", "value", "writer", "reader"}``, one per distinct (key, value, reader). Sorted by
    (key, value, reader).
``precommitted-read``: an op (any completion type) that reads (k, v) and also sends (k, v).
    ``{"key", "value", "op"}``, distinct. Sorted by (key, value, op).
``unseen``: an ``ok`` send (k, v) not read by any ok read of k completed at or before the recovery
    deadline (``options["unseen_deadline_ns"]``, history time; default: no limit). ``{"key", "value",
    "offset": its acknowledged offset or null, "writer"}``. Sorted by (key, value). Whether an unseen
    value is a violation is the profile's decision (it is one only after a final phase).
``acked-unreadable``: only when the history has a final phase (else ``[]``): an ``ok`` send (k, o, v) for
    which no ok read of a **final** op returned (o, v) for k (with o null: v at any offset).
    ``{"key", "offset", "value", "writer", "final_values": sorted distinct values final ok reads returned
    at (k, o) ([] when o is null)}``, plus ``"unreached": true`` when no ok final op reached k at all (k
    neither among its reads nor its ``ends``: e.g. a KIP-966 partition left leaderless, K10): such a
    write is not known to be lost, so the checkers judge those rows ``unknown``. Sorted by (key, offset
    (null first), value).
``realtime-order``: for each ``ok`` send B -> (k, oB, vB) with non-null offset: among ok sends A -> (k, oA,
    vA) with non-null offset and ``A.complete_time < B.invoke_time`` take the one with the largest oA
    (ties: smallest op index, then micro-op order). If oA >= oB: ``{"key", "earlier": A, "later": B,
    "offsets": [oA, oB], "values": [vA, vB]}``. Sorted by (key, later, offsets[1]).
``hwm-regression``: ok ops whose completion carries ``"hwm": {k: int}`` (the high watermark the consumer
    saw; for final ops ``"ends": {k: int}``, the end offsets the final read went up to, counts as well): for B, the ok op A with ``A.complete_time < B.invoke_time`` and the largest hwm for k (ties:
    smallest op index); if hwm_A > hwm_B: ``{"key", "earlier", "later", "hwms": [hA, hB]}``. Sorted by
    (key, later).
``G0``, ``G1c``, ``G0-realtime``, ``G1c-realtime`` (not in SPARK_KINDS): dependency cycles between ok (and
    committed info) ops with at least one send or read. ww: writer(values_at(k, i-1)) -> writer(values_at(
    k, i)); wr: writer(k, v) -> each op that ok-read (k, v); rt: A -> B when A.complete_time <
    B.invoke_time. Each strongly connected component of a graph (wr; wr+rt; ww; ww+wr; ww+rt; ww+wr+rt,
    in this order) yields the shortest cycle through its smallest op; it is reported under the class its
    edge types give (only ww: G0; ww+wr: G1c; rt without wr: G0-realtime; rt and wr: G1c-realtime), once
    per set of ops. The wr and wr+rt graphs come first so that a cycle without any ww edge - Jepsen's
    G1c without ``:ww-deps``, which no read-committed execution produces - is found even where its
    component also holds a shorter cycle with ww edges.
    ``{"cycle": [op indices, from the smallest, in edge order], "edges": [{"from", "to", "type", "key",
    "value"}, ...]}`` (rt edges have key and value null; ww edges carry the later value). Sorted by
    (len(cycle), cycle).

Final phase (convention for the harness)
----------------------------------------
The final phase (heal everything, then read everything back) is marked on the ops themselves: every op of
the final phase (the ``assign`` with ``"seek_to_beginning": true`` and the polls) carries the op field
``"final": true`` on its invocation (the completion may repeat it). The history "has a final phase" iff at
least one client op is marked final. Use fresh processes for the final readers.

``options`` (a dict or None): ``unseen_deadline_ns`` (int | None), ``cycles`` (bool, default True: compute
the four cycle kinds; when False they are ``[]``).

Contract changes (result shapes unchanged since version 1)
-----------------------------------------------------------
* v3: ``subscribe`` is read like ``assign`` (poll-skip and nonmonotonic-poll baselines); ok/info
  ``assign``/``subscribe`` ops drop the nonmonotonic-send baselines of keys not in their value; a
  process's later final ops continue from its earlier ones instead of each starting at the log start;
  keys in an op's ``rebalance_log`` are skipped by the internal poll kinds; new kind ``int-send-skip``
  (not yet in SPARK_KINDS). On histories the harness writes (no ``subscribe``, one final poll per
  process, no ``rebalance_log``) v2 and v3 differ only where a process sent to a key, re-assigned away
  from it and back, and then sent to it at a lower index.
* v2 (11:50 UTC): poll-skip baselines: an ``assign`` with ``seek_to_beginning`` sets the *log start*
  baseline (index -1, value null) instead of dropping baselines; **final** ops are compared with the log
  start and neither use nor set baselines. ``hwm-regression`` also reads ``"ends"`` of final ops. A
  ``send``/``poll`` op whose value is a micro-op list (Jepsen's encoding) is read as a ``txn``.
"""

from __future__ import annotations

import gc
import operator
import os
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from checkers.forked import Forked
from checkers.queue_extract import OpRec, VersionOrders, extract, value_sort_key
from checkers.queue_realtime import realtime_checks

CONTRACT_VERSION = 3

KINDS = (
    "inconsistent-offsets", "duplicate", "lost-write", "poll-skip", "nonmonotonic-poll", "int-poll-skip",
    "int-nonmonotonic-poll", "nonmonotonic-send", "int-nonmonotonic-send", "int-send-skip", "G1a",
    "precommitted-read", "unseen", "acked-unreadable", "realtime-order", "hwm-regression", "G0", "G1c",
    "G0-realtime", "G1c-realtime",
)
CYCLE_KINDS = ("G0", "G1c", "G0-realtime", "G1c-realtime")
# Kinds the Spark engine does not compute (yet): the cycles, and int-send-skip (new in contract v3).
SPARK_KINDS = tuple(k for k in KINDS if k not in CYCLE_KINDS and k != "int-send-skip")


_first = operator.itemgetter(0)
_second = operator.itemgetter(1)


def _none_first(x: Any) -> tuple:
    return (0, 0) if x is None else (1, x)


class QueueAnalysis:
    """The shared intermediate structures (writers, ok reads, version orders) of one history."""

    def __init__(self, ops: Iterable[dict], options: dict | None = None):
        """``ops``: the history's ops in file order, read once (a list, or ``history_fast.iter_ops``)."""
        self.options = options or {}
        self.recs: list[OpRec] = extract(ops)
        self.writer: dict[tuple, OpRec] = {}
        self.ok_read_values: dict[Any, set] = defaultdict(set)
        self.has_final = any(r.final for r in self.recs)
        vo = self.vo = VersionOrders()
        observe = vo.observe
        writer = self.writer
        ok_read_values = self.ok_read_values
        # One pass over every read (the hot loop): ok-read values and the read part of the version order.
        for r in self.recs:
            for k, v, _ in r.sends:
                if (k, v) not in writer:  # recs are in op-index order, so the first is the smallest
                    writer[(k, v)] = r
            if r.reads:
                ok = r.type == "ok"
                for k, seq in r.reads.items():
                    if ok:
                        ok_read_values[k].update(map(_second, seq))
                    observe(k, seq)
        self.committed_info: set[int] = set()
        for r in self.recs:
            if r.type == "info" and r.sends:
                if any(v in ok_read_values.get(k, ()) for k, v, _ in r.sends):
                    self.committed_info.add(r.index)
        for r in self.recs:
            if r.sends and self.committed(r):
                observe_send = vo.observe_send
                for k, v, o in r.sends:
                    if o is not None:
                        observe_send(k, o, v)
        vo.finish()

    def committed(self, r: OpRec) -> bool:
        """Whether a writer must have taken effect: ok, or info with one of its sends read by an ok read."""
        return r.type == "ok" or r.index in self.committed_info


# ---------------------------------------------------------------------------------------------- checks

def inconsistent_offsets(a: QueueAnalysis) -> list[dict]:
    """Offsets observed with two or more values."""
    out = [{"key": k, "offset": o, "values": sorted(vals, key=value_sort_key), "ops": []}
           for (k, o), vals in a.vo.conflicts.items()]
    if not out:
        return out
    wanted = {(e["key"], e["offset"]): set() for e in out}
    for r in a.recs:
        for k, seq in r.reads.items():
            for o, _ in seq:
                s = wanted.get((k, o))
                if s is not None:
                    s.add(r.index)
        if r.sends and a.committed(r):
            for k, _, o in r.sends:
                s = wanted.get((k, o))
                if s is not None:
                    s.add(r.index)
    for e in out:
        e["ops"] = sorted(wanted[(e["key"], e["offset"])])
    out.sort(key=lambda e: (e["key"], e["offset"]))
    return out


def duplicates(a: QueueAnalysis) -> list[dict]:
    """Values observed at two or more offsets of one key (first index != last index)."""
    out = []
    vo = a.vo
    for k, first in vo.first.items():
        last = vo.last[k]
        dups = [v for v, i in first.items() if last[v] != i]
        if not dups:
            continue
        offsets = vo.offsets[k]
        for v in dups:
            offs = [o for o in offsets[first[v]:last[v] + 1] if v in vo.values_at_offset(k, o)]
            out.append({"key": k, "value": v, "offsets": offs})
    out.sort(key=lambda e: (e["key"], value_sort_key(e["value"])))
    return out


def lost_writes(a: QueueAnalysis) -> list[dict]:
    """Committed values below the highest read index that no ok read ever returned."""
    out = []
    vo = a.vo
    for k, read_vals in a.ok_read_values.items():
        first = vo.first.get(k)
        if not first:
            continue
        bound = -1
        for v in read_vals:
            i = first.get(v)
            if i is not None and i > bound:
                bound = i
        if bound < 0:
            continue
        last = vo.last[k]
        lost = [v for v, li in last.items() if li <= bound and v not in read_vals]
        if not lost:
            continue
        lost = [v for v in lost if (w := a.writer.get((k, v))) is not None and a.committed(w)]
        if not lost:
            continue
        bound_vals = {v for v, i in first.items() if i == bound}
        max_read = None
        for r in a.recs:
            if r.type == "ok" and k in r.reads and any(v in bound_vals for _, v in r.reads[k]):
                max_read = r.index
                break
        for v in lost:
            out.append({"key": k, "value": v, "offset": vo.offsets[k][first[v]], "index": first[v],
                        "max_read_index": bound, "writer": a.writer[(k, v)].index, "max_read": max_read})
    out.sort(key=lambda e: (e["key"], e["index"], value_sort_key(e["value"])))
    return out


_LOG_START = object()  # baseline after seek_to_beginning: "just before index 0"


def poll_skips(a: QueueAnalysis) -> tuple[list[dict], list[dict]]:
    """Per-process skips and backward jumps between successive polls of one key."""
    skips, nonmono = [], []
    vo = a.vo
    firsts, empty = vo.first, {}
    baselines: dict[int, dict[Any, tuple[int, Any]]] = defaultdict(dict)
    # A process's final ops are one fresh consumer reading from the beginning: their own baselines.
    final_bases: dict[int, dict[Any, tuple[int, Any]]] = defaultdict(dict)
    for r in a.recs:
        if r.assign is not None:  # assign or subscribe: the keys the process follows from now on
            if r.type in ("ok", "info"):  # a crashed assign is taken as applied, as Jepsen does
                base = baselines[r.process]
                if r.seek:
                    base.clear()
                    for k in r.assign:
                        base[k] = (r.index, _LOG_START)
                else:
                    keep = set(r.assign)
                    for k in [k for k in base if k not in keep]:
                        del base[k]
                if r.final:
                    final_bases[r.process].clear()
            continue
        if not r.reads:
            continue
        if r.final:
            base, start = final_bases[r.process], (r.index, _LOG_START)
        else:
            base, start = baselines[r.process], None
        for k, seq in r.reads.items():
            if not seq:
                continue
            prev = base.get(k, start)
            if prev is not None:
                prev_op, v = prev
                v2 = seq[0][1]
                fk = firsts.get(k, empty)  # vo.vindex, inlined (hot)
                i1 = -1 if v is _LOG_START else fk.get(v)
                i2 = fk.get(v2)
                if v is _LOG_START:
                    v = None
                if i1 is not None and i2 is not None:
                    delta = i2 - i1
                    if delta > 1:
                        skips.append({"key": k, "process": r.process, "ops": [prev_op, r.index],
                                      "values": [v, v2], "delta": delta, "skipped": vo.skipped(k, i1, i2)})
                    elif delta < 1:
                        nonmono.append({"key": k, "process": r.process, "ops": [prev_op, r.index],
                                        "values": [v, v2], "delta": delta})
            if r.type == "ok":
                base[k] = (r.index, seq[-1][1])
    skips.sort(key=lambda e: (e["key"], e["ops"][1]))
    nonmono.sort(key=lambda e: (e["key"], e["ops"][1]))
    return skips, nonmono


def internal_polls(a: QueueAnalysis) -> tuple[list[dict], list[dict]]:
    """Skips and backward steps inside one op's read sequence of a key."""
    skips, nonmono = [], []
    vo = a.vo
    # A read sequence of a key without duplicates that equals a run of the key's log (offset order, the
    # first value observed at each offset) steps one index at a time: nothing to report, and one list
    # comparison in C shows it (the common case: a consumer reads a contiguous batch).
    runs = {k: (vo.first[k], vo.log_pairs(k)) for k in vo.offsets if k not in vo.has_duplicates}
    for r in a.recs:
        reb = r.rebalanced
        for k, seq in r.reads.items():
            n = len(seq)
            if n < 2 or (reb and k in reb):
                continue
            run = runs.get(k)
            if run is not None:
                i = run[0].get(seq[0][1])
                if i is not None and seq == run[1][i:i + n]:
                    continue
            first = vo.first.get(k, {})
            # Without duplicates a value's index is its offset's dense rank, so adjacent offsets are
            # adjacent indices (delta 1) and need no lookups.
            dense = k not in vo.has_duplicates
            prev_i = first.get(seq[0][1])
            for pos in range(1, n):
                if dense and prev_i is not None:
                    o1, o2 = seq[pos - 1][0], seq[pos][0]
                    if type(o1) is int and o2 == o1 + 1 and type(o2) is int:
                        prev_i += 1
                        continue
                i2 = first.get(seq[pos][1])
                if prev_i is not None and i2 is not None:
                    delta = i2 - prev_i
                    if delta > 1:
                        skips.append({"key": k, "op": r.index, "pos": pos,
                                      "values": [seq[pos - 1][1], seq[pos][1]], "delta": delta,
                                      "skipped": vo.skipped(k, prev_i, i2)})
                    elif delta < 1:
                        nonmono.append({"key": k, "op": r.index, "pos": pos,
                                        "values": [seq[pos - 1][1], seq[pos][1]], "delta": delta})
                prev_i = i2
    skips.sort(key=lambda e: (e["key"], e["op"], e["pos"]))
    nonmono.sort(key=lambda e: (e["key"], e["op"], e["pos"]))
    return skips, nonmono


def _sends_by_key(r: OpRec) -> dict[Any, list]:
    by_key: dict[Any, list] = {}
    for k, v, _ in r.sends:
        by_key.setdefault(k, []).append(v)
    return by_key


def send_order(a: QueueAnalysis) -> tuple[list[dict], list[dict], list[dict]]:
    """nonmonotonic-send (across a process's ops), int-nonmonotonic-send and int-send-skip (inside one)."""
    ext, internal, skips = [], [], []
    vo = a.vo
    firsts, empty = vo.first, {}
    last_send: dict[int, dict[Any, tuple[int, Any]]] = defaultdict(dict)
    for r in a.recs:
        if r.type not in ("ok", "info"):
            continue
        if r.assign is not None:  # assign or subscribe: keys the process no longer holds are forgotten
            base = last_send.get(r.process)
            if base:
                keep = set(r.assign)
                for k in [k for k in base if k not in keep]:
                    del base[k]
            continue
        if not r.sends:
            continue
        base = last_send[r.process]
        for k, vals in _sends_by_key(r).items():
            prev = base.get(k)
            fk = firsts.get(k, empty)  # vo.vindex, inlined (hot)
            if prev is not None:
                i1, i2 = fk.get(prev[1]), fk.get(vals[0])
                if i1 is not None and i2 is not None and i2 - i1 < 1:
                    ext.append({"key": k, "process": r.process, "ops": [prev[0], r.index],
                                "values": [prev[1], vals[0]], "delta": i2 - i1})
            for pos in range(1, len(vals)):
                i1, i2 = fk.get(vals[pos - 1]), fk.get(vals[pos])
                if i1 is None or i2 is None:
                    continue
                delta = i2 - i1
                if delta < 1:
                    internal.append({"key": k, "op": r.index, "pos": pos,
                                     "values": [vals[pos - 1], vals[pos]], "delta": delta})
                elif delta > 1:
                    skips.append({"key": k, "op": r.index, "pos": pos, "values": [vals[pos - 1], vals[pos]],
                                  "delta": delta, "skipped": vo.skipped(k, i1, i2)})
            base[k] = (r.index, vals[-1])
    ext.sort(key=lambda e: (e["key"], e["ops"][1]))
    internal.sort(key=lambda e: (e["key"], e["op"], e["pos"]))
    skips.sort(key=lambda e: (e["key"], e["op"], e["pos"]))
    return ext, internal, skips


def aborted_reads(a: QueueAnalysis) -> list[dict]:
    """G1a: ok reads of values whose send certainly failed."""
    out = set()
    failed = {kv: w for kv, w in a.writer.items() if w.type == "fail"}
    # Only a failed value that some ok read returned can be an aborted read (the common case: none).
    orv = a.ok_read_values
    if not any(v in orv.get(k, ()) for k, v in failed):
        return []
    for r in a.recs:
        if r.type != "ok":
            continue
        for k, seq in r.reads.items():
            for _, v in seq:
                w = failed.get((k, v))
                if w is not None:
                    out.add((k, v, w.index, r.index))
    rows = [{"key": k, "value": v, "writer": w, "reader": rd} for k, v, w, rd in out]
    rows.sort(key=lambda e: (e["key"], value_sort_key(e["value"]), e["reader"]))
    return rows


def precommitted_reads(a: QueueAnalysis) -> list[dict]:
    """Ops that read a value they themselves send."""
    out = set()
    for r in a.recs:
        if not r.sends or not r.reads:
            continue
        for k, v, _ in r.sends:
            seq = r.reads.get(k)
            if seq and any(v == rv for _, rv in seq):
                out.add((k, v, r.index))
    rows = [{"key": k, "value": v, "op": op} for k, v, op in out]
    rows.sort(key=lambda e: (e["key"], value_sort_key(e["value"]), e["op"]))
    return rows


def unseen(a: QueueAnalysis) -> list[dict]:
    """ok sends never returned by an ok read completed by the recovery deadline."""
    deadline = a.options.get("unseen_deadline_ns")
    if deadline is None:
        seen = a.ok_read_values
    else:
        seen = defaultdict(set)
        for r in a.recs:
            if r.type == "ok" and r.reads and r.complete_time is not None and r.complete_time <= deadline:
                for k, seq in r.reads.items():
                    seen[k].update(v for _, v in seq)
    out = []
    for r in a.recs:
        if r.type != "ok":
            continue
        for k, v, o in r.sends:
            if v not in seen.get(k, ()):
                out.append({"key": k, "value": v, "offset": o, "writer": r.index})
    out.sort(key=lambda e: (e["key"], value_sort_key(e["value"])))
    return out


_MISSING = object()


class _Several(set):
    """Several values read at one offset by final reads (a plain value is the common case)."""


def acked_unreadable(a: QueueAnalysis) -> list[dict]:
    """ok sends that the final phase did not read back at their acknowledged offset."""
    if not a.has_final:
        return []
    finals = [r for r in a.recs if r.final and r.type == "ok"]
    final_at: dict[Any, dict] = {}   # k -> {o: value, or a _Several set when final reads disagree}
    for r in finals:
        for k, seq in r.reads.items():
            at = final_at.get(k)
            if at is None:
                # Common case: the first final read of k, one value per offset (built in C by dict()).
                at = dict(seq)
                if len(at) == len(seq) and None not in at:
                    final_at[k] = at
                    continue
                at = final_at[k] = {}
            for o, v in seq:
                if o is None:
                    continue
                cur = at.get(o, _MISSING)
                if cur is _MISSING:
                    at[o] = v
                elif isinstance(cur, _Several):
                    cur.add(v)
                elif cur != v:
                    at[o] = _Several((cur, v))
    reached = set(final_at)  # keys some ok final read reached, even when it found them empty
    for r in finals:
        reached.update(r.reads)
        if r.hwm:
            reached.update(r.hwm)
    final_vals: dict[Any, set] | None = None  # k -> values any final ok read returned (for null offsets)
    out = []
    empty: dict = {}
    for r in a.recs:
        if r.type != "ok" or not r.sends:
            continue
        for k, v, o in r.sends:
            if o is None:
                if final_vals is None:
                    final_vals = defaultdict(set)
                    for fr in finals:
                        for fk, seq in fr.reads.items():
                            final_vals[fk].update([p[1] for p in seq])
                if v not in final_vals.get(k, ()):
                    out.append({"key": k, "offset": None, "value": v, "writer": r.index, "final_values": []})
            else:
                got = final_at.get(k, empty).get(o, _MISSING)
                if got is _MISSING:
                    out.append({"key": k, "offset": o, "value": v, "writer": r.index, "final_values": []})
                elif isinstance(got, _Several):
                    if v not in got:
                        out.append({"key": k, "offset": o, "value": v, "writer": r.index,
                                    "final_values": sorted(got, key=value_sort_key)})
                elif got != v:
                    out.append({"key": k, "offset": o, "value": v, "writer": r.index, "final_values": [got]})
    for row in out:
        if row["key"] not in reached:
            row["unreached"] = True
    out.sort(key=lambda e: (e["key"], _none_first(e["offset"]), value_sort_key(e["value"])))
    return out


def unreached_keys(rows: list[dict]) -> list:
    """The keys of ``acked-unreadable`` rows that no final read reached (their writes are unknown)."""
    return sorted({row["key"] for row in rows if row.get("unreached")}, key=value_sort_key)


class no_gc:
    """Pause the cyclic garbage collector: the analysis allocates millions of small acyclic objects, and
    collections triggered by them cost a third of the time on large histories. Reference counting still
    frees everything; the collector runs again on exit."""

    def __enter__(self):
        self.was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        if self.was_enabled:
            gc.enable()


def queue_anomalies(ops: list[dict], options: dict | None = None) -> dict[str, list[dict]]:
    """Every anomaly kind of the module docstring -> its list of result dicts (empty lists included)."""
    return anomalies_of(QueueAnalysis(ops, options))


# Smaller histories are checked in one process: a second analysis in a forked child (``start_side``)
# costs more than it saves. History ops when the history is in memory, bytes when it is a file.
PARALLEL_MIN_OPS = 100_000
PARALLEL_MIN_BYTES = 20_000_000


def _side_kinds(a: QueueAnalysis) -> dict[str, list[dict]]:
    """The kinds a side process computes: the cycle search (the longest single check) and one small
    check that balances the two processes' work on large histories."""
    from checkers.queue_cycles import find_cycles

    res = find_cycles(a)
    res["precommitted-read"] = precommitted_reads(a)
    return res


def _side_from_file(path: str, options: dict) -> dict[str, list[dict]]:
    """``_side_kinds`` of the history file, built from its ops one at a time: the child never holds the
    history itself, only the analysis (half the memory; on this kind of VM two processes that each touch
    gigabytes of fresh memory slow each other down far more than two that compute)."""
    from checkers.history_fast import NeedsReference, iter_ops, read_ops

    try:
        a = QueueAnalysis(iter_ops(path), options)
    except NeedsReference:
        a = QueueAnalysis(read_ops(path), options)
    return _side_kinds(a)


def start_side(source: list[dict] | str | os.PathLike, options: dict | None = None) -> Forked | None:
    """Start computing ``_side_kinds`` (the cycle kinds and precommitted-read) in a forked child while
    this process computes the rest (``anomalies_of(a, side)``), so a large check uses both cores; only
    the child's small result crosses back (``checkers.forked``), and the kinds are the same as computed
    in one process.

    ``source``: the history file (best: call this before reading it; the child reads it too, one op at a
    time, keeping only its analysis) or the history already read (the child shares it copy-on-write,
    which costs page copies in both processes). None when not worth it: a history under
    ``PARALLEL_MIN_OPS`` ops / ``PARALLEL_MIN_BYTES`` bytes, ``options["parallel"]`` False, or the cycle
    kinds not wanted. Call it with the garbage collector paused (``no_gc``), as the analysis itself is.
    """
    options = options or {}
    if not options.get("parallel", True) or not options.get("cycles", True):
        return None
    if isinstance(source, list):
        if len(source) < PARALLEL_MIN_OPS:
            return None
        ops = source
        side = Forked(lambda: _side_kinds(QueueAnalysis(ops, options)))
    else:
        path = os.fspath(source)
        try:
            if os.path.getsize(path) < PARALLEL_MIN_BYTES:
                return None
        except OSError:
            return None
        side = Forked(lambda: _side_from_file(path, options))
    return side if side.pid is not None else None


def anomalies_of(a: QueueAnalysis, side: Forked | None = None) -> dict[str, list[dict]]:
    """Like ``queue_anomalies`` on an already built analysis (the checker reuses it for details).

    ``side``: a ``start_side`` handle for the same history and options; its kinds are taken from it
    (the result is the same as computed here)."""
    res: dict[str, list[dict]] = {}
    try:
        res["inconsistent-offsets"] = inconsistent_offsets(a)
        res["duplicate"] = duplicates(a)
        res["lost-write"] = lost_writes(a)
        res["poll-skip"], res["nonmonotonic-poll"] = poll_skips(a)
        res["int-poll-skip"], res["int-nonmonotonic-poll"] = internal_polls(a)
        res["nonmonotonic-send"], res["int-nonmonotonic-send"], res["int-send-skip"] = send_order(a)
        res["G1a"] = aborted_reads(a)
        res["unseen"] = unseen(a)
        res["acked-unreadable"] = acked_unreadable(a)
        res["realtime-order"], res["hwm-regression"] = realtime_checks(a)
        if side is not None:
            res.update(side.result())
        else:
            res["precommitted-read"] = precommitted_reads(a)
            if a.options.get("cycles", True):
                from checkers.queue_cycles import find_cycles
                res.update(find_cycles(a))
    finally:
        if side is not None:
            side.cancel()
    if not a.options.get("cycles", True):
        for kind in CYCLE_KINDS:
            res[kind] = []
    return {kind: res[kind] for kind in KINDS}
