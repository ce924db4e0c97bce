"""``ScriptedRunner``: a run whose main phase is a script of named steps instead of a random schedule.

It is a ``kraftcheck.runner.Runner`` (same store layout, ``spec.json`` first, streamed ``history.jsonl``,
merged ``trace.jsonl``, teardown on every exit path, ``check_store``, ``report.html``) with two changes:
- the main phase calls the scenario's ``script(runner, run, cluster)``; the script drives clients and
  the nemesis package one op at a time through ``send`` / ``fault`` (each recorded as an invocation and
  a completion, so the checkers see exactly what happened) and waits on protocol states read from the
  nodes' traces (``wait_for``); every milestone is a ``step`` with the facts observed at that moment;
- ``extend_results`` adds a ``scenario`` section to ``results.json`` (steps, decisive facts computed from the
  stored trace, the scenario's expectation and whether it was met), which ``report.html`` shows at the
  top (``reports.scenario_block``), and prints them with the scenario's own replay command.

A step that cannot reach its state raises ``ScenarioError`` (a harness error): the run did not
reproduce the situation, so no verdict about the protocol can be drawn from it. An expectation that is
not met after a complete script caps a green verdict at ``unknown`` (the fault sequence ran but the
reproduction did not happen, e.g. the data was synced after all), while a forbidden anomaly stays
``invalid``.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from checkers.history import read_trace
from harness import store
from harness.clusters import planned_nodes
from harness.history import HistoryWriter, read_history
from harness.spec import RunSpec, controllers_phrase
from harness.verdict import add_notes
from kraftcheck.runner import HarnessError, Runner
from kraftcheck.teardown import TeardownStack
from nemesis.registry import build_package

POLL_S = 0.2


class ScenarioError(HarnessError):
    """A scripted step could not bring the cluster into the state the scenario needs."""


class ScriptedRunner(Runner):
    """Runs one registered scenario (``kraftcheck.scenarios.Scenario``) into a new store directory."""

    def __init__(self, scenario: Any, spec: RunSpec, store_root: Path, progress: bool = True,
                 report: bool = True, out: Any = None, environment: dict[str, Any] | None = None):
        super().__init__(spec, store_root, progress=progress, report=report, out=out, environment=environment)
        self.scenario = scenario
        self.steps: list[dict[str, Any]] = []
        self.package: Any = None
        self.cluster: Any = None
        self.history: HistoryWriter | None = None

    # -- what a script uses --------------------------------------------------------------------------

    def step(self, run: Any, name: str, summary: str, **facts: Any) -> dict[str, Any]:
        """Record a milestone: its history time (when it was reached, i.e. after the ops that brought it
        about completed; a fault's start is its invocation in the history), a one-line summary and the
        facts observed."""
        entry = {"step": name, "time": self.history.now() if self.history else None, "summary": summary,
                 **facts}
        self.steps.append(entry)
        run.log(f"step {len(self.steps)} {name}: {summary}")
        self.say(f"kraftcheck: step {len(self.steps)} {name}: {summary}")
        return entry

    def fault(self, run: Any, f: str, value: dict[str, Any]) -> dict[str, Any]:
        """One nemesis op through the package (recorded in the history); raise unless it took effect."""
        completion = self.package.execute(run, {"f": f, "value": value})
        evidence = completion.get("value") if isinstance(completion.get("value"), dict) else {}
        if completion.get("type") != "ok" or evidence.get("effective") is False:
            raise ScenarioError(f"{f} did not take effect: {completion.get('error') or evidence}")
        return completion

    def admin(self, run: Any, f: str, value: dict[str, Any]) -> dict[str, Any]:
        """One admin op through the package, recorded like a fault; the completion is returned whatever the
        cluster answered (the script judges refusals it asked for), but an op that raised stops the script."""
        completion = self.package.execute(run, {"f": f, "value": value})
        if completion.get("type") != "ok":
            raise ScenarioError(f"{f} failed: {completion.get('error')}")
        return completion

    def record_op(self, run: Any, member: Any, f: str, value: dict[str, Any]) -> dict[str, Any]:
        """Invoke ``f`` on a nemesis ``member`` of the script's own (e.g. a second admin client racing the
        first), recorded in the history as a nemesis op: invocation, then completion."""
        invoke = run.history.append({"type": "invoke", "process": "nemesis", "f": f, "value": value})
        try:
            done = member.invoke(run, {k: v for k, v in invoke.items() if k not in ("index", "time")})
            completion = {**done, "type": done.get("type", "ok")}
        except Exception as exc:
            completion = {**invoke, "type": "info", "error": f"{type(exc).__name__}: {exc}"}
        completion = {k: v for k, v in completion.items() if k not in ("index", "time")}
        return run.history.append(completion)

    def history_time(self, raw_ns: int | None) -> int | None:
        """A raw trace time (CLOCK_MONOTONIC) on the history's clock (what step times and the stored trace use)."""
        if raw_ns is None or self.history is None:
            return None
        return int(raw_ns) - self.history.start_ns

    def topic_assignment(self) -> dict[int, list[int]] | None:
        """The scenario's replica placement for its topic (None: the controller places it)."""
        return self.scenario.assignment

    def client_op(self, run: Any, client: Any, process: int, op: dict[str, Any], node: str | None) -> dict:
        """Invoke ``op`` on ``client`` as ``process``; record invocation and completion; return the latter."""
        invoke = run.history.append({"type": "invoke", "process": process, "node": node, **op})
        try:
            done = client.invoke(run, dict(invoke))
        except Exception as exc:  # the client could not say: indeterminate (info), never lost
            done = dict(invoke, type="info", error=f"{type(exc).__name__}: {exc}")
        completion = {k: v for k, v in done.items() if k not in ("index", "time")}
        return run.history.append(completion)

    def traces(self) -> list[dict[str, Any]]:
        """Every node's trace events so far, with raw monotonic times (compare with ``time.monotonic_ns``)."""
        return self.cluster.collect_traces()

    def wait_for(self, run: Any, what: str, probe: Callable[[], tuple[bool, Any]], timeout_s: float) -> Any:
        """Poll ``probe() -> (done, observed)`` until done; raise ``ScenarioError`` naming ``what`` and the
        last observation on timeout. Returns the final observation."""
        deadline = time.monotonic() + timeout_s
        observed: Any = None
        while True:
            try:
                done, observed = probe()
            except Exception as exc:  # a node restarting, a torn trace line: look again
                done, observed = False, f"{type(exc).__name__}: {exc}"
            if done:
                return observed
            if time.monotonic() >= deadline:
                raise ScenarioError(f"timed out after {timeout_s:g} s waiting for {what}; last seen: {observed}")
            time.sleep(POLL_S)

    # -- the run ---------------------------------------------------------------------------------------

    def _run(self, run: Any, teardown: TeardownStack) -> None:
        spec = self.spec
        self._open_host(run, teardown, label=f"scenario {self.scenario.name}; ")

        run.planned_nodes = planned_nodes(run.sut, spec)
        package = build_package(spec.nemesis, seed=spec.seed, interval_s=spec.nemesis_interval_s,
                                controllers=int(spec.controllers or 1))
        self.package = package
        teardown.add("nemesis-teardown", lambda: package.teardown(run))
        package.setup(run)  # NemesisUnsupported (no root, no FUSE) propagates with its message

        self.history, self.cluster = self._open_cluster(run, teardown)
        cluster = self.cluster
        # Heal on every exit path, before the nodes are stopped (teardown runs in reverse order).
        teardown.add("nemesis-heal", lambda: self._heal_quietly(package, run))
        self.step(run, "cluster-up", f"{controllers_phrase(spec.controllers)} + {spec.brokers} brokers, topic {spec.topic} "
                  f"RF {spec.replication_factor} MinISR {spec.min_isr}, variant {spec.variant}")
        self.scenario.script(self, run, cluster)
        run.log("script done; final phase (heal everything, wait for recovery, read everything)")
        self._final_phase(run, cluster, package)
        self.step(run, "final-read", "final phase done: " + ("; ".join(self.notes) or "healed, recovered, read"))

    # -- results ---------------------------------------------------------------------------------------

    def replay(self) -> str:
        """The command that repeats this scenario run."""
        return shlex.join(scenario_argv(self.scenario.name, self.spec))

    def error_details(self) -> dict[str, Any]:
        """A harness error still records the scenario's name and the steps it reached."""
        return {"scenario": {"name": self.scenario.name, "steps": self.steps}}

    def extend_results(self, run_dir: Path, results: dict[str, Any], error: str | None) -> dict[str, Any]:
        """The results with the ``scenario`` section; an unmet expectation after a complete script caps the
        verdict at ``unknown`` (the report renders the section itself)."""
        section = self.scenario_section(run_dir, results)
        results["scenario"] = section
        if not section["expectation_met"] and error is None:
            results = add_notes(results, [f"scenario expectation not met: {section['expectation']}"])
        return results

    def verdict_preamble(self, results: dict[str, Any]) -> list[str]:
        """The scenario's decisive facts, before the verdict."""
        return list(results["scenario"]["lines"])

    def scenario_section(self, run_dir: Path, results: dict[str, Any]) -> dict[str, Any]:
        """``results["scenario"]``: steps, the scenario's decisive facts and its expectation verdict."""

        trace_path = run_dir / store.TRACE
        events = read_trace(trace_path, []) if trace_path.is_file() else []
        history_path = run_dir / store.HISTORY
        ops = read_history(history_path).ops if history_path.is_file() else []
        judged = self.scenario.judge(self.spec, self.steps, ops, events, results)
        return {"name": self.scenario.name, "recipe": self.scenario.recipe, "variant": self.spec.variant,
                "steps": self.steps, **judged}


def scenario_argv(name: str, spec: RunSpec) -> list[str]:
    """``kraftcheck scenario NAME --backend B --variant V --seed N`` for a spec."""
    return ["kraftcheck", "scenario", name, "--backend", str(spec.backend), "--variant", str(spec.variant),
            "--seed", str(spec.seed)]
