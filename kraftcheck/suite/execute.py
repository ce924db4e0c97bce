"""Running a suite's cells one after another into one store, keeping ``suite.json`` current.

Each cell is an ordinary run: a scenario through ``ScriptedRunner``, a randomized run through
``kraftcheck.runner.Runner``, in ``<suite root>/<test name>/<UTC start>/`` with its ``spec.json``,
``results.json`` and ``report.html`` as any run has. ``suite.json`` is rewritten (atomically) after every
cell, so an interrupted suite leaves a summary of what ran (``finished: false``).
"""

from __future__ import annotations

import platform
import random
import shlex
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness import store
from harness.spec import RunSpec, git_commit, prepare_spec, replay_command
from kraftcheck import scenarios
from kraftcheck.runner import Runner
from kraftcheck.scenarios.script import ScriptedRunner, scenario_argv
from kraftcheck.suite import outcome as judge
from kraftcheck.suite.plan import Cell

SUITE_JSON = "suite.json"
FORMAT = 1


def cell_seeds(base: int, count: int) -> list[int]:
    """One seed per cell, drawn from the suite's seed (so a suite replays with ``--seed``)."""
    rng = random.Random(base)
    return [rng.randrange(2**31) for _ in range(count)]


def cell_spec(cell: Cell, seed: int, argv: list[str]) -> tuple[Any, RunSpec, dict[str, Any]]:
    """(scenario or None, the run's spec, its environment facts) for one cell."""
    if cell.kind == "scenario":
        scenario = scenarios.get(cell.name)
        options = scenarios.scenario_options(scenario, cell.backend, cell.variant, seed)
        # Recorded before the spec is validated, as ``kraftcheck scenario`` does: the script injects the
        # faults, so the schedule's timing rule does not apply.
        options["scenario"] = scenario.name
        return scenario, *prepare_spec(options, argv=argv)
    options = {"test_name": cell.name, "workload": cell.name, "backend": cell.backend, "variant": cell.variant,
               "nemesis": list(cell.nemesis), "seed": seed, **dict(cell.options)}
    return None, *prepare_spec(options, argv=argv)


def cell_entry(cell: Cell, seed: int) -> dict[str, Any]:
    """The plan half of a suite.json cell (outcome fields are added when it has run)."""
    entry: dict[str, Any] = {
        "id": cell.cell_id, "kind": cell.kind, "name": cell.name, "variant": cell.variant, "system": cell.system,
        "backend": cell.backend,
        "nemesis": list(cell.nemesis), "nemesis_mix": cell.mix, "repeat": cell.repeat, "seed": seed,
        "expected": cell.expected, "accepted": list(cell.accepted), "options": dict(cell.options),
        "outcome": None, "matched": None, "verdict": None, "exit_code": None, "run_dir": None, "replay": None,
        "duration_s": None, "error": None, "label": None, "reproduces": None,
    }
    if cell.kind == "scenario":
        entry["reproduces"] = scenarios.get(cell.name).reproduces
    return entry


class SuiteRun:
    """Runs the cells of one suite into ``root`` (see the module docstring)."""

    def __init__(self, name: str, cells: list[Cell], root: Path, seed: int, argv: list[str],
                 options: dict[str, Any], out: Any):
        self.name, self.cells, self.root, self.seed, self.argv = name, cells, Path(root), seed, argv
        self.out = out
        seeds = cell_seeds(seed, len(cells))
        commit, dirty = git_commit()
        self.doc: dict[str, Any] = {
            "format": FORMAT, "suite": name, "command": shlex.join(argv), "seed": seed, "options": options,
            "store": str(self.root), "started_utc": datetime.now(UTC).isoformat(timespec="seconds"),
            "finished_utc": None, "finished": False,
            "environment": {"git_commit": commit, "git_dirty": dirty, "python": platform.python_version(),
                            "machine": platform.machine(), "host": platform.node()},
            "cells": [cell_entry(c, s) for c, s in zip(cells, seeds, strict=True)], "summary": {}}

    def say(self, line: str) -> None:
        """A line on the suite's output."""
        print(line, file=self.out, flush=True)

    def save(self) -> None:
        """Write suite.json with the current summary."""
        self.doc["summary"] = judge.tally(self.doc["cells"])
        store.write_json(self.root / SUITE_JSON, self.doc)

    def run(self) -> int:
        """Run every cell (Ctrl-C stops after the current one's teardown); return the suite's exit code."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.save()
        total = len(self.cells)
        try:
            for i, (cell, entry) in enumerate(zip(self.cells, self.doc["cells"], strict=True), start=1):
                self.say(f"kraftcheck suite {self.name}: [{i}/{total}] {cell.cell_id} (expected "
                         f"{judge.word(cell.expected)})")
                self.run_cell(cell, entry)
                self.say(f"kraftcheck suite {self.name}: [{i}/{total}] {cell.cell_id}: {judge.word(entry['outcome'])}"
                         f" ({'as expected' if entry['matched'] else 'NOT as expected'}, {entry['duration_s']:.0f} s)")
                self.save()
        except KeyboardInterrupt:
            self.say(f"kraftcheck suite {self.name}: interrupted; the cells not run are listed as not run")
        self.doc["finished_utc"] = datetime.now(UTC).isoformat(timespec="seconds")
        self.doc["finished"] = all(c["outcome"] for c in self.doc["cells"])
        self.save()
        self.say("")
        self.say(judge.render_table(judge.summary_rows(self.doc["cells"])))
        s = self.doc["summary"]
        self.say("")
        self.say(f"kraftcheck suite {self.name}: {s['run']}/{s['cells']} cells run, {s['matched']} as expected; "
                 f"exit {s['exit_code']}; summary {self.root / SUITE_JSON}")
        return int(s["exit_code"])

    def run_cell(self, cell: Cell, entry: dict[str, Any]) -> None:
        """One run; fills the outcome fields of ``entry``. A run that raises is a harness error of that cell."""
        started = time.monotonic()
        try:
            scenario, spec, environment = cell_spec(cell, entry["seed"], self.argv)
            if scenario is not None:
                runner: Runner = ScriptedRunner(scenario, spec, self.root, progress=False, out=self.out,
                                                environment=environment)
                entry["replay"] = shlex.join(scenario_argv(scenario.name, spec))
            else:
                runner = Runner(spec, self.root, progress=False, out=self.out, environment=environment)
            result = runner.execute()
            results, code = result.results, result.exit_code
            entry["run_dir"] = str(result.run_dir.relative_to(self.root))
            entry["replay"] = entry["replay"] or replay_command({}, result.spec_path)
            entry["error"] = result.error
        except Exception as exc:  # the cell could not even start: recorded, the suite goes on
            results, code = {"harness_error": f"{type(exc).__name__}: {exc}"}, judge.EXIT_HARNESS_ERROR
            entry["error"] = results["harness_error"]
        entry["duration_s"] = round(time.monotonic() - started, 1)
        entry["exit_code"] = code
        entry["verdict"] = results.get("valid")
        entry["outcome"] = judge.outcome_of(results, code)
        entry["matched"] = entry["outcome"] in cell.accepted
        entry["label"] = (results.get("scenario") or {}).get("label")
