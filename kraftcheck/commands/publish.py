"""kraftcheck publish STORE --out DIR: a conformance report of a whole store, as a static site.

    kraftcheck publish STORE --out DIR [--master URL] [--no-aggregate] [--quiet]

Writes DIR/index.html (the matrix of scenarios and workloads by variant x fault mix x backend, each run
linking to its report), the anomaly, known-issue, run, cross-run table and environment pages,
DIR/summary.json, and under DIR/runs/ every run's report with its files. The cross-run tables (anomaly
counts, availability and latency per fault mix, time to recovery) are computed by Spark over the store, on
a local session by default or on --master (e.g. spark://HOST:7077); --no-aggregate leaves them out (the
page says so).

The store is only read. Exit codes (kraftcheck --help lists them): success when the site was written; bad
arguments (a store that is not a directory, an output that is not empty and not a site); a harness error
when the site was written but the Spark tables could not be computed (the reason is printed and shown on
the tables page).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.verdict import EXIT_HARNESS_ERROR, EXIT_OK, EXIT_USAGE
from kraftcheck.extras import install_hint
from reports.publish import AGGREGATE_DIR, SiteError, prepare_site_dir, publish
from reports.site import Aggregate
from spark_analysis.errors import SparkAnalysisError
from spark_analysis.session import current_master, get_session, stop_session


def spark_tables(store_root: Path, out: Path, master: str | None, keep_session: bool = False) -> Aggregate:
    """The Spark aggregation of ``store_root`` written to ``out``; its summary, or None with the reason.

    A session this call starts is stopped at the end unless ``keep_session`` (``kraftcheck serve``
    aggregates again as runs are added, and a JVM start costs seconds); one already running is reused."""
    ours = current_master() is None and not keep_session
    started = time.monotonic()
    try:
        # pandas and pyspark come with the optional 'spark' extra: imported only when the tables are made.
        from spark_analysis.aggregate import aggregate_store

        spark = get_session(master)
        result = aggregate_store(spark, store_root, out)
    except ImportError as exc:
        return Aggregate(None, f"the Spark tables need the 'spark' extra ({install_hint(exc) or exc})")
    except SparkAnalysisError as exc:
        return Aggregate(None, f"the Spark aggregation failed: {exc}")
    except Exception as exc:  # a failed Spark job (Py4J): the site goes on without the tables and says why
        return Aggregate(None, f"the Spark aggregation failed: {type(exc).__name__}: {str(exc)[:300]}")
    finally:
        if ours:
            stop_session()
    where = master or "a local session"
    return Aggregate(result, f"Spark on {where}, {time.monotonic() - started:.0f} s", AGGREGATE_DIR)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    p = argparse.ArgumentParser(prog="kraftcheck publish", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("store", metavar="STORE", help="store root holding the runs (e.g. ./store)")
    p.add_argument("--out", metavar="DIR", required=True, help="directory for the site (created; an earlier "
                   "site there is replaced)")
    p.add_argument("--master", default=None, help="Spark master URL for the cross-run tables (default local[*])")
    p.add_argument("--no-aggregate", action="store_true", help="skip the Spark cross-run tables")
    p.add_argument("--quiet", action="store_true", help="print only the path of the index")
    return p


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck publish``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.master and args.no_aggregate:
        parser.error("--master needs the aggregation; drop --no-aggregate")
    store_root = Path(args.store).expanduser()
    if not store_root.is_dir():
        print(f"kraftcheck publish: STORE {args.store}: not a directory", file=sys.stderr)
        return EXIT_USAGE
    try:
        out = prepare_site_dir(args.out, store_root)
    except SiteError as exc:
        print(f"kraftcheck publish: {exc}", file=sys.stderr)
        return EXIT_USAGE
    say = (lambda line: None) if args.quiet else (lambda line: print(f"kraftcheck publish: {line}", file=sys.stderr))
    if args.no_aggregate:
        aggregate = Aggregate(None, "left out (--no-aggregate)")
    else:
        say(f"aggregating {store_root} with Spark ...")
        aggregate = spark_tables(store_root.resolve(), out / AGGREGATE_DIR, args.master)
        say(aggregate.note)
    published = publish(store_root, out, aggregate, progress=say)
    counts: dict[str, int] = {}
    for run in published.catalog.runs:
        counts[run.status] = counts.get(run.status, 0) + 1
    say(f"{len(published.catalog.runs)} runs: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    print(out / "index.html")
    if not args.no_aggregate and aggregate.summary is None:
        print(f"kraftcheck publish: site written without the cross-run tables: {aggregate.note}", file=sys.stderr)
        return EXIT_HARNESS_ERROR
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
