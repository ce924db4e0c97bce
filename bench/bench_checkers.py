"""Benchmark: queue checker time on synthetic valid histories of 100k and 1M ops (history lines).

Prints figures, asserts nothing. ``python bench/bench_checkers.py [--sizes 100000,1000000] [--seed 1]
[--repeat N] [--history FILE]``.
Each size: generate a valid history (tests/support/synth.py; ~2 lines per client op, 4 keys, 5 processes,
info/fail/txn ops, final phase), write it as JSONL, then time separately: reading the JSONL
(harness.history.iter_history with json, and checkers.history.jsonl.read_ops with orjson, which
``check_run`` uses), the queue anomalies without the cycle search, the cycle search, and the
whole queue checker (anomalies + profile), and reading + checking together as ``check_run`` does, in
one process and in two (the cycle search in a child forked before the read, which ``check_run`` does
only when the linearizability engine is off, since the engine keeps the second core busy; the
docs/benchmarks.md target: a 1 M-op history checked in under 10 s on 2 cores). Wall and CPU seconds are
printed with the load average, because this machine is shared (2 cores) and wall time under load says little.

Figures measured so far, and where the time goes: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from checkers.history.jsonl import read_ops  # noqa: E402
from checkers.parallel import start_side  # noqa: E402
from checkers.queue import QueueAnalysis, anomalies_of, no_gc  # noqa: E402
from checkers.queue.checker import QueueChecker, find_anomalies  # noqa: E402
from harness.history import iter_history  # noqa: E402
from harness.verdict import word_of  # noqa: E402
from tests.support.synth import synth_history  # noqa: E402


def timed(label: str, fn):
    """Run fn, print wall/CPU seconds, return its result."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    print(f"  {label:<34} wall {time.perf_counter() - w:7.2f} s   cpu {time.process_time() - c:7.2f} s")
    return out


def parts(ops: list[dict]) -> None:
    """Time the stages separately (the analysis is dropped on return)."""
    with no_gc():
        a = timed("analysis (extract + version orders)", lambda: QueueAnalysis(ops, {"cycles": False}))
        found = timed("all non-cycle anomaly checks", lambda: anomalies_of(a))
        assert not any(found.values()), "a valid history must have no anomaly"
        from checkers.queue.cycles import find_cycles
        timed("cycle search (G0/G1c + realtime)", lambda: find_cycles(a))


def read_and_check(path: str, parallel: bool) -> None:
    """Read and check as ``check_run`` does: the collector stays off until the history is freed, and (with
    ``parallel``) the cycle search runs in a child forked before the read, which reads the file itself."""
    with no_gc():
        options = {"parallel": parallel}
        side = start_side(path, options)
        ops = read_ops(path)
        findings = find_anomalies({}, ops, options, side)
        QueueChecker(options, findings=findings).check({}, ops, [])
        del ops, findings


def fresh_runs(path: str, repeat: int) -> None:
    """Read + check in fresh interpreters, as ``kraftcheck check`` runs (a process that already held and
    freed a large heap pays copy-on-write faults on it after a fork, which a real check never has): one
    and two processes alternately, ``repeat`` times each, then the median and range of each. The wall
    time of the same command varies a lot on a shared VM (page faults on fresh memory are the noisiest
    part), so single figures say little."""
    walls: dict[str, list[float]] = {"1 process": [], "2 processes": []}
    for _ in range(repeat):
        for parallel, label in ((False, "1 process"), (True, "2 processes")):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--read-and-check", path,
                                  "--parallel", "1" if parallel else "0", "--label", f"read + queue checker, {label}"],
                                 check=True, capture_output=True, text=True).stdout
            print(out, end="")
            walls[label].append(float(out.split("wall")[1].split()[0]))
    if repeat > 1:
        for label, xs in walls.items():
            print(f"  read + queue checker, {label}: median {statistics.median(xs):.2f} s over {len(xs)} runs"
                  f" (min {min(xs):.2f}, max {max(xs):.2f})")


def bench(lines: int, seed: int, repeat: int = 1) -> None:
    """One size."""
    print(f"history of ~{lines:,} ops (lines), seed {seed}, load average {os.getloadavg()[0]:.1f}")
    ops = timed("generate (synth_history)", lambda: synth_history(lines // 2, seed=seed))
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        for op in ops:
            fh.write(json.dumps(op) + "\n")
        path = fh.name
    try:
        size = os.path.getsize(path)
        print(f"  {len(ops):,} ops, {size / 1e6:.0f} MB JSONL")
        del ops
        with no_gc():
            timed("read JSONL (json, iter_history)", lambda: list(iter_history(path)))
            ops = timed("read JSONL (orjson, read_ops)", lambda: read_ops(path))
        parts(ops)
        gc.collect()  # drop the parts' structures before timing the whole checker
        with no_gc():
            res = timed("whole queue checker, 1 process", lambda: QueueChecker({"parallel": False}).check({}, ops, []))
        ops.clear()  # free the history before reading it again
        gc.collect()
        fresh_runs(path, repeat)
        print(f"  verdict {word_of(res['valid'])}; anomalies {res['anomaly_types']}")
    finally:
        os.unlink(path)


def main() -> None:
    """Parse the options and run each size."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="100000,1000000")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeat", type=int, default=1, help="fresh-process read + check runs of each kind")
    p.add_argument("--history", help="only the fresh-process runs, on this existing history file")
    p.add_argument("--read-and-check", metavar="PATH", help=argparse.SUPPRESS)
    p.add_argument("--parallel", default="1", help=argparse.SUPPRESS)
    p.add_argument("--label", default="read + queue checker", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.read_and_check:
        w, c = time.perf_counter(), time.process_time()
        read_and_check(args.read_and_check, args.parallel == "1")
        children = os.times().children_user + os.times().children_system
        print(f"  {args.label:<34} wall {time.perf_counter() - w:7.2f} s   cpu {time.process_time() - c:7.2f} s"
              f" (+ {children:.2f} s in the child)")
        return
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if args.history:
        if not os.path.isfile(args.history):
            p.error(f"no such history file: {args.history}")
        print(f"{args.history}: {os.path.getsize(args.history) / 1e6:.0f} MB, load average {os.getloadavg()[0]:.1f}")
        fresh_runs(args.history, args.repeat)
        return
    for n in (int(x) for x in args.sizes.split(",")):
        bench(n, args.seed, args.repeat)


if __name__ == "__main__":
    main()
