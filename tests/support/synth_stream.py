"""Streaming generator of large synthetic queue histories (millions of ops) for the Spark benchmarks.

``tests.support.synth.synth_history`` builds its history in memory, which is right for tests and wrong at 10 M
or 50 M ops; this generator writes JSONL lines as it simulates, holding only the per-key logs (compact
``array``s of values) and the in-flight ops. The model is the same kind: a correct log per key (offsets
with occasional gaps), concurrent processes that ``assign`` every key from the beginning and then send,
poll (a batch per key, contiguous) or run ``txn`` ops (a poll then sends), ``info`` completions that
retire their process (an ``info`` send took effect or not, a coin flip), certain ``fail`` sends that did
not happen, ``hwm`` marks on polls, and a ``final`` phase that reads every key back. Realism beyond the
checker's golden histories:

- **consumers** are assigned ``assigned`` random keys each (as Jepsen's are), polls return up to ``batch``
  records per key;
- **faults**: every ``fault_every`` ops a nemesis ``kill`` (ok) starts a fault window of ``fault_len``
  ops healed by ``start``; inside it, ops end ``info``/``fail`` far more often and latency grows;
- **planted anomalies** (counts returned): ``lost`` acknowledged sends that never reach the log (lost
  writes and unseen values once later values are read) and ``dup`` values appended twice (duplicates).

``python -m tests.support.synth_stream OUT.jsonl --ops N [--seed S]`` writes one.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from array import array
from dataclasses import dataclass, field

from harness.verdict import EXIT_OK


@dataclass
class SynthStats:
    """What a generated history contains (client ops, lines, planted anomalies)."""

    ops: int = 0
    lines: int = 0
    planted: dict[str, int] = field(default_factory=lambda: {"lost": 0, "dup": 0})


def _pairs(offs: array, vals: array, i: int, j: int) -> str:
    return "[" + ",".join(f"[{offs[x]},{vals[x]}]" for x in range(i, j)) + "]"


def write_history(path: str, n_ops: int, *, keys: int = 8, concurrency: int = 10, seed: int = 0,
                  p_info: float = 0.01, p_fail: float = 0.01, p_txn: float = 0.1, batch: int = 4, assigned: int = 2,
                  fault_every: int = 20_000, fault_len: int = 2_000, p_lost: float = 2e-5,
                  p_dup: float = 2e-5) -> SynthStats:
    """Write a history of about ``n_ops`` client ops (two lines each) plus nemesis ops and a final phase."""
    rng = random.Random(seed)
    rand = rng.random
    offs = [array("q") for _ in range(keys)]
    vals = [array("q") for _ in range(keys)]
    next_off = [0] * keys
    stats = SynthStats()
    index = 0
    t = 0
    value = 0
    procs = list(range(concurrency))
    next_pid = concurrency
    state: dict[int, tuple] = {}  # pid -> in-flight (f, invoke payload, outcome)
    pos: dict[int, dict[int, int]] = {}
    in_fault = False
    fault_end = 0
    out = open(path, "w", encoding="utf-8", buffering=1 << 20)

    def emit(type_: str, process, f: str, value_json: str, extra: str = "") -> None:
        nonlocal index, t
        t += rng.randint(1, 2000 if not in_fault else 20000)
        proc = f'"{process}"' if process == "nemesis" else str(process)
        out.write(f'{{"index":{index},"time":{t},"type":"{type_}","process":{proc},"f":"{f}",'
                  f'"value":{value_json},"node":null,"error":null{extra}}}\n')
        index += 1

    def append(k: int, v: int) -> int:
        o = next_off[k]
        next_off[k] = o + (2 if rand() < 0.02 else 1)
        offs[k].append(o)
        vals[k].append(v)
        return o

    def poll_json(pid: int, limit: int) -> tuple[str, str]:
        p = pos[pid]
        parts, marks = [], []
        for k in p:
            i = p[k]
            j = min(len(vals[k]), i + limit)
            parts.append(f'"{k}":{_pairs(offs[k], vals[k], i, j)}')
            marks.append(f'"{k}":{next_off[k]}')
            p[k] = j
        return "{" + ",".join(parts) + "}", "{" + ",".join(marks) + "}"

    all_keys = json.dumps(list(range(keys)))
    try:
        while stats.ops < n_ops:
            if stats.ops >= fault_end and in_fault:
                emit("invoke", "nemesis", "start", "null")
                emit("ok", "nemesis", "start", '{"effective":true}')
                in_fault = False
            elif not in_fault and stats.ops and stats.ops % fault_every == 0:
                emit("invoke", "nemesis", "kill", "null")
                emit("ok", "nemesis", "kill", '{"effective":true}')
                in_fault, fault_end = True, stats.ops + fault_len
            slot = rng.randrange(concurrency)
            pid = procs[slot]
            if pid not in pos:
                # Like Jepsen's consumers, each process is assigned a few keys (partitions), from the start.
                mine = sorted(rng.sample(range(keys), min(assigned, keys)))
                emit("invoke", pid, "assign", json.dumps(mine), ',"seek_to_beginning":true')
                emit("ok", pid, "assign", json.dumps(mine), ',"seek_to_beginning":true')
                pos[pid] = dict.fromkeys(mine, 0)
                continue
            if pid not in state:
                r = rand()
                if r < p_txn:
                    sends = []
                    for _ in range(rng.randint(1, 3)):
                        value += 1
                        sends.append((rng.randrange(keys), value))
                    f, payload = "txn", sends
                    inv = "[[\"poll\"]," + ",".join(f'["send",{k},{v}]' for k, v in sends) + "]"
                elif r < p_txn + (1 - p_txn) / 2:
                    value += 1
                    f, payload = "send", (rng.randrange(keys), value)
                    inv = f"[{payload[0]},{payload[1]}]"
                else:
                    f, payload, inv = "poll", None, "null"
                scale = 20 if in_fault else 1
                r = rand()
                outcome = ("info" if r < p_info * scale else
                           "fail" if f == "send" and r < (p_info + p_fail) * scale else "ok")
                state[pid] = (f, payload, inv, outcome)
                emit("invoke", pid, f, inv)
                continue
            f, payload, inv, outcome = state.pop(pid)
            stats.ops += 1
            applies = outcome == "ok" or (outcome == "info" and rand() < 0.5)
            if f == "send":
                k, v = payload
                if applies and outcome == "ok" and rand() < p_lost:
                    stats.planted["lost"] += 1  # acknowledged, never in the log
                    o = next_off[k]
                    next_off[k] += 1
                elif applies:
                    o = append(k, v)
                    if rand() < p_dup:
                        stats.planted["dup"] += 1
                        append(k, v)
                emit(outcome, pid, f, f"[{k},[{o},{v}]]" if outcome == "ok" else inv)
            elif f == "poll":
                if outcome == "ok":
                    body, marks = poll_json(pid, batch)
                    emit("ok", pid, f, body, f',"hwm":{marks}')
                else:
                    emit(outcome, pid, f, "null")
            else:
                if outcome == "ok":
                    body, _ = poll_json(pid, batch)
                    mops = [f'["poll",{body}]'] + [f'["send",{k},[{append(k, v)},{v}]]' for k, v in payload]
                    emit("ok", pid, f, "[" + ",".join(mops) + "]")
                else:
                    if applies:
                        for k, v in payload:
                            append(k, v)
                    emit(outcome, pid, f, inv)
            if outcome == "info":
                procs[slot] = next_pid
                next_pid += 1
        for pid, (f, _payload, inv, _) in list(state.items()):
            emit("info", pid, f, inv)  # still in flight when the run ended: indeterminate
        if in_fault:
            emit("invoke", "nemesis", "start", "null")
            emit("ok", "nemesis", "start", '{"effective":true}')
        reader = next_pid
        emit("invoke", reader, "assign", all_keys, ',"seek_to_beginning":true,"final":true')
        emit("ok", reader, "assign", all_keys, ',"seek_to_beginning":true,"final":true')
        pos[reader] = dict.fromkeys(range(keys), 0)
        while any(pos[reader][k] < len(vals[k]) for k in range(keys)):
            emit("invoke", reader, "poll", "null", ',"final":true')
            body, marks = poll_json(reader, 5000)
            emit("ok", reader, "poll", body, f',"hwm":{marks},"final":true')
    finally:
        out.close()
    stats.lines = index
    return stats


def main(argv: list[str] | None = None) -> int:
    """CLI: write one synthetic history and print its stats as JSON."""
    p = argparse.ArgumentParser(prog="python -m tests.support.synth_stream")
    p.add_argument("out")
    p.add_argument("--ops", type=int, required=True)
    p.add_argument("--keys", type=int, default=8)
    p.add_argument("--concurrency", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    stats = write_history(args.out, args.ops, keys=args.keys, concurrency=args.concurrency, seed=args.seed)
    print(json.dumps({"ops": stats.ops, "lines": stats.lines, "planted": stats.planted}))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
