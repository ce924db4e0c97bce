"""The realtime kinds of the queue checker: ``realtime-order`` and ``hwm-regression``.

Definitions and result shapes: ``checkers/queue/anomalies.py``. Both compare an op B with the ops completed strictly
before B was invoked, so one sweep over invocations and completions in time order finds them
(``realtime_checks``). A valid history has neither, and proving that takes a sort and a running maximum
per key, which numpy does in C (``_certainly_clean``); the sweep runs only when that proof fails, so
the rows are always the sweep's.
"""

from __future__ import annotations

import operator
from itertools import chain, islice

import numpy as np

from checkers.queue.extract import OpRec

_first = operator.itemgetter(0)


def _timed_ok(a) -> list[OpRec]:
    """The ok ops with both an invocation and a completion time: the only ones either kind compares."""
    return [r for r in a.recs if r.type == "ok" and r.complete_time is not None and r.invoke_time is not None]


def _sweep(a) -> list[tuple[int, OpRec]]:
    """Invocations and completions of ok ops as ``(0 | 1, rec)`` in time order, invocations first among
    equal times (so ``A.complete_time < B.invoke_time`` holds exactly for completions seen earlier
    and flushed before a later time). History order is time order when the times never decrease, which
    HistoryWriter guarantees; otherwise the events are sorted."""
    recs = _timed_ok(a)
    size = max((r.index for r in recs), default=-1) + 1
    slots: list = [None] * size
    for r in recs:
        slots[r.invoke_index] = (r.invoke_time, 0, r)
        slots[r.index] = (r.complete_time, 1, r)
    events = [e for e in slots if e is not None]
    times = list(map(_first, events))
    if any(map(operator.gt, times, islice(times, 1, None))):  # a time went backwards
        events = sorted((e for r in recs for e in ((r.invoke_time, 0, r), (r.complete_time, 1, r))),
                        key=lambda e: (e[0], e[1]))
    return events


def realtime_checks(a) -> tuple[list[dict], list[dict]]:
    """``realtime-order`` and ``hwm-regression`` in one sweep over ``_sweep``'s events: for each op B and
    key, the op A completed strictly before B's invocation with the largest offset (ties: smallest op
    index, then micro-op position) or hwm (ties: smallest op index) is compared with B; for offsets a
    larger or equal value is a violation, for hwms only a larger one."""
    if _certainly_clean(a):
        return [], []
    rt_out: list[dict] = []
    hwm_out: list[dict] = []
    best_rt: dict = {}     # key -> ((offset, -op, -pos), op, offset, value)
    best_hwm: dict = {}    # key -> ((hwm, -op, 0), op, hwm, None)
    pending_rt: list = []
    pending_hwm: list = []
    now = None
    for t, kind, r in _sweep(a):
        if t != now:
            # completions at the previous timestamp become visible (strictly earlier than what follows)
            if pending_rt:
                _publish(pending_rt, best_rt)
                pending_rt = []
            if pending_hwm:
                _publish(pending_hwm, best_hwm)
                pending_hwm = []
            now = t
        sends, hwm = r.sends, r.hwm
        if kind == 0:
            if sends and best_rt:
                for k, v, o in sends:
                    if o is None:
                        continue
                    cur = best_rt.get(k)
                    if cur is not None and cur[2] >= o:  # ties violate: offsets are unique
                        rt_out.append({"key": k, "earlier": cur[1], "later": r.index, "offsets": [cur[2], o],
                                       "values": [cur[3], v]})
            if hwm and best_hwm:
                for k, h in hwm.items():
                    cur = best_hwm.get(k)
                    if cur is not None and cur[2] > h:
                        hwm_out.append({"key": k, "earlier": cur[1], "later": r.index, "hwms": [cur[2], h]})
        else:
            if sends:
                index = r.index
                for pos, (k, v, o) in enumerate(sends):
                    if o is not None:
                        pending_rt.append((k, (o, -index, -pos), (index, o, v)))
            if hwm:
                index = r.index
                for k, h in hwm.items():
                    pending_hwm.append((k, (h, -index, 0), (index, h, None)))
    rt_out.sort(key=lambda e: (e["key"], e["later"], e["offsets"][1]))
    hwm_out.sort(key=lambda e: (e["key"], e["later"]))
    return rt_out, hwm_out


def _publish(pending: list, best: dict) -> None:
    """Make completions ``(key, candidate, row)`` visible: each key keeps its largest candidate."""
    for k, cand, row in pending:
        cur = best.get(k)
        if cur is None or cand > cur[0]:
            best[k] = (cand, *row)


def _certainly_clean(a) -> bool:
    """True when the sweep would find neither kind: for every key, no op B has an offset (hwm) smaller
    than or equal to (smaller than) the largest one of the ops completed strictly before B's invocation.
    False when that is not so, or when the history has what numpy cannot hold exactly (keys or numbers
    that are not 64-bit integers): the sweep decides then. The rows are gathered with C-level maps (one
    Python step per op, none per send or hwm entry), which is what makes this cheaper than the sweep."""
    ops = _timed_ok(a)
    try:
        writers = [r for r in ops if r.sends]
        sends = list(chain.from_iterable(map(_sends, writers)))  # (key, value, offset)
        counts = list(map(len, map(_sends, writers)))
        offsets = list(map(_third, sends))
        unknown = offsets.count(None)  # sends without an offset take no part: zeroed here, dropped below
        send_rows = (_int_array(list(map(_first, sends))),
                     _int_array([0 if o is None else o for o in offsets] if unknown else offsets),
                     np.repeat(_int_array(list(map(_done, writers))), counts),
                     np.repeat(_int_array(list(map(_began, writers))), counts))
        if unknown:
            known = np.array([o is not None for o in offsets], dtype=bool)
            send_rows = tuple(col[known] for col in send_rows)
        readers = [r for r in ops if r.hwm]
        marks = list(map(_hwm, readers))
        counts = list(map(len, marks))
        hwm_rows = (_int_array(list(chain.from_iterable(marks))),
                    _int_array(list(chain.from_iterable(map(dict.values, marks)))),
                    np.repeat(_int_array(list(map(_done, readers))), counts),
                    np.repeat(_int_array(list(map(_began, readers))), counts))
        return (_no_earlier_max(*send_rows, ties_violate=True)
                and _no_earlier_max(*hwm_rows, ties_violate=False))
    except (OverflowError, TypeError, ValueError):
        return False


_sends = operator.attrgetter("sends")
_hwm = operator.attrgetter("hwm")
_done = operator.attrgetter("complete_time")
_began = operator.attrgetter("invoke_time")
_third = operator.itemgetter(2)


def _int_array(values: list) -> np.ndarray:
    """``values`` as int64, or ValueError when they are not all integers that fit. (Booleans among ints
    become 0 and 1, which is how the sweep's comparisons and dict lookups treat them too.)"""
    arr = np.array(values)
    if arr.dtype != np.int64:
        if not values:
            return np.zeros(0, dtype=np.int64)
        raise ValueError("not 64-bit integers")
    return arr


def _no_earlier_max(k: np.ndarray, v: np.ndarray, d: np.ndarray, b: np.ndarray, ties_violate: bool) -> bool:
    """For rows (key, value, completion time, invocation time): True when no row's value is below (or
    equal to, with ``ties_violate``) the largest value of its key among rows completed strictly before
    its invocation."""
    if not len(k):
        return True
    for key in np.unique(k):
        mask = k == key
        kv, kd, kb = v[mask], d[mask], b[mask]
        order = np.argsort(kd, kind="stable")
        done_sorted = kd[order]
        running_max = np.maximum.accumulate(kv[order])
        before = np.searchsorted(done_sorted, kb, side="left")  # rows completed strictly before
        has = before > 0
        best = running_max[before[has] - 1]
        mine = kv[has]
        if (best >= mine).any() if ties_violate else (best > mine).any():
            return False
    return True
