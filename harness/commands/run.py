"""``kraftcheck run``: a fault-injection run (cluster up, workload + nemesis, final reads, check, report).

Prints the seed first and the exact replay command last; exit codes 0 valid, 1 invalid, 2 unknown,
255 harness error (2 also for bad arguments, with a message naming the argument).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from harness.spec import OPTION_KEYS


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (every option defaults to None so replay can tell what was given)."""
    p = argparse.ArgumentParser(prog="kraftcheck run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--replay", metavar="SPEC_JSON", help="repeat a stored run (its spec.json or run dir); "
                   "other options given here override the stored ones")
    p.add_argument("--backend", choices=["local", "docker"], help="where nodes run (default: local)")
    p.add_argument("--nemesis", help="comma-separated faults: kill, stop, pause, partition, clock, disk, admin, "
                   "all, none (default: none)")
    p.add_argument("--nemesis-interval", type=float, metavar="S", help="mean seconds between faults (default 5)")
    p.add_argument("--time-limit", type=float, metavar="S", help="main phase duration in seconds (default 30)")
    p.add_argument("--seed", type=int, help="seed for ops and faults (default: random, printed)")
    p.add_argument("--rate", type=float, metavar="R", help="client ops per second, all processes (default 50)")
    p.add_argument("--concurrency", type=int, metavar="C", help="client processes (default 4)")
    p.add_argument("--keys", type=int, metavar="K", help="keys = partitions of the topic (default 4)")
    p.add_argument("--brokers", type=int, metavar="N", help="brokers (default 3)")
    p.add_argument("--replication-factor", type=int, metavar="RF", help="default 3")
    p.add_argument("--min-isr", type=int, metavar="N", help="min.insync.replicas (default 2)")
    p.add_argument("--variant", choices=["v3.5", "kip966"], help="protocol variant (default kip966)")
    p.add_argument("--acks", choices=["all", "1", "0"], help="producer acks (default all)")
    p.add_argument("--unclean", action="store_true", default=None, help="enable unclean leader election")
    p.add_argument("--flush-messages", type=int, metavar="N", help="flush.messages (default: OS decides)")
    p.add_argument("--flush-ms", type=int, metavar="MS", help="flush.ms (default: OS decides)")
    p.add_argument("--reassignment-mode", choices=["all-at-once", "incremental"])
    p.add_argument("--inject-bug", metavar="NAME", help="a deliberate rule break in the servers (self-test)")
    p.add_argument("--op-timeout", type=float, metavar="S", help="client op timeout -> info (default 10)")
    p.add_argument("--recovery-timeout", type=float, metavar="S", help="wait for the cluster (default 60)")
    p.add_argument("--final-read-timeout", type=float, metavar="S", help="final read budget (default 60)")
    p.add_argument("--topic", help="topic name (default kraftcheck)")
    p.add_argument("--test-name", help="store sub-directory (default queue)")
    p.add_argument("--store", metavar="DIR", help="store root (default $KRAFTCHECK_STORE or ./store)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-report", action="store_true", help="skip report.html")
    return p


def options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Spec options the user actually gave (None = not given)."""
    options = {key: getattr(args, dest) for dest, key in OPTION_KEYS.items() if getattr(args, dest) is not None}
    if args.unclean:
        options["unclean_leader_election"] = True
    return options


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck run``."""
    from harness.spec import SpecError, build_spec, load_spec, replay_options

    parser = build_parser()
    args = parser.parse_args(argv)
    options: dict[str, Any] = {}
    try:
        if args.replay:
            stored = load_spec(args.replay)
            options.update(replay_options(stored))
            if stored.get("image"):
                options["image"] = stored["image"]
        options.update(options_from_args(args))
        spec = build_spec(options, argv=["kraftcheck", "run", *argv])
    except SpecError as exc:
        parser.print_usage(sys.stderr)
        print(f"kraftcheck run: error: {exc}", file=sys.stderr)
        return 2
    if spec["nemesis"]:
        try:
            from nemesis.registry import build_package

            build_package(spec["nemesis"], seed=spec["seed"])  # validates the names before anything starts
        except ImportError as exc:
            print(f"kraftcheck run: error: the nemesis is not available ({exc})", file=sys.stderr)
            return 255
        except ValueError as exc:
            parser.print_usage(sys.stderr)
            print(f"kraftcheck run: error: --nemesis: {exc}", file=sys.stderr)
            return 2
    if spec["backend"] == "docker":
        problem = docker_problem()
        if problem:
            print(f"kraftcheck run: {problem}", file=sys.stderr)
            return 255
    from harness.runner import execute

    outcome = execute(spec, args.store, progress=not args.no_progress, report=not args.no_report)
    return outcome.exit_code


def docker_problem() -> str | None:
    """A clear message when no Docker engine is reachable (None when it is), with the local-backend hint."""
    try:
        import docker
    except ImportError:
        return "the docker Python SDK is not installed; use --backend local"
    try:
        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except Exception as exc:
        return (f"cannot reach a Docker engine ({type(exc).__name__}: {exc}).\n"
                "Start Docker (or set DOCKER_HOST), or run without Docker: --backend local")
    return None
