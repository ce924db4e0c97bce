"""The invariants judged from the history: I6, I7, I14 and I15 (docs/protocol-rules.md section 4).

They read the queue checker's findings (acked-unreadable, inconsistent-offsets, realtime-order) and its
records; with a trace, I14 and I15 also compare acknowledged offsets and reads with the True HWM each
partition had at the op's completion (the sweep's ``hwm_series``). Key k of the history is partition k of
the run's topic (the spec's ``topic``, or the trace's only topic).
"""

from __future__ import annotations

import bisect
from collections import defaultdict

from checkers.invariants.results import Results
from checkers.queue.checker import QueueFindings, find_anomalies
from checkers.queue.keys import unreached_keys
from harness.checked_spec import CheckedSpec


def check_history(ops: list[dict], spec: CheckedSpec, parts: dict, res: Results, trace_given: bool,
                  queue: QueueFindings | None) -> None:
    """I6, I7 and I15 from the history; with a trace, I14 and I15 against each partition's True HWM over
    time (``parts``: the sweep's ``state.TraceState.parts``). ``queue``: the queue checker's findings for
    ``ops`` when the caller has them (else the history is analysed here)."""
    if not any(op.get("f") in ("send", "poll", "txn") for op in ops):
        return
    # The kinds read here depend on no queue option, so any findings of this history serve.
    queue = queue or find_anomalies(spec, ops, {"cycles": False})
    found = queue.anomalies
    a = queue.analysis if trace_given else None
    # I6 (observed): every acknowledged write is readable after the final phase
    if any(op.get("final") is True for op in ops):
        rows = [r for r in found["acked-unreadable"] if not r.get("unreached")]
        unreached = unreached_keys(found["acked-unreadable"])
        for r in rows:
            res.bad("I6", f"ok send {r['value']} of key {r['key']} not readable at offset {r['offset']}",
                    ops=[r["writer"]])
        if unreached:
            # a write of a partition no final read reached is not known to be lost (nor kept)
            res.notes["I6"] = f"no final read reached key(s) {unreached}: their acknowledged writes are unknown"
        elif not rows:
            res.ok("I6")
    # I7 / I15: an offset, once read, keeps its value; realtime order of acknowledged sends
    for r in found["inconsistent-offsets"]:
        res.bad("I7", f"key {r['key']} offset {r['offset']} read with values {r['values']}", ops=r["ops"])
        res.bad("I15", f"offset -> value changed: key {r['key']} offset {r['offset']} {r['values']}", ops=r["ops"])
    for r in found["realtime-order"]:
        res.bad("I15", f"send acknowledged first got offset {r['offsets'][0]} >= later send's {r['offsets'][1]}",
                ops=[r["earlier"], r["later"]])
    if not found["inconsistent-offsets"]:
        res.ok("I7")
    if not found["inconsistent-offsets"] and not found["realtime-order"]:
        res.ok("I15")
    if a is None:
        return
    topics = {pk[0] for pk in parts}
    topic = spec.topic if spec.topic in topics else (next(iter(topics)) if len(topics) == 1 else None)
    if topic is None:
        res.notes["I14"] = "cannot map history keys to trace partitions (several topics, none named in the spec)"
        return
    acks_all = spec.acks_all
    sent: dict[tuple, set] = defaultdict(set)
    for r in a.recs:
        for k, v, _o in r.sends:
            sent[(k, v)].add(r.type)
    for (k, v), types in sent.items():
        if "ok" in types and "fail" in types:
            res.bad("I14", f"value {v} of key {k} both acknowledged and failed")

    def th_at(k, t):
        view = parts.get((topic, k))
        if view is None or not view.hwm_series:
            return None
        i = bisect.bisect_right(view.hwm_series, (t, float("inf"))) - 1
        return view.hwm_series[i][1] if i >= 0 else 0

    for r in a.recs:
        if r.type != "ok" or r.complete_time is None:
            continue
        if acks_all:
            for k, v, o in r.sends:
                th = th_at(k, r.complete_time)
                if o is None or th is None:
                    continue
                if o >= th:
                    res.bad("I14", f"send {v} acknowledged at offset {o} while the True HWM was {th}", ops=[r.index])
                else:
                    res.ok("I14")
        for k, seq in r.reads.items():
            th = th_at(k, r.complete_time)
            if th is None or not seq:
                continue
            top = max((o for o, _ in seq if o is not None), default=None)
            if top is not None and top >= th:
                res.bad("I15", f"poll read offset {top} of key {k} above the True HWM {th}", ops=[r.index])
            else:
                res.ok("I15")
