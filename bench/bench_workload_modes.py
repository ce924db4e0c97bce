"""The queue workload's modes side by side: plain (assign), subscribe (consumer groups) and transactional,
and how long a consumer-group rebalance takes under each fault (prints figures, asserts nothing).

Each mode is one ``kraftcheck run`` on the reference implementation (local backend, kip966, three brokers,
the same seed, rate and time limit), so the figures compare modes under the same settings:

- **throughput**: ok client ops per second of the main phase, and ok sends per second (a transaction
  counts once, whatever its micro-ops);
- **latency**: p50 / p99 / max of ok ops, in milliseconds, by op kind (``send``, ``poll``, ``txn``,
  ``commit``, ``subscribe``);
- **rebalances** (modes with subscribing consumers): for each member's revocation, the time until that
  member was handed partitions again (the poll that reported the revocation was invoked, the poll that
  reported the next assignment completed), labelled by the fault in place when the revocation was seen
  (``none`` when no fault was), p50 and max per fault.

The runs go to a temporary store (``--store`` keeps them). With ``--nemesis`` the faults of that mix run
in every mode (the rebalance figures then show each fault); without it the modes run fault-free and
rebalances come from membership churn only.

Usage: ``python bench/bench_workload_modes.py [--time-limit S] [--seed N] [--nemesis kill,partition]
[--modes assign,subscribe,txn,subscribe+txn] [--store DIR]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

MODES = {"assign": [], "subscribe": ["--sub-via", "subscribe"], "txn": ["--txn"],
         "subscribe+txn": ["--sub-via", "subscribe", "--txn"]}


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def run_mode(mode: str, args: argparse.Namespace, store: Path) -> Path:
    """One run of ``mode``; the run directory."""
    argv = [sys.executable, "-m", "kraftcheck.cli", "run", "--backend", "local", "--variant", "kip966",
            "--time-limit", str(args.time_limit), "--seed", str(args.seed), "--rate", str(args.rate),
            "--no-report", "--no-progress", "--store", str(store / mode), *MODES[mode]]
    if args.nemesis:
        argv += ["--nemesis", args.nemesis]
    subprocess.run(argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (store / mode / "latest").resolve()


def load(run_dir: Path) -> list[dict]:
    with open(run_dir / "history.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def fault_intervals(ops: list[dict]) -> list[tuple[int, int, str]]:
    """``(start, end, f)`` of every nemesis fault that took effect, until the next heal or stop of it."""
    heals = {"kill": ("start",), "start-partition": ("stop-partition",), "pause": ("resume",)}
    open_at: dict[str, int] = {}
    out = []
    end_of_history = max((op.get("time", 0) for op in ops), default=0)
    for op in ops:
        if op.get("process") != "nemesis" or op.get("type") != "ok":
            continue
        f = op.get("f")
        if f in heals:
            open_at.setdefault(f, op["time"])
        for start_f, heal_fs in heals.items():
            if f in heal_fs or f == "heal":
                if start_f in open_at:
                    out.append((open_at.pop(start_f), op["time"], start_f))
    out += [(t, end_of_history, f) for f, t in open_at.items()]
    return out


def fault_at(intervals: list[tuple[int, int, str]], t: int) -> str:
    names = sorted({f for start, end, f in intervals if start <= t <= end})
    return "+".join(names) or "none"


def figures(ops: list[dict], main_s: float) -> dict[str, Any]:
    """Throughput, latency by op kind, and rebalance times by fault, from one history."""
    invoked: dict[Any, dict] = {}
    latency: dict[str, list[float]] = {}
    ok = sends = 0
    revoked_at: dict[Any, tuple[int, str]] = {}
    rebalances: dict[str, list[float]] = {}
    intervals = fault_intervals(ops)
    for op in ops:
        p = op.get("process")
        if p == "nemesis" or op.get("final"):
            continue
        if op.get("type") == "invoke":
            invoked[p] = op
            continue
        start = invoked.pop(p, None)
        if start is None:
            continue
        if op.get("type") == "ok":
            ok += 1
            sends += op.get("f") in ("send", "txn")
            latency.setdefault(op["f"], []).append((op["time"] - start["time"]) / 1e6)
        for event in op.get("rebalance_log") or []:
            member = event.get("member") or p
            if event.get("type") == "revoked" and member not in revoked_at:
                revoked_at[member] = (start["time"], fault_at(intervals, start["time"]))
            elif event.get("type") == "assigned" and member in revoked_at:
                began, fault = revoked_at.pop(member)
                rebalances.setdefault(fault, []).append((op["time"] - began) / 1e6)
    return {"ok_per_s": ok / main_s, "sends_per_s": sends / main_s,
            "latency": {f: (percentile(v, 0.5), percentile(v, 0.99), max(v), len(v)) for f, v in latency.items()},
            "rebalances": {f: (median(v), max(v), len(v)) for f, v in rebalances.items()}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rate", type=float, default=50.0)
    p.add_argument("--nemesis", default="")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--store")
    args = p.parse_args(argv)
    store = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="bench-modes-"))
    print(f"seed {args.seed}, {args.time_limit:g} s per mode, rate {args.rate:g}/s, faults {args.nemesis or 'none'}; "
          f"store {store}")
    for mode in args.modes.split(","):
        run_dir = run_mode(mode, args, store)
        verdict = json.loads((run_dir / "results.json").read_text()).get("verdict")
        got = figures(load(run_dir), args.time_limit)
        print(f"\n{mode}: verdict {verdict}; {got['ok_per_s']:.1f} ok ops/s, {got['sends_per_s']:.1f} "
              f"sends or transactions ok/s")
        for f, (p50, p99, worst, n) in sorted(got["latency"].items()):
            print(f"  {f:10} n={n:5}  p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  max {worst:7.1f} ms")
        for fault, (p50, worst, n) in sorted(got["rebalances"].items()):
            print(f"  rebalance under {fault:16} n={n:3}  p50 {p50:7.1f} ms  max {worst:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
