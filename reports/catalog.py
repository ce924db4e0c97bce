"""A store read as a catalog of runs: where each run sits in the matrix, its outcome, what it showed.

Runs are found by walking the store root for directories holding ``spec.json`` or ``history.jsonl``
(the ``latest`` link, hidden directories and published sites inside the store are skipped). Each run is
read from its small files only (``spec.json``, ``results.json``); histories are read by the report
renderers and by Spark, never here.

A run's place in the matrix: its **row** is the scenario it reproduces (``spec["scenario"]``) or the
workload it ran (``spec["workload"]``, else the test name) in its mode (``workload_mode``: how consumers get
partitions and whether it ran transactions, read from ``sub_via``, ``txn`` and ``isolation_level`` in
``spec.json``: ``queue (subscribe, txn)``; a plain assigning run, or one stored before those keys
existed, is ``queue``), with an injected server bug named beside it;
its **column** is (system under test, fault mix, backend): the system is the reference implementation's
protocol variant, or another system's name and setting (``sut_facts`` in ``spec.json``: tansu sqlite,
say), so third-party systems sit beside the reference implementation; the fault mix is named by
``harness.faults.mix_name`` as in the Spark tables.

A run's **status** is one of valid, invalid, unknown and expected failure. The verdict is the stored one
(``harness.verdict``; a run without ``results.json`` is unknown: killed or still running). Whether
an outcome was expected comes, in order, from the suite that ran it (``suite.json`` at the store root:
its cells name the run directory and the expected outcome), from the scenario's own judgement stored in
``results.json`` (``expectation_met``, absent when a harness error stopped it; a scenario whose
expectation is a known issue expects that failure), or from nothing. A run that showed a known issue (``reports.known_issues``) the way it was
expected to is an **expected failure**; an outcome that contradicts its expectation is flagged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import store
from harness.faults import mix_name
from harness.spec import injected_bug_label
from harness.verdict import INVALID, UNKNOWN, VALID, Verdict
from reports.findings import Finding, findings
from reports.known_issues import ISSUES, issues_shown, scenario_section
from reports.reproduce import reproduction

EXPECTED_FAILURE = "expected failure"
STATUSES = (VALID, INVALID, UNKNOWN, EXPECTED_FAILURE)
SEVERITY = {INVALID: 3, UNKNOWN: 2, EXPECTED_FAILURE: 1, VALID: 0}
"""How much a status needs a reader's attention (a cell shows its most pressing run first)."""

SITE_MARKER = ".kraftcheck-site"
"""File at the root of a published site; the catalog never reads a directory holding one as runs."""
SUITE_FILE = "suite.json"
NO_RESULTS = "no results.json: the run was killed or is still running"

_RUN_KEYS = ("run_dir", "run", "dir", "store_dir", "path")
_RUN_LIST_KEYS = ("run_dirs", "runs")
_EXPECTED_KEYS = ("expected", "expected_outcome", "expect", "expectation")
_EXPECTATION_WORDS = {
    VALID: VALID, "pass": VALID, "passed": VALID, "ok": VALID,
    INVALID: INVALID, "fail": INVALID, "failed": INVALID,
    UNKNOWN: UNKNOWN,
    EXPECTED_FAILURE: EXPECTED_FAILURE, "expected-failure": EXPECTED_FAILURE,
    "expected_failure": EXPECTED_FAILURE, "xfail": EXPECTED_FAILURE, "known-issue": EXPECTED_FAILURE,
    "known issue": EXPECTED_FAILURE,
}


@dataclass(frozen=True)
class Column:
    """A matrix column: system under test (the reference implementation's protocol variant, or another
    system with its setting) x fault mix x backend."""

    variant: str
    fault_mix: str
    backend: str
    system: str = "reference"

    @property
    def system_label(self) -> str:
        """``v3.5`` for the reference implementation, ``tansu sqlite`` for another system."""
        return self.variant if self.system == "reference" else self.system

    @property
    def label(self) -> str:
        """``v3.5 / kill+partition / local``, ``tansu sqlite / kill / local``."""
        return f"{self.system_label} / {self.fault_mix} / {self.backend}"


def system_of(spec: dict[str, Any]) -> str:
    """The system under test of a stored run: ``reference``, or the other system's name and setting."""
    facts = spec.get("sut_facts")
    if isinstance(facts, dict) and facts.get("name") not in (None, "reference"):
        return f"{facts['name']} {facts.get('setting') or ''}".strip()
    sut = spec.get("sut")
    return "reference" if sut in (None, "reference") else f"{sut} {spec.get('sut_setting') or ''}".strip()


@dataclass(frozen=True)
class RunRecord:
    """One stored run as the published site shows it."""

    path: str
    run_dir: Path
    row: str
    column: Column
    verdict: str
    reasons: tuple[str, ...]
    status: str
    expected: str | None
    as_expected: bool | None
    known_issues: tuple[str, ...]
    findings: tuple[Finding, ...]
    reproduce: str
    started: str
    seed: Any
    spec: dict[str, Any] = field(repr=False)
    results: dict[str, Any] = field(repr=False)

    @property
    def explanation(self) -> str:
        """One line saying why the run has its status."""
        if self.known_issues:
            names = ", ".join(ISSUES[k].title for k in self.known_issues)
            word = "expected" if self.as_expected is not False else "NOT expected"
            return f"known issue ({word}): {names}"
        if self.as_expected is False:
            return f"expected {self.expected}, got {self.verdict}: " + "; ".join(self.reasons)
        return "; ".join(self.reasons)


@dataclass(frozen=True)
class Catalog:
    """Every run of a store, in path order, and the suite expectations that applied."""

    root: Path
    runs: tuple[RunRecord, ...]
    suite: dict[str, Any] | None

    def rows(self) -> list[str]:
        """Matrix rows: scenarios first, then workloads, each sorted."""
        names = {r.row for r in self.runs}
        scenarios = sorted(n for n in names if self._is_scenario(n))
        return scenarios + sorted(names - set(scenarios))

    def columns(self) -> list[Column]:
        """Matrix columns, sorted by variant, fault mix, backend."""
        return sorted({r.column for r in self.runs},
                      key=lambda c: (c.system != "reference", c.system, c.variant, c.fault_mix, c.backend))

    def cell(self, row: str, column: Column) -> list[RunRecord]:
        """The runs of one matrix cell, oldest first."""
        return [r for r in self.runs if r.row == row and r.column == column]

    def _is_scenario(self, row: str) -> bool:
        return any(r.row == row and r.spec.get("scenario") for r in self.runs)


def cell_status(runs: Iterable[RunRecord]) -> str:
    """A cell's status: its most pressing run's (invalid, then unknown, then expected failure)."""
    statuses = [r.status for r in runs]
    return max(statuses, key=lambda s: SEVERITY[s]) if statuses else ""


def read_catalog(root: str | os.PathLike, exclude: Iterable[str | os.PathLike] = ()) -> Catalog:
    """Read every run under the store ``root`` (``exclude``: directories to skip, e.g. the output site)."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"store {root} is not a directory")
    suite = _read_json(root / SUITE_FILE) or None
    expectations = suite_expectations(root, suite)
    skip = {Path(p).resolve() for p in exclude}
    runs = tuple(read_run(root, run_dir, expectations.get(str(run_dir))) for run_dir in run_dirs(root, skip))
    return Catalog(root, runs, suite)


def run_dirs(root: Path, skip: set[Path] = frozenset()) -> list[Path]:
    """Every run directory under ``root``, sorted (see the module docstring for what is skipped)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        if here in skip or SITE_MARKER in filenames:
            dirnames[:] = []
            continue
        if store.SPEC in filenames or store.HISTORY in filenames:
            found.append(here.resolve())
            dirnames[:] = []  # below a run are its node directories
            continue
        dirnames[:] = sorted(d for d in dirnames if d != "latest" and not d.startswith("."))
    return sorted(found)


def suite_expectations(root: Path, suite: Any) -> dict[str, str]:
    """Run directory (resolved) -> expected outcome, from a ``suite.json`` (``{"cells": [...]}``, ``{"runs":
    [...]}`` or a list of cells). Each cell names its expected outcome and its run directory, or a list
    of them (``run_dirs``: a cell run several times), absolute or relative to the store root."""
    cells = (suite.get("cells") or suite.get("runs")) if isinstance(suite, dict) else suite
    out: dict[str, str] = {}
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        expected = next((normalize_expectation(cell[k]) for k in _EXPECTED_KEYS if k in cell), None)
        where = [cell[k] for k in _RUN_KEYS if isinstance(cell.get(k), str)][:1]
        where += [d for k in _RUN_LIST_KEYS if isinstance(cell.get(k), list) for d in cell[k] if isinstance(d, str)]
        for run_dir in where if expected else []:
            out[str((root / run_dir).resolve())] = expected
    return out


def normalize_expectation(value: Any) -> str | None:
    """An expected outcome in the catalog's words (valid, invalid, unknown, expected failure), or None."""
    if value is True:
        return VALID
    if value is False:
        return INVALID
    if isinstance(value, str):
        return _EXPECTATION_WORDS.get(value.strip().lower())
    return None


def read_run(root: Path, run_dir: Path, suite_expected: str | None = None) -> RunRecord:
    """One run directory as a ``RunRecord`` (missing or broken files make an unknown run, never an error)."""
    spec = _read_json(run_dir / store.SPEC)
    has_results = (run_dir / store.RESULTS).is_file()
    results = _read_json(run_dir / store.RESULTS)
    verdict = Verdict.of(results) if has_results else None
    word = verdict.word if verdict else UNKNOWN
    reasons = tuple(verdict.reasons) if verdict else (NO_RESULTS,)
    found = tuple(findings(results))
    known = tuple(issues_shown(results, list(found)))
    expected, as_expected = expectation(spec, results, suite_expected, word, known)
    return RunRecord(
        path=run_dir.relative_to(root).as_posix(), run_dir=run_dir, row=row_of(spec, run_dir, root),
        column=Column(str(spec.get("variant") or UNKNOWN), mix_name(spec.get("nemesis")),
                      str(spec.get("backend") or UNKNOWN), system_of(spec)),
        verdict=word, reasons=reasons, status=status_of(word, expected, known), expected=expected,
        as_expected=as_expected, known_issues=known, findings=found,
        reproduce=reproduction(spec, run_dir) if spec else "(no spec.json)", started=str(spec.get("created_utc") or run_dir.name),
        seed=spec.get("seed"), spec=spec, results=results)


def workload_mode(spec: Mapping[str, Any]) -> str:
    """How a workload run consumed and wrote, in words (empty for the plain mode: assigned partitions, no
    transactions): ``subscribe``, ``assign+subscribe`` (Jepsen's mixed ``:sub-via``), ``txn``, with
    ``read_uncommitted`` when transactional reads do not wait for the outcome, joined by ", "."""
    parts = []
    sub_via = str(spec.get("sub_via") or "assign")
    if sub_via != "assign":
        parts.append(sub_via.replace(",", "+"))
    if spec.get("txn"):
        parts.append("txn")
        if spec.get("isolation_level") == "read_uncommitted":
            parts.append("read_uncommitted")
    return ", ".join(parts)


def row_of(spec: dict[str, Any], run_dir: Path, root: Path) -> str:
    """The matrix row: scenario name, else workload (else test name) with its mode, with an injected bug
    named."""
    parts = run_dir.relative_to(root).parts
    name = spec.get("scenario") or spec.get("workload") or spec.get("test_name") or (
        parts[0] if len(parts) >= 2 else "runs")
    mode = "" if spec.get("scenario") else workload_mode(spec)
    name = f"{name} ({mode})" if mode else str(name)
    bug = injected_bug_label(spec.get("inject_bug"))
    return f"{name} (bug: {bug})" if bug else str(name)


def expectation(spec: dict[str, Any], results: dict[str, Any], suite_expected: str | None, verdict: str,
                known: tuple[str, ...]) -> tuple[str | None, bool | None]:
    """(expected outcome, whether the run met it); (None, None) when nothing said what to expect."""
    section = scenario_section(results)
    if suite_expected is None and "expectation_met" in section:  # a harness error leaves it unjudged
        expected = EXPECTED_FAILURE if section.get("label") else VALID
        outcome_fits = verdict != INVALID if expected == EXPECTED_FAILURE else verdict == VALID
        return expected, bool(section.get("expectation_met")) and outcome_fits
    if suite_expected is None:
        return None, None
    if suite_expected == EXPECTED_FAILURE:
        met = bool(known) or verdict == INVALID
    elif suite_expected == VALID:
        met = verdict == VALID and not known
    else:
        met = verdict == suite_expected
    return suite_expected, met


def status_of(verdict: str, expected: str | None, known: tuple[str, ...]) -> str:
    """The cell word: a known issue shown, or an expected invalid verdict, is an expected failure."""
    if known and verdict != INVALID:
        return EXPECTED_FAILURE
    if verdict == INVALID and expected in (INVALID, EXPECTED_FAILURE):
        return EXPECTED_FAILURE
    return verdict


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
