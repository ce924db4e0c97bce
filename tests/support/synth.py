"""Random *valid* queue histories from a simulated correct log, and mutations that break them.

``synth_history(...)`` simulates a set of partitions (keys) that behave exactly as Kafka promises with
``acks=all`` and no faults: every send takes effect at one instant between its invocation and completion
(its linearization point) and gets the next offset of its key (offsets may have gaps, as transaction
markers leave them); consumers use ``assign`` with ``seek_to_beginning`` and read contiguously from the
start, a batch per key per poll; polls see every record appended before their linearization point.
Concurrency comes from many processes with interleaved invocations. Crashes: an op may end ``info``; an
``info`` send takes effect or not (a coin flip), the process is retired and replaced (process id +
concurrency, as in Jepsen). A ``fail`` send never takes effect. Some ops use the ``txn`` encoding
(polls first, then sends; the polls see the log from before the op's own sends). With ``final=True`` the
history ends with a final phase (docs/history-schema.md; the ``"final": true`` convention of
``checkers/queue/anomalies.py``): a fresh process makes one poll marked final that reads every key from the
beginning to its end (as workloads/queue.py does). With ``p_reassign`` an idle process now and then
``assign``s or ``subscribe``s to a random set of keys instead (as Jepsen's consumers do; an ``info`` one
took effect and the process goes on, which is what Jepsen's checker assumes): it keeps its position in
the keys it still holds and reads a newly acquired key from the beginning (no committed offset, earliest
reset). Such a history has no anomaly of any kind.

``mutate(ops, kind, rng)`` applies one of the mutations ``drop-read`` (drop a read pair that is neither the
first nor the last of its op's sequence, or any pair of a final read), ``swap-offsets`` (exchange the acknowledged offsets of
two ok sends of one key) or ``duplicate-value`` (a poll returns an already read value again at a new
offset) and returns the new ops and a description; each must be caught by the checker.

Both are deterministic for a given seed, so the Spark engine's differential tests reuse them.
"""

from __future__ import annotations

import pickle
import random
from typing import Any


class _Proc:
    __slots__ = ("pid", "state", "op", "outcome", "positions", "result")

    def __init__(self, pid: int):
        self.pid = pid
        self.state = "new"  # new -> (assign) -> idle -> invoked -> applied -> idle ...
        self.op: dict | None = None
        self.outcome = "ok"
        self.positions: dict[int, int] | None = None  # key -> next log index to read
        self.result: Any = None


def synth_history(n_ops: int = 1000, *, keys: int = 4, concurrency: int = 5, seed: int = 0,
                  p_info: float = 0.02, p_fail: float = 0.02, p_txn: float = 0.1, p_gap: float = 0.05,
                  batch: int = 4, final: bool = True, hwm: bool = True,
                  p_reassign: float = 0.0) -> list[dict]:
    """A valid history with about ``n_ops`` client operations (2 history lines each) plus a final phase."""
    rng = random.Random(seed)
    logs: dict[int, list[tuple[int, int]]] = {k: [] for k in range(keys)}  # key -> [(offset, value)]
    next_offset = dict.fromkeys(range(keys), 0)
    ops: list[dict] = []
    t = 0
    next_value = 0
    procs = [_Proc(p) for p in range(concurrency)]

    def emit(op: dict) -> dict:
        nonlocal t
        t += rng.randint(1, 1000)
        op = dict(op, index=len(ops), time=t)
        ops.append(op)
        return op

    def append(k: int, v: int) -> int:
        o = next_offset[k]
        next_offset[k] = o + (2 if rng.random() < p_gap else 1)
        logs[k].append((o, v))
        return o

    def poll(p: _Proc, final_op: bool = False) -> tuple[dict, dict]:
        out, marks = {}, {}
        for k, i in p.positions.items():
            recs = logs[k][i:] if final_op else logs[k][i:i + batch]
            out[str(k)] = [[o, v] for o, v in recs]
            p.positions[k] = i + len(recs)
            marks[str(k)] = next_offset[k] if logs[k] else 0
        return out, marks

    def apply(p: _Proc) -> None:
        op = p.op
        f = op["f"]
        if p.outcome == "fail" or (p.outcome == "info" and rng.random() < 0.5):
            p.result = None  # never took effect
            return
        if f == "send":
            k, v = op["value"]
            p.result = [k, [append(k, v), v]]
        elif f == "poll":
            p.result = poll(p)
        else:  # txn: polls first, so they cannot see this op's own sends
            res = []
            pending = []
            for mop in op["value"]:
                if mop[0] == "poll":
                    res.append(["poll", poll(p)[0]])
                else:
                    res.append(None)
                    pending.append((len(res) - 1, mop))
            for slot, (_, k, v) in pending:
                res[slot] = ["send", k, [append(k, v), v]]
            p.result = res

    done = 0
    while done < n_ops:
        p = rng.choice(procs)
        if p.state == "new":
            p.positions = {}
            emit({"type": "invoke", "process": p.pid, "f": "assign", "value": list(range(keys)),
                  "seek_to_beginning": True})
            p.positions = dict.fromkeys(range(keys), 0)
            emit({"type": "ok", "process": p.pid, "f": "assign", "value": list(range(keys)),
                  "seek_to_beginning": True})
            p.state = "idle"
        elif p.state == "idle":
            if p_reassign and rng.random() < p_reassign:  # no draw at all without it: same histories
                f = "assign" if rng.random() < 0.5 else "subscribe"
                held = sorted(rng.sample(range(keys), rng.randint(1, keys)))
                emit({"type": "invoke", "process": p.pid, "f": f, "value": held})
                p.positions = {k: p.positions.get(k, 0) for k in held}
                outcome = "info" if rng.random() < p_info else "ok"
                emit({"type": outcome, "process": p.pid, "f": f, "value": held})
                continue
            r = rng.random()
            if r < p_txn:
                mops: list = [["poll"]] if rng.random() < 0.5 else []
                for _ in range(rng.randint(1, 3)):
                    next_value += 1
                    mops.append(["send", rng.randrange(keys), next_value])
                op = {"f": "txn", "value": mops}
            elif r < p_txn + (1 - p_txn) / 2:
                next_value += 1
                op = {"f": "send", "value": [rng.randrange(keys), next_value]}
            else:
                op = {"f": "poll", "value": None}
            r = rng.random()
            # A fail must be certain: only sends (and txns of sends only) are failed in this model.
            can_fail = op["f"] == "send" or (op["f"] == "txn" and all(m[0] == "send" for m in op["value"]))
            p.outcome = "info" if r < p_info else ("fail" if can_fail and r < p_info + p_fail else "ok")
            p.op = emit({"type": "invoke", "process": p.pid, **op})
            p.state = "invoked"
        elif p.state == "invoked":
            apply(p)
            p.state = "applied"
        else:
            op = p.op
            comp = {"type": p.outcome, "process": p.pid, "f": op["f"]}
            if p.outcome == "ok":
                if op["f"] == "poll":
                    comp["value"], marks = p.result
                    if hwm:
                        comp["hwm"] = marks
                else:
                    comp["value"] = p.result
            else:
                comp["value"] = op["value"]
            emit(comp)
            done += 1
            if p.outcome == "info":
                procs[procs.index(p)] = _Proc(p.pid + concurrency)
            else:
                p.state = "idle"
    for p in procs:  # let in-flight ops finish so that the final phase starts after them
        if p.state in ("invoked", "applied"):
            if p.state == "invoked":
                apply(p)
            op = p.op
            comp = {"type": p.outcome, "process": p.pid, "f": op["f"],
                    "value": (p.result[0] if op["f"] == "poll" else p.result) if p.outcome == "ok"
                    else op["value"]}
            emit(comp)
    if final:
        # As the harness does it (workloads/queue.py): one poll marked final, by a fresh process, reads
        # every key from the beginning up to its end offset.
        pid = max(p.pid for p in procs) + 1
        reader = _Proc(pid)
        reader.positions = dict.fromkeys(range(keys), 0)
        emit({"type": "invoke", "process": pid, "f": "poll", "value": None, "final": True})
        value, marks = poll(reader, final_op=True)
        comp = {"type": "ok", "process": pid, "f": "poll", "value": value, "final": True}
        if hwm:
            comp["ends"] = marks
        emit(comp)
    for op in ops:
        op.setdefault("node", None)
        op.setdefault("error", None)
    return ops


MUTATIONS = ("drop-read", "swap-offsets", "duplicate-value")


def _ok_read_sites(ops: list[dict]):
    """(op position, poll dict) of every ok poll (single-op or inside a txn)."""
    for i, op in enumerate(ops):
        if op["type"] != "ok" or not isinstance(op.get("process"), int):
            continue
        if op["f"] == "poll" and isinstance(op.get("value"), dict):
            yield i, op["value"], op.get("final") is True
        elif op["f"] == "txn" and isinstance(op.get("value"), list):
            for mop in op["value"]:
                if mop and mop[0] == "poll" and len(mop) == 2 and isinstance(mop[1], dict):
                    yield i, mop[1], False


def deep_copy(ops: list[dict]) -> list[dict]:
    """An independent copy of a history, as ``copy.deepcopy`` makes (shared parts stay shared), through
    pickle: the same result at a fraction of the time (minutes less for a 1 M-op history)."""
    return pickle.loads(pickle.dumps(ops, protocol=pickle.HIGHEST_PROTOCOL))


def mutate(ops: list[dict], kind: str, rng: random.Random) -> tuple[list[dict], str] | None:
    """Apply one mutation of ``MUTATIONS``; None when the history offers no place for it."""
    ops = deep_copy(ops)
    if kind == "drop-read":
        # Only values of ok sends: an info send read by nobody is indistinguishable from one that never
        # happened, so dropping its only read is not an anomaly. Outside the final phase only a pair with
        # reads on both sides in the same poll: the first read after an assign or subscribe is compared
        # with nothing (Jepsen's rule), so dropping it is not an anomaly either.
        ok_sent = {(str(op["value"][0]), op["value"][1][1]) for op in ops
                   if op["type"] == "ok" and op["f"] == "send" and isinstance(op["value"][1], list)}
        sites = [(i, d, k, j) for i, d, fin in _ok_read_sites(ops) for k, pairs in d.items()
                 for j in range(len(pairs)) if (fin or 0 < j < len(pairs) - 1) and (k, pairs[j][1]) in ok_sent]
        if not sites:
            return None
        i, d, k, j = rng.choice(sites)
        dropped = d[k].pop(j)
        return ops, f"op {ops[i]['index']}: dropped read {dropped} of key {k}"
    if kind == "swap-offsets":
        by_key: dict[Any, list] = {}
        for op in ops:
            if op["type"] == "ok" and op["f"] == "send" and isinstance(op["value"][1], list):
                by_key.setdefault(op["value"][0], []).append(op)
        keys = [k for k, lst in by_key.items() if len(lst) >= 2]
        if not keys:
            return None
        a, b = rng.sample(by_key[rng.choice(keys)], 2)
        a["value"][1][0], b["value"][1][0] = b["value"][1][0], a["value"][1][0]
        return ops, f"ops {a['index']} and {b['index']}: swapped acknowledged offsets"
    if kind == "duplicate-value":
        max_off: dict[str, int] = {}
        sites = []
        for i, d, _ in _ok_read_sites(ops):
            for k, pairs in d.items():
                for o, _v in pairs:
                    max_off[k] = max(max_off.get(k, -1), o)
                if pairs:
                    sites.append((i, d, k))
        if not sites:
            return None
        i, d, k = rng.choice(sites)
        v = rng.choice(d[k])[1]
        d[k].append([max_off[k] + 1, v])
        return ops, f"op {ops[i]['index']}: value {v} of key {k} returned again at offset {max_off[k] + 1}"
    raise ValueError(f"unknown mutation {kind!r}")
