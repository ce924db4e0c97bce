"""The runner: one run from spec to verdict, with teardown on every exit path.

Sequence (docs/history-schema.md): store directory and ``spec.json`` (written first, so even a run killed in
its first second can be analysed) -> host -> nemesis setup (before any node starts: the clock and disk
nemeses prepare environments and mounts) -> ``history.jsonl`` opened (its clock starts here, so node
startup events in the trace have non-negative times) -> cluster up, topic created -> main phase
(the workload named by ``spec.workload``, from ``workloads.registry``, + nemesis schedule,
time-limited) -> final phase (heal everything, wait for recovery, run the workload's final generator:
for the queue, read every partition from the beginning) -> traces and logs collected -> teardown ->
``check_run`` -> fault coverage -> the verdict (``harness.verdict.decide``: a requested fault that
never took effect, or a harness note such as an incomplete final read, caps it at ``unknown``) ->
``results.json`` -> the columnar history ``history.parquet`` (``write_columnar``) -> ``report.html``.

Teardown is guaranteed by ``finally`` plus an ``atexit`` hook, and SIGTERM is turned into the same
``KeyboardInterrupt`` path as Ctrl-C, so nemesis faults are healed and nodes stopped on every path the
process survives. When the harness itself is killed with SIGKILL nothing can run: the nodes die with it
(parent-death signal on the local backend) and ``kraftcheck clean`` removes what is left; the partial
store (spec, streamed history, harness.log) is still analysable with ``kraftcheck analyze``.

The judge pipeline is ``kraftcheck.judge``, the teardown stack ``kraftcheck.teardown``; exit codes: the
table ``harness.verdict.EXIT_CODES``.
"""

from __future__ import annotations

import atexit
import logging
import os
import random
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import hosts, store
from harness.clusters import facts as sut_facts
from harness.clusters import make_cluster, planned_nodes, resolve
from harness.context import RunContext
from harness.history import HistoryWriter
from harness.interpreter import Interpreter
from harness.spec import (
    RunSpec,
    controllers_phrase,
    injected_bug_label,
    replay_command,
    split_stored,
    stored_form,
)
from harness.verdict import Verdict, decide, record, verdict_lines
from kraftcheck.judge import check_store, write_columnar
from kraftcheck.progress import RunProgress
from kraftcheck.teardown import TeardownStack, install_signal_handlers, restore_signal_handlers
from nemesis.registry import build_package
from nemesis.targets import coordinator_targets
from reports.run_report import write_report
from workloads.registry import workload_for


class HarnessError(RuntimeError):
    """The harness could not do its job (bad environment, cluster never came up); the exit code of a harness error."""


@dataclass
class RunOutcome:
    """What a finished (or failed) run left behind."""

    run_dir: Path
    exit_code: int
    results: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def verdict(self) -> str:
        """The verdict's word: valid, invalid or unknown (also for a harness error)."""
        return Verdict.of(self.results).word

    @property
    def spec_path(self) -> Path:
        """The stored spec (replay with ``kraftcheck run --replay``)."""
        return self.run_dir / store.SPEC

    @property
    def replay(self) -> str:
        """The exact replay command."""
        return replay_command({}, self.spec_path)


# -- hosts -----------------------------------------------------------------------------------------

def make_host(spec: RunSpec, run_dir: Path) -> Any:
    """The host backend named by ``spec.backend``; ``HarnessError`` with a hint when unusable."""
    backend = spec.backend
    if backend not in hosts.BACKENDS:
        raise HarnessError(f"unknown backend {backend!r}; known: {', '.join(hosts.BACKENDS)}")
    try:
        return hosts.make_host(backend, run_dir)
    except Exception as exc:
        if backend == "docker" and docker_engine_missing(exc):
            raise HarnessError(f"cannot reach a Docker engine ({type(exc).__name__}: {exc}). "
                               "Start Docker or run without it: --backend local") from exc
        raise


def docker_engine_missing(exc: BaseException) -> bool:
    """Whether an exception means "no Docker engine reachable" (socket missing, refused, SDK DockerException)."""
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(s in text for s in ("dockerexception", "connection refused", "no such file or directory",
                                   "error while fetching server api version", "docker.sock",
                                   "cannot connect to the docker daemon", "permission denied"))


# -- the run ---------------------------------------------------------------------------------------

class TimedRunContext(RunContext):
    """A ``RunContext`` whose log lines carry the seconds since the run started (harness.log timeline)."""

    def log(self, message: str) -> None:
        """Log with an elapsed-time prefix."""
        started = self.__dict__.setdefault("_started", time.monotonic())
        super().log(f"{time.monotonic() - started:7.2f}s {message}")


def narrow_final_read(spec: RunSpec, cluster: Any) -> tuple[list[int], list[int]]:
    """The keys (partitions of the run's topic) a final phase can read because they have a leader, and the
    keys left out, for when recovery gave up: a KIP-966 partition whose every eligible replica crashed stays
    leaderless by design (K10), and it must not keep the final read from reading all the others. The
    checkers judge the writes of the partitions left out as unknown (no final read reached them)."""
    led = sorted(p for p, state in cluster.partitions(spec.topic).items() if state["leader"] >= 0)
    left_out = sorted(set(range(int(spec.keys))) - set(led))
    return led, left_out


FINAL_PROCESS = 10_000_000
"""The first process id of the final phase's readers: above every main-phase process."""


class Runner:
    """Executes one run of ``spec`` into a new directory under ``store_root``."""

    def __init__(self, spec: RunSpec, store_root: Path, progress: bool = True, report: bool = True,
                 out: Any = None, environment: Mapping[str, Any] | None = None):
        if spec.seed is None:
            raise ValueError("a run's spec has its seed fixed before it starts (harness.spec.prepare_spec)")
        self.spec = spec
        # Facts beside the spec (``harness.spec.prepare_spec``); the run adds what it learns (the image tag,
        # what the system under test declares) here, and ``spec.json`` is written from both.
        self.environment = dict(environment or {})
        self.store_root = Path(store_root)
        self.progress = progress
        self.report = report
        self.out = out or sys.stdout
        self.run_dir: Path | None = None
        self.notes: list[str] = []

    def say(self, message: str) -> None:
        """A user-facing line on stdout (seed, verdict, paths, replay command)."""
        print(message, file=self.out, flush=True)

    def execute(self) -> RunOutcome:
        """Run everything; never raises (a harness failure gets the exit code of a harness error, with the error
        recorded)."""
        spec = self.spec
        self.run_dir = store.new_run_dir(self.store_root, spec.test_name)
        try:
            sut = resolve(spec)
            # What the system declares is judged as it was when the run was made (checkers read it back).
            self.environment["sut_facts"] = sut_facts(sut)
        except Exception as exc:  # the run command refuses these at once; here they end the run
            sut, sut_error = None, f"{type(exc).__name__}: {exc}"
        else:
            sut_error = None
        self._write_spec()
        store.update_latest(self.store_root, self.run_dir)
        self.say(f"kraftcheck: seed {spec.seed}  store {self.run_dir}")
        teardown = TeardownStack()
        run = TimedRunContext(spec=spec, host=None, store_dir=self.run_dir,  # type: ignore[arg-type]
                              rng=random.Random(spec.seed), sut=sut, environment=self.environment)
        run.log(f"seed {spec.seed}, spec {self.run_dir / store.SPEC}")
        client_log = self._route_client_logs()
        teardown.add("client-log", client_log)
        atexit_hook = lambda: teardown.run(run.log)  # noqa: E731
        atexit.register(atexit_hook)
        previous = install_signal_handlers()
        error = None
        try:
            if sut_error is not None:
                raise HarnessError(f"system under test: {sut_error}")
            self._run(run, teardown)
        except KeyboardInterrupt as exc:
            error = f"interrupted ({exc or 'Ctrl-C'})"
            self.notes.append(f"run interrupted: {error}")
            run.log(error)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            run.log(f"harness error: {error}\n{traceback.format_exc()}")
        finally:
            try:
                teardown.run(run.log)
            except KeyboardInterrupt:
                teardown.run(run.log)
            restore_signal_handlers(previous)
            atexit.unregister(atexit_hook)
        return self._finish(run, error)

    def _open_host(self, run: RunContext, teardown: TeardownStack, label: str = "") -> Any:
        """Create the spec's host, register its teardown (and the run's cleanups, which need it) and record
        the image tag in ``spec.json``. Shared by the random and the scripted runner. Returns the host."""
        spec = self.spec
        host = make_host(spec, self.run_dir)
        run.host = host
        teardown.add("host", lambda: self._teardown_host(host))
        teardown.add("run-cleanup", lambda: self._run_cleanup(run))
        run.log(f"{label}host {host.name}, run id {getattr(host, 'run_id', None)}")
        if getattr(host, "image", None):
            # The image tag is a hash of its inputs: record it so a replay can tell if the image changed.
            self.environment["image"] = host.image
            self._write_spec()
            run.log(f"image {host.image}")
        return host

    def _open_cluster(self, run: RunContext, teardown: TeardownStack) -> tuple[HistoryWriter, Any]:
        """Open the streamed history (and its clock record), start the cluster on ``run.host`` and create
        the spec's topic, registering the teardown of each. Shared by the random and the scripted runner.
        Returns ``(history, cluster)``."""

        spec = self.spec
        history = HistoryWriter(self.run_dir / store.HISTORY)
        run.history = history
        # The history's clock origin, so that node traces can be rebased even if this process dies.
        store.write_json(self.run_dir / store.CLOCK, store.clock_record(history.start_ns))
        teardown.add("history", history.close)

        cluster = make_cluster(run.sut, run.host, run, spec.recovery_timeout_s)
        run.cluster = cluster
        # Collect evidence before the nodes are stopped, whatever happened; then stop them.
        teardown.add("cluster", cluster.teardown)
        teardown.add("collect", lambda: self._collect(cluster, history.start_ns, run))
        run.log(f"starting {controllers_phrase(spec.controllers)} + {spec.brokers} brokers on the {spec.backend} backend")
        cluster.setup(spec)
        cluster.create_topic(spec.topic, spec.keys, spec.replication_factor,
                             assignment=self.topic_assignment())
        run.log(f"cluster ready: {','.join(cluster.bootstrap_servers())}")
        return history, cluster

    def topic_assignment(self) -> dict[int, list[int]] | None:
        """Explicit replica placement for the spec's topic (None: the controller places it)."""
        return None

    def _run(self, run: RunContext, teardown: TeardownStack) -> None:
        spec = self.spec
        workload = workload_for(spec.workload)
        self._open_host(run, teardown)

        run.planned_nodes = planned_nodes(run.sut, spec)
        package = None
        if spec.nemesis:
            package = build_package(spec.nemesis, seed=spec.seed, interval_s=spec.nemesis_interval_s,
                                    controllers=int(spec.controllers or 1),
                                    coordinators=coordinator_targets(spec.sub_via, spec.txn))
            plan = (f"nemesis: first round {', '.join(package.schedule.first_round())} (one turn each), then "
                    f"random subsets; mean interval {spec.nemesis_interval_s:g} s")
            run.log(plan)
            teardown.add("nemesis-teardown", lambda: package.teardown(run))
            package.setup(run)  # NemesisUnsupported propagates with its message: a harness error

        history, cluster = self._open_cluster(run, teardown)

        if package is not None:
            # Heal on every exit path, before the nodes are stopped (teardown runs in reverse order).
            teardown.add("nemesis-heal", lambda: self._heal_quietly(package, run))

        interpreter = Interpreter(run, workload.client_factory(spec, cluster, run, None), spec.concurrency,
                                  spec.op_timeout_s, node_for=workload.node_for(cluster))
        teardown.add("clients", interpreter.close)
        # Runs first on an interrupt: workers stop invoking before anything they use is torn down.
        teardown.add("stop-workers", interpreter.stop)
        main_s = spec.time_limit_s
        with RunProgress(main_s, "main phase", enabled=self.progress) as progress:
            interpreter.on_complete = progress.on_complete
            if package is not None:
                # The package records its own ops; count its completions (half of its log is invokes).
                progress.counters.nemesis_source = lambda: sum(
                    1 for op in package.log if op.get("type") != "invoke")
            nemesis_thread, nemesis_stop = None, threading.Event()
            if package is not None:
                deadline = time.monotonic() + main_s
                nemesis_thread = threading.Thread(target=package.run, args=(run, deadline, nemesis_stop),
                                                  name="kraftcheck-nemesis", daemon=True)
                nemesis_thread.start()
            try:
                stats = interpreter.run_phase(workload.generator(spec),
                                              max_duration_s=main_s + spec.op_timeout_s + 5)
                if stats.errors:
                    raise HarnessError(f"a worker failed:\n{stats.errors[0]}")
            finally:
                nemesis_stop.set()
                if nemesis_thread is not None:
                    nemesis_thread.join(60)
        self.say(f"kraftcheck: main phase done: {progress.counters.summary()}")
        run.log("main phase done; final phase")
        self._final_phase(run, cluster, package)

    def _route_client_logs(self) -> Any:
        """kafka-python's warnings (connection refused while a broker is down, ...) go to client.log in
        the run directory instead of the terminal; returns the function that undoes it."""

        logger = logging.getLogger("kafka")
        handler = logging.FileHandler(self.run_dir / "client.log", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s"))
        handler.setLevel(logging.WARNING)
        previous = (logger.propagate, logger.level)
        logger.addHandler(handler)
        logger.propagate = False
        if logger.level == logging.NOTSET or logger.level > logging.WARNING:
            logger.setLevel(logging.WARNING)

        def undo() -> None:
            logger.removeHandler(handler)
            handler.close()
            logger.propagate, level = previous
            logger.setLevel(level)

        return undo

    def _heal_quietly(self, package: Any, run: RunContext) -> None:
        if not getattr(self, "_healed", False):
            package.heal(run)
            self._healed = True

    def _final_phase(self, run: RunContext, cluster: Any, package: Any) -> None:
        """Heal, wait for recovery, then run the workload's final generator (the queue's: read every
        partition from the beginning, ops marked final) until one of its ops completes ok."""

        spec = self.spec
        if package is not None:
            completion = package.heal(run)
            self._healed = True
            if completion.get("type") != "ok":
                self.notes.append(f"final heal did not complete: {completion.get('error')}")
        final_keys = None  # every partition
        if not cluster.wait_recovered(spec.recovery_timeout_s, spec.topic):
            self.notes.append(f"cluster did not recover within {spec.recovery_timeout_s:g} s after healing")
            run.log(self.notes[-1])
            final_keys = self._readable_only(cluster, run)
        workload = workload_for(spec.workload)
        if workload.final_generator is None:
            run.log(f"workload {workload.name} has no final phase")
            return
        read_timeout = min(30.0, spec.final_read_timeout_s)
        # Final readers are fresh processes, numbered above every main-phase process.
        final = Interpreter(run, workload.client_factory(spec, cluster, run, read_timeout),
                            concurrency=1, op_timeout_s=read_timeout + 5, node_for=workload.node_for(cluster),
                            first_process=FINAL_PROCESS)
        deadline = time.monotonic() + spec.final_read_timeout_s
        try:
            while time.monotonic() < deadline:
                stats = final.run_phase(workload.final_generator(spec, final_keys), workers=1)
                if stats.errors:
                    raise HarnessError(f"the final reader failed:\n{stats.errors[0]}")
                if stats.by_type.get("ok"):
                    run.log("final read complete")
                    return
                if final.stopped:
                    break
                time.sleep(1.0)
                final.retire_all()
        finally:
            final.close()
        self.notes.append(f"final read did not complete within {spec.final_read_timeout_s:g} s")
        run.log(self.notes[-1])

    def _readable_only(self, cluster: Any, run: RunContext) -> list[int] | None:
        try:
            narrowed, left_out = narrow_final_read(self.spec, cluster)
        except Exception as exc:  # the whole read is tried then, as when every partition is led
            run.log(f"partition leaders unknown ({type(exc).__name__}: {exc}); the final read tries them all")
            return None
        if left_out:
            self.notes.append(f"final read leaves out leaderless partition(s) {left_out}")
            run.log(self.notes[-1])
        return narrowed

    def _collect(self, cluster: Any, start_ns: int, run: RunContext) -> None:
        run.log("collecting traces and logs; tearing down")
        # Brokers trace their logs' contents (log_summary, I4/I16) on a clean stop: SIGTERM them first so
        # the summaries are in the traces collected below (teardown is idempotent; the files stay).
        cluster.teardown()
        try:
            count = cluster.write_trace(self.run_dir / store.TRACE, start_ns)
            run.log(f"trace.jsonl: {count} events")
        except Exception as exc:
            run.log(f"collecting traces failed: {type(exc).__name__}: {exc}")
        try:
            cluster.collect_logs(self.run_dir / store.NODES)
        except Exception as exc:
            run.log(f"collecting logs failed: {type(exc).__name__}: {exc}")

    def _run_cleanup(self, run: RunContext) -> None:
        """``run.cleanup``: callables anyone registered during the run, in reverse order, each guarded."""
        while run.cleanup:
            action = run.cleanup.pop()
            try:
                action()
            except Exception as exc:
                run.log(f"cleanup action {action!r} failed: {type(exc).__name__}: {exc}")

    def _teardown_host(self, host: Any) -> None:
        host.teardown()
        remove = getattr(host, "remove_node_dirs", None)
        if callable(remove) and not os.environ.get("KRAFTCHECK_KEEP_DATA"):
            remove()

    def stored_spec(self) -> dict[str, Any]:
        """What ``spec.json`` holds: the spec and the environment facts (``harness.spec.stored_form``)."""
        return stored_form(self.spec, self.environment)

    def _write_spec(self) -> None:
        assert self.run_dir is not None
        store.write_json(self.run_dir / store.SPEC, self.stored_spec())

    def replay(self) -> str:
        """The command that repeats this run (``kraftcheck run --replay`` of its stored spec)."""
        return replay_command({}, self.run_dir / store.SPEC)

    def _harness_error(self, results: dict[str, Any], error: str) -> RunOutcome:
        """Store the results of a run the harness could not complete (``results`` holds what else it
        knows), say where to look; the exit code is that of a harness error."""
        verdict = decide({}, harness_error=error)
        results = record({"checkers": {}, **results}, verdict)
        store.write_json(self.run_dir / store.RESULTS, results)
        self.say(f"kraftcheck: harness error: {error}")
        self.say(f"kraftcheck: store {self.run_dir}  (see harness.log)")
        self.say(f"kraftcheck: replay: {self.replay()}")
        return RunOutcome(self.run_dir, verdict.exit_code, results, error)

    def _say_verdict(self, results: dict[str, Any], report_path: Path | None, error: str | None) -> RunOutcome:
        """Print the verdict and its reasons, where the results and the report are and the replay
        command; the outcome's exit code follows the verdict."""
        if self.spec.inject_bug:
            self.say(f"kraftcheck: injected bug {injected_bug_label(self.spec.inject_bug)}")
        for line in verdict_lines(results):
            self.say(f"kraftcheck: {line}")
        self.say(f"kraftcheck: results {self.run_dir / store.RESULTS}")
        if report_path is not None:
            self.say(f"kraftcheck: report {report_path}")
        self.say(f"kraftcheck: replay: {self.replay()}")
        return RunOutcome(self.run_dir, Verdict.of(results).exit_code, results, error)

    def _finish(self, run: RunContext, error: str | None) -> RunOutcome:
        """Judge the stored run, write its results, columnar history and report, and say the verdict.
        Subclasses add to the results through ``extend_results`` and to the output through
        ``verdict_preamble``, and say what a harness error leaves known through ``error_details``."""
        run_dir = self.run_dir
        assert run_dir is not None
        if error is not None and not error.startswith("interrupted"):
            return self._harness_error(self.error_details(), error)
        run.log("teardown done; checking")
        results = self.extend_results(run_dir, check_store(run_dir, self.stored_spec(), self.notes), error)
        store.write_json(run_dir / store.RESULTS, results)
        run.log(f"checked: verdict {results['verdict']}")
        write_columnar(run_dir, run.log)
        report_path = None
        if self.report:
            try:
                report_path = write_report(run_dir)
                run.log("report written")
            except Exception as exc:
                run.log(f"report failed: {type(exc).__name__}: {exc}")
        for line in self.verdict_preamble(results):
            self.say(f"kraftcheck: {line}")
        return self._say_verdict(results, report_path, error)

    # -- hooks for runs with a script (kraftcheck.scenarios.script) -------------------------------------

    def error_details(self) -> dict[str, Any]:
        """What ``results.json`` records besides the error when the harness could not complete the run."""
        return {}

    def extend_results(self, run_dir: Path, results: dict[str, Any], error: str | None) -> dict[str, Any]:
        """The checked results with whatever this kind of run adds (a scenario's section); unchanged here."""
        return results

    def verdict_preamble(self, results: dict[str, Any]) -> list[str]:
        """Lines printed before the verdict (a scenario's decisive facts); none here."""
        return []

def execute(spec: RunSpec | Mapping[str, Any], store_root: str | os.PathLike | None = None, progress: bool = True,
            report: bool = True, out: Any = None, environment: Mapping[str, Any] | None = None) -> RunOutcome:
    """Run ``spec`` and return the outcome. ``spec``: the typed spec with its seed fixed and ``environment``
    its facts (``harness.spec.prepare_spec``), or a spec in its stored form (``build_spec``, a replayed
    ``spec.json``), which is split into the two here."""
    if not isinstance(spec, RunSpec):
        spec, stored_environment = split_stored(spec)
        environment = {**stored_environment, **(environment or {})}
    return Runner(spec, store.store_root(store_root), progress=progress, report=report, out=out,
                  environment=environment).execute()
