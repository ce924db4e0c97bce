"""Benchmark: a lower bound for a Spark check of one large history: only its first two stages, timed.

    python bench/bench_spark_scan.py HISTORY.jsonl [--master local[2]] [--shuffle-partitions 32]
    python bench/bench_spark_scan.py --generate 10000000 --dir /tmp/bench   # writes the history first

Stage 1 reads, parses and validates every line (``spark_analysis.read.read_jsonl``, one scan, counted);
stage 2 pairs invocations with completions (``spark_analysis.extract.records``: one window over all client
lines, counted). Every queue check runs after both, so their sum is a floor for the whole check
(``bench_spark.py`` times the whole). Prints figures, asserts nothing.

Figures measured so far: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main(argv: list[str] | None = None) -> int:
    """Time the two stages and print them."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("history", nargs="?", help="a JSONL history")
    p.add_argument("--generate", type=int, help="write a synthetic history of this many client ops first")
    p.add_argument("--dir", default=".", help="where --generate writes")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--shuffle-partitions", type=int, default=32)
    args = p.parse_args(argv)
    path = args.history
    if args.generate:
        from tests.support.synth_stream import write_history

        path = os.path.join(args.dir, f"history_{args.generate}.jsonl")
        t = time.monotonic()
        stats = write_history(path, args.generate, seed=args.generate % 1000)
        print(f"generated {stats.lines} lines in {time.monotonic() - t:.1f} s: {path}", flush=True)
    if not path:
        p.error("give a history or --generate N")
    from pyspark.sql import functions as F

    from spark_analysis.extract import records
    from spark_analysis.read import read_jsonl
    from spark_analysis.session import get_session

    spark = get_session(args.master, shuffle_partitions=args.shuffle_partitions, driver_memory="2g")
    size = os.path.getsize(path) / 1e6
    t = time.monotonic()
    df = read_jsonl(spark, path, run="")
    row = df.agg(F.count(F.lit(1)).alias("n"), F.count("bad").alias("bad")).collect()[0]
    print(f"stage 1 read + parse + validate: {row['n']} lines ({size:.0f} MB), {row['bad']} malformed, "
          f"{time.monotonic() - t:.1f} s", flush=True)
    t = time.monotonic()
    n = records(df.where(F.col("bad").isNull())).count()
    print(f"stage 2 pairing (one window over all client lines): {n} records, {time.monotonic() - t:.1f} s",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
