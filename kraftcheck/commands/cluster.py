"""kraftcheck cluster up|down|status: a reference cluster for manual work.

up starts a background keeper process that owns the cluster, waits until it reports the cluster ready,
prints the bootstrap servers and returns, leaving the cluster running (on the local backend the nodes
stop with the process that started them, hence the keeper). down stops the keeper, which stops the nodes
and removes what they left; if that fails, kraftcheck clean is the fallback. One manual cluster at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from harness import store
from harness.clusters import make_cluster, resolve
from harness.context import RunContext
from harness.hosts import state
from harness.spec import RunSpec, SpecError, prepare_spec, split_stored, stored_form
from harness.spec_cli import add_options, options_from_args
from harness.verdict import EXIT_HARNESS_ERROR, EXIT_INVALID, EXIT_OK, EXIT_USAGE
from kraftcheck.commands.preflight import docker_problem
from kraftcheck.runner import make_host

# status: no cluster is running; up: one already is. Not a verdict nor a harness error: the shell's plain "no",
# which is the code of invalid in the table.
EXIT_NOT_AS_ASKED = EXIT_INVALID

RECORD = "manual-cluster.json"
# The hidden action that runs the keeper itself (started by 'up'; not part of the public command line).
KEEPER_ACTION = "keeper-process"


def _record_path() -> Path:
    return state.state_dir() / RECORD


def _read_record() -> dict[str, Any] | None:
    try:
        return json.loads(_record_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _keeper_alive(record: dict[str, Any]) -> bool:
    return state.same_process_alive(record.get("pid"), record.get("start_time"))


def build_parser() -> argparse.ArgumentParser:
    """``up`` (with the cluster options of the spec's field table) / ``down`` / ``status``."""
    p = argparse.ArgumentParser(prog="kraftcheck cluster", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", required=True, metavar="{up,down,status}")
    up = sub.add_parser("up", help="start a cluster and leave it running",
                        description="Start a reference cluster and leave it running.")
    up.add_argument("--store", metavar="DIR", help="store root; node logs go to STORE/cluster/... "
                    "(default: $KRAFTCHECK_STORE, else ./store)")
    up.add_argument("--timeout", type=float, default=90.0, metavar="S",
                    help="seconds to wait for the cluster to be ready (default: 90)")
    add_options(up, "cluster", default_notes={"replication_factor": "3, at most the broker count",
                                              "min_isr": "2, at most the replication factor"})
    sub.add_parser("down", help="stop the cluster started by 'up'")
    sub.add_parser("status", help="print the running cluster's bootstrap servers")
    return p


def keeper_parser() -> argparse.ArgumentParser:
    """The arguments of the keeper process (see ``KEEPER_ACTION``)."""
    p = argparse.ArgumentParser(prog=f"kraftcheck cluster {KEEPER_ACTION}")
    p.add_argument("--spec", required=True)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--ready-file", required=True)
    return p


def main(argv: list[str]) -> int:
    """Entry point of ``kraftcheck cluster``."""
    if argv[:1] == [KEEPER_ACTION]:
        return keeper(keeper_parser().parse_args(argv[1:]))
    args = build_parser().parse_args(argv)
    if args.action == "up":
        return up(args)
    if args.action == "down":
        return down()
    if args.action == "status":
        record = _read_record()
        if record is None or not _keeper_alive(record):
            print("no cluster is running (kraftcheck cluster up starts one)")
            return EXIT_NOT_AS_ASKED
        print(",".join(record["bootstrap"]))
        return EXIT_OK
    raise AssertionError(f"unhandled action {args.action!r}")  # argparse allows only the three above


def cluster_spec(args: argparse.Namespace) -> tuple[RunSpec, dict[str, Any]]:
    """The spec of a manual cluster and its environment facts: the options given, the replication factor and
    MinISR capped by the broker count when not given (``SpecError`` for a bad value)."""
    options = {"test_name": "cluster", **options_from_args(args, "cluster")}
    brokers = options.get("brokers", 3)
    if isinstance(brokers, int):
        options.setdefault("replication_factor", min(3, brokers))
    if isinstance(options.get("replication_factor"), int):
        options.setdefault("min_isr", min(2, options["replication_factor"]))
    return prepare_spec(options)


def up(args: argparse.Namespace) -> int:
    """Start the keeper and wait until it reports the cluster ready (or failed)."""

    record = _read_record()
    if record is not None and _keeper_alive(record):
        print(f"a cluster is already running: {','.join(record['bootstrap'])} (kraftcheck cluster down "
              "stops it)", file=sys.stderr)
        return EXIT_NOT_AS_ASKED
    try:
        spec, environment = cluster_spec(args)
    except SpecError as exc:
        print(f"kraftcheck cluster up: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if spec.backend == "docker":
        problem = docker_problem()
        if problem:
            print(f"kraftcheck cluster up: {problem}", file=sys.stderr)
            return EXIT_HARNESS_ERROR
    root = store.store_root(args.store)
    run_dir = store.new_run_dir(root, "cluster")
    store.write_json(run_dir / store.SPEC, stored_form(spec, environment))
    ready = run_dir / "ready.json"
    log = open(run_dir / "keeper.log", "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kraftcheck.cli", "cluster", KEEPER_ACTION, "--spec", str(run_dir / store.SPEC),
         "--run-dir", str(run_dir), "--ready-file", str(ready)],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if ready.is_file():
            report = json.loads(ready.read_text(encoding="utf-8"))
            if report.get("error"):
                print(f"kraftcheck cluster up: {report['error']}\n(keeper log: {run_dir / 'keeper.log'})",
                      file=sys.stderr)
                proc.wait(30)
                return EXIT_HARNESS_ERROR
            print(",".join(report["bootstrap"]))
            print(f"kraftcheck: cluster up ({spec.backend}); logs in {run_dir}; stop it with "
                  "'kraftcheck cluster down'", file=sys.stderr)
            return EXIT_OK
        if proc.poll() is not None:
            print(f"kraftcheck cluster up: the keeper exited ({proc.returncode}); see {run_dir / 'keeper.log'}",
                  file=sys.stderr)
            return EXIT_HARNESS_ERROR
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGTERM)
    print(f"kraftcheck cluster up: not ready after {args.timeout:g} s; see {run_dir / 'keeper.log'}",
          file=sys.stderr)
    return EXIT_HARNESS_ERROR


def keeper(args: argparse.Namespace) -> int:
    """The detached owner of a manual cluster: start it, report, wait for SIGTERM, tear down."""


    spec, environment = split_stored(store.read_json(args.spec))
    run_dir = Path(args.run_dir)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    host = cluster = None
    ready = Path(args.ready_file)
    try:
        host = make_host(spec, run_dir)
        sut = resolve(spec)
        run = RunContext(spec=spec, host=host, store_dir=run_dir, rng=random.Random(spec.seed), sut=sut,
                         environment=environment)
        cluster = make_cluster(sut, host, run, spec.recovery_timeout_s)
        run.cluster = cluster
        cluster.setup(spec)
        cluster.create_topic(spec.topic, spec.keys, spec.replication_factor)
        record = {"pid": os.getpid(), "start_time": state.proc_start_time(os.getpid()),
                  "bootstrap": cluster.bootstrap_servers(), "run_dir": str(run_dir),
                  "backend": spec.backend, "run_id": getattr(host, "run_id", None), "topic": spec.topic}
        store.write_json(_record_path(), record)
        store.write_json(ready, {"bootstrap": record["bootstrap"]})
        while not stop.wait(1.0):
            pass
        return EXIT_OK
    except Exception as exc:
        store.write_json(ready, {"error": f"{type(exc).__name__}: {exc}"})
        return EXIT_HARNESS_ERROR
    finally:
        if cluster is not None:
            try:
                cluster.collect_logs(run_dir / store.NODES)
            except Exception:
                pass
            cluster.teardown()
        if host is not None:
            host.teardown()
            remove = getattr(host, "remove_node_dirs", None)
            if callable(remove):
                remove()
        record = _read_record()
        if record is not None and record.get("pid") == os.getpid():
            _record_path().unlink(missing_ok=True)


def down(timeout_s: float = 60.0) -> int:
    """Stop the manual cluster (SIGTERM to its keeper, SIGKILL after ``timeout_s``)."""
    record = _read_record()
    if record is None:
        print("no cluster is running")
        return EXIT_OK
    if not _keeper_alive(record):
        _record_path().unlink(missing_ok=True)
        print("the cluster's keeper is gone; 'kraftcheck clean' removes any leftovers")
        return EXIT_OK
    pid = record["pid"]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s

    while time.monotonic() < deadline and state.same_process_alive(pid, record.get("start_time")):
        time.sleep(0.2)
    if state.same_process_alive(pid, record.get("start_time")):
        os.killpg(pid, signal.SIGKILL)
        print(f"the keeper did not stop in {timeout_s:g} s and was killed; run 'kraftcheck clean'",
              file=sys.stderr)
        _record_path().unlink(missing_ok=True)
        return EXIT_HARNESS_ERROR
    print(f"cluster down (logs in {record['run_dir']})")
    return EXIT_OK
