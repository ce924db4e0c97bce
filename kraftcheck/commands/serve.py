"""kraftcheck serve STORE [--port P]: browse a store live, the pages of kraftcheck publish over loopback.

    kraftcheck serve STORE [--port P] [--master URL] [--no-aggregate]

Serves http://127.0.0.1:P/ (only on the loopback interface): the matrix, anomaly, known-issue, run,
table and environment pages and every run's report, rendered from the store as it is now, so runs added
while it serves (a suite in progress) show up at the next request; the index reloads itself. The
cross-run tables are the Spark aggregation of the store, recomputed in the background when runs were
added (its files go to a temporary directory: the store is only read). Stop with Ctrl-C.

Exit codes (kraftcheck --help lists them): success after Ctrl-C; bad arguments for a store that is not a
directory or a port in use.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from harness.verdict import EXIT_OK, EXIT_USAGE
from kraftcheck.commands.publish import spark_tables
from reports.publish import AGGREGATE_DIR
from reports.server import LOOPBACK, LiveSite, make_server
from spark_analysis.session import stop_session

DEFAULT_PORT = 8765


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    p = argparse.ArgumentParser(prog="kraftcheck serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("store", metavar="STORE", help="store root holding the runs (e.g. ./store)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"TCP port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--master", default=None, help="Spark master URL for the cross-run tables (default local[*])")
    p.add_argument("--no-aggregate", action="store_true", help="no Spark cross-run tables")
    return p


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck serve``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port {args.port}: not a TCP port (0-65535)")
    if args.master and args.no_aggregate:
        parser.error("--master needs the aggregation; drop --no-aggregate")
    store_root = Path(args.store).expanduser()
    if not store_root.is_dir():
        print(f"kraftcheck serve: STORE {args.store}: not a directory", file=sys.stderr)
        return EXIT_USAGE
    with tempfile.TemporaryDirectory(prefix="kraftcheck-serve-") as scratch:
        tables = Path(scratch) / AGGREGATE_DIR
        aggregate = None if args.no_aggregate else (lambda root: spark_tables(root, tables, args.master,
                                                                        keep_session=True))
        site = LiveSite(store_root, aggregate, tables)
        try:
            server = make_server(site, args.port)
        except OSError as exc:
            print(f"kraftcheck serve: --port {args.port}: cannot listen on {LOOPBACK} ({exc.strerror or exc})",
                  file=sys.stderr)
            return EXIT_USAGE
        host, port = server.server_address[:2]
        print(f"kraftcheck serve: {store_root.resolve()} at http://{host}:{port}/ (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
            stop_session()
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
