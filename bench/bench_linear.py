"""Benchmark: the linearizability engine on porcupine's corpus and on Kafka partition logs of growing size.

Prints figures, asserts nothing. ``python bench/bench_linear.py [--skip-corpus]
[--sizes 100,1000,5000,20000,100000,300000]``.
Corpus: every ``jepsen/etcd_*.log`` (cas-register; verdict compared with porcupine_test.go's expectation)
and ``kv/c*-{ok,bad}.txt`` (kv model, per-key partitioning), in-process (no subprocess start-up), with
parse and search time. Published porcupine figures for the same corpus on a 2-core machine
(tests/data/porcupine/SOURCE.md): all etcd histories ~1.0 s in total, worst file 0.23 s;
kv c50-ok 0.22 s. Kafka logs: one key, 5 concurrent producers/consumers, synthetic valid histories
(tests/support/synth.py, dense offsets), model kafka-log.

Figures measured so far: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from checkers.linear.engine import check_partitions  # noqa: E402
from checkers.linear.formats import load, to_partitions  # noqa: E402
from harness.verdict import word_of  # noqa: E402
from tests.support.synth import synth_history  # noqa: E402

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "porcupine")
ETCD_LINEARIZABLE = {2, 5, 7, 18, 25, 31, 38, 45, 48, 49, 51, 53, 56, 67, 75, 76, 80, 87, 92, 98, 100, 101, 102}


def corpus() -> None:
    """Time every corpus file."""
    print(f"porcupine corpus (load average {os.getloadavg()[0]:.1f})")
    total = parse_total = 0.0
    worst = (0.0, "")
    mismatches = []
    files = sorted(glob.glob(f"{CORPUS}/jepsen/etcd_*.log"))
    for path in files:
        n = int(path[-7:-4])
        t0 = time.perf_counter()
        model, parts, _ = load(path, "auto", "auto")
        t1 = time.perf_counter()
        res = check_partitions(model, parts, 120)
        t2 = time.perf_counter()
        parse_total += t1 - t0
        total += t2 - t1
        if t2 - t1 > worst[0]:
            worst = (t2 - t1, os.path.basename(path))
        if n != 95 and res["valid"] is not (n in ETCD_LINEARIZABLE):
            mismatches.append((n, res["valid"]))
    print(f"  etcd: {len(files)} files, search {total:.2f} s total (parse {parse_total:.2f} s), "
          f"worst {worst[1]} {worst[0]:.2f} s, verdicts differing from porcupine: {mismatches or 'none'}")
    for path in sorted(glob.glob(f"{CORPUS}/kv/*.txt")):
        t0 = time.perf_counter()
        model, parts, _ = load(path, "auto", "auto")
        t1 = time.perf_counter()
        res = check_partitions(model, parts, 300)
        t2 = time.perf_counter()
        events = sum(len(p) for p in parts.values()) * 2
        print(f"  kv {os.path.basename(path):<11} {events:5d} events, {len(parts):2d} keys: {word_of(res['valid']):<7} "
              f"search {t2 - t1:6.2f} s (parse {t1 - t0:.2f} s)")


def kafka(sizes: list[int]) -> None:
    """Time the kafka-log model on one key of growing size."""
    print(f"kafka-log, one key, 5 processes (load average {os.getloadavg()[0]:.1f})")
    for n in sizes:
        ops = synth_history(n, keys=1, concurrency=5, seed=n, p_gap=0.0, p_txn=0.0)
        parts = to_partitions(ops, "kafka-log")
        t0 = time.perf_counter()
        res = check_partitions("kafka-log", parts, 300)
        dt = time.perf_counter() - t0
        k = next(iter(res["keys"].values()))
        print(f"  {n:6d} client ops -> {k['ops']:6d} model ops: {word_of(res['valid']):<7} {dt:7.2f} s "
              f"({k.get('explored', 0):,} steps)")


def main() -> None:
    """Parse the options and run."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--skip-corpus", action="store_true")
    p.add_argument("--sizes", default="100,1000,5000,20000,100000,300000")
    args = p.parse_args()
    if not args.skip_corpus:
        corpus()
    kafka([int(x) for x in args.sizes.split(",")])


if __name__ == "__main__":
    main()
