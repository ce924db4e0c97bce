"""The per-key part of the queue checker: every kind but the cycles is a function of one key's records.

The definitions are those of ``checkers/queue/anomalies.py`` (its docstring is the contract). Each kind's rows are
about one key and are sorted by key first, and what a key's rows depend on is that key's part of each
record (its sends, its reads, its high watermark, whether an ``assign`` names it) plus three things of the
whole history: whether it has a final phase, the recovery deadline (an option) and which ``info`` ops
are committed (one of their sends was read by an ok read, possibly of another key). So the same
functions serve two callers:

* the Python checker (``checkers.queue.anomalies_of``) runs ``key_anomalies`` once on the analysis of the
  whole history (all keys at once, the fastest way in one process);
* the Spark engine (``spark_analysis.keyed``) runs it once per key, on ``QueueAnalysis(None, recs=...)``
  built from that key's rows of the columnar history (``checkers.queue.rows``), with ``has_final`` and
  the cross-key commitments computed beforehand by Spark.

``key_records`` splits records into per-key records the way the columnar history does, so tests can show
that the key-by-key results, merged, are the whole history's (tests/checkers/test_queue_keys.py).
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from checkers.queue.extract import OpRec, VersionOrders, extract, value_sort_key
from checkers.queue.realtime import realtime_checks

# Every kind computed here, in the contract's order (checkers.queue.KINDS without the cycle kinds).
KEY_KINDS = (
    "inconsistent-offsets", "duplicate", "lost-write", "poll-skip", "nonmonotonic-poll", "int-poll-skip",
    "int-nonmonotonic-poll", "nonmonotonic-send", "int-nonmonotonic-send", "int-send-skip", "G1a",
    "precommitted-read", "unseen", "acked-unreadable", "realtime-order", "hwm-regression",
)

_first = operator.itemgetter(0)
_second = operator.itemgetter(1)


def _none_first(x: Any) -> tuple:
    return (0, 0) if x is None else (1, x)


class QueueAnalysis:
    """The shared intermediate structures (writers, ok reads, version orders) of a history, or of the
    records of some of its keys (``for_keys``)."""

    def __init__(self, ops: Iterable[dict] | None, options: dict | None = None, *,
                 recs: list[OpRec] | None = None, has_final: bool | None = None,
                 committed_elsewhere: Iterable[int] = ()):
        """``ops``: the history's ops in file order, read once (a list, or ``checkers.history.jsonl.iter_ops``).

        Or ``recs``: records already extracted, in op-index order (``key_records``: one key's part of
        each record), with what only the whole history knows: ``has_final`` (whether any record is
        final) and ``committed_elsewhere`` (info ops committed by an ok read of another key).
        """
        self.options = options or {}
        self.recs: list[OpRec] = extract(ops) if recs is None else recs
        self.writer: dict[tuple, OpRec] = {}
        self.ok_read_values: dict[Any, set] = defaultdict(set)
        self.has_final = any(r.final for r in self.recs) if has_final is None else has_final
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
        self.committed_info: set[int] = set(committed_elsewhere)
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



def key_anomalies(a: QueueAnalysis, without: Iterable[str] = ()) -> dict[str, list[dict]]:
    """Every kind of ``KEY_KINDS`` (except those in ``without``) -> its rows, for the keys of ``a``."""
    skip = set(without)
    res: dict[str, list[dict]] = {}
    res["inconsistent-offsets"] = inconsistent_offsets(a)
    res["duplicate"] = duplicates(a)
    res["lost-write"] = lost_writes(a)
    res["poll-skip"], res["nonmonotonic-poll"] = poll_skips(a)
    res["int-poll-skip"], res["int-nonmonotonic-poll"] = internal_polls(a)
    res["nonmonotonic-send"], res["int-nonmonotonic-send"], res["int-send-skip"] = send_order(a)
    res["G1a"] = aborted_reads(a)
    if "precommitted-read" not in skip:
        res["precommitted-read"] = precommitted_reads(a)
    res["unseen"] = unseen(a)
    res["acked-unreadable"] = acked_unreadable(a)
    res["realtime-order"], res["hwm-regression"] = realtime_checks(a)
    return {kind: res[kind] for kind in KEY_KINDS if kind in res}


# ------------------------------------------------------------------------------------- one key at a time

def record_keys(r: OpRec) -> list:
    """The keys a record's per-key rows are about: those it sends to, reads (an empty read counts) or has
    a high watermark of, in first-seen order. An ``assign``/``subscribe`` concerns every key (it keeps or
    drops each one): it has no keys of its own here, ``key_records`` gives it to every key."""
    keys = dict.fromkeys(k for k, _, _ in r.sends)
    keys.update(dict.fromkeys(r.reads))
    if r.hwm:
        keys.update(dict.fromkeys(r.hwm))
    return list(keys)


def restrict(r: OpRec, k: Any) -> OpRec:
    """Key ``k``'s part of record ``r``: the same op with only what concerns ``k``."""
    out = OpRec(r.index, r.invoke_index, r.process, r.f, r.type, r.invoke_time, r.complete_time, r.final)
    out.sends = [s for s in r.sends if s[0] == k]
    if k in r.reads:
        out.reads = {k: r.reads[k]}
    if r.hwm and k in r.hwm:
        out.hwm = {k: r.hwm[k]}
    if r.assign is not None:
        out.assign = [k] if k in r.assign else []
    out.seek = r.seek
    out.txn = r.txn
    if k in r.rebalanced:
        out.rebalanced = frozenset((k,))
    return out


def key_records(recs: Iterable[OpRec]) -> dict[Any, list[OpRec]]:
    """Records split by key (``restrict``), each key's in the order of ``recs``; every ``assign`` and
    ``subscribe`` record goes to every key that some other record concerns."""
    recs = list(recs)
    by_key: dict[Any, list[OpRec]] = {}
    for r in recs:
        if r.assign is None:
            for k in record_keys(r):
                by_key.setdefault(k, [])
    for k, out in by_key.items():
        for r in recs:
            if r.assign is not None or k in r.reads or (r.hwm and k in r.hwm) or any(s[0] == k for s in r.sends):
                out.append(restrict(r, k))
    return by_key


def merge_keys(parts: Iterable[dict[str, list[dict]]]) -> dict[str, list[dict]]:
    """Per-key results (each ``key_anomalies`` of one key) merged into one result: rows by key, each key's
    rows in their own order, as the whole history's analysis returns them."""
    merged: dict[str, list[tuple]] = {kind: [] for kind in KEY_KINDS}
    for part in parts:
        for kind, rows in part.items():
            merged[kind].extend((value_sort_key(row["key"]), n, row) for n, row in enumerate(rows))
    return {kind: [row for _, _, row in sorted(rows, key=operator.itemgetter(0, 1))]
            for kind, rows in merged.items()}


def analysis_of_key(recs: list[OpRec], options: dict | None, has_final: bool,
                    committed_elsewhere: Iterable[int] = ()) -> QueueAnalysis:
    """The analysis of one key's records (``key_records``), with the whole history's facts."""
    return QueueAnalysis(None, options, recs=recs, has_final=has_final, committed_elsewhere=committed_elsewhere)


def committed_across_keys(a: QueueAnalysis) -> set[int]:
    """The committed ``info`` ops of ``a`` that send to two or more keys: the only ones whose commitment
    one key's records cannot tell (an ok read of another key may be what commits them)."""
    return {r.index for r in a.recs
            if r.index in a.committed_info and len({k for k, _, _ in r.sends}) > 1}
