"""The judge pipeline: from a stored run directory to its results and verdict.

``check_store`` runs the checkers over a run's history and trace (``checkers.analysis.check_run``);
``judge`` adds fault coverage (``nemesis.coverage``) and the harness's notes and records the one verdict
(``harness.verdict.decide``); ``write_columnar`` derives the columnar history after the check. The same
pipeline serves a finished run, a scenario, ``kraftcheck analyze`` (also of a partial run whose harness
was killed) and ``kraftcheck check``.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from checkers.analysis import check_run
from harness import store
from harness.checked_spec import CheckedSpec
from harness.faults import nemesis_ops
from harness.history import read_history
from harness.verdict import decide, record
from kraftcheck.extras import install_hint
from nemesis.coverage import coverage_table

NO_HISTORY = f"no {store.HISTORY} in the run directory"


def check_store(run_dir: Path, spec: CheckedSpec | Mapping | None = None, notes: list[str] | None = None) -> dict:
    """Check a stored run (complete or partial): checkers, fault coverage and the verdict -> results dict.

    ``notes`` are harness observations that cap the verdict at ``unknown`` (e.g. the final read never
    completed, the run was interrupted).
    """
    run_dir = Path(run_dir)
    spec = CheckedSpec.of(spec if spec is not None else load_spec_or_empty(run_dir))
    history_path = run_dir / store.HISTORY
    trace_path = run_dir / store.TRACE
    notes = list(notes or [])
    if not history_path.is_file():
        return judge({"checkers": {}}, spec, [], [*notes, NO_HISTORY])
    try:
        results = dict(check_run(spec, history_path, trace_path if trace_path.is_file() else None))
    except Exception as exc:  # a broken checker must not lose the run: unknown with the error
        error = f"{type(exc).__name__}: {exc}"
        results = {"checkers": {}, "error": error, "traceback": traceback.format_exc()}
        notes.append(f"the checkers failed: {error}")
    faults = nemesis_ops(read_history(history_path).ops) if spec.nemesis else []
    return judge(results, spec, faults, notes)


def judge(results: dict[str, Any], spec: CheckedSpec | Mapping | None, faults: Any, notes: list[str]) -> dict[str, Any]:
    """Record the final verdict in ``results`` (checker results from ``check_run`` or the Spark engine):
    the fault coverage of the spec's requested faults over the history's nemesis ops ``faults``, the
    notes the checks made themselves (``harness_notes``) and the harness's ``notes``. Returns ``results``.
    """
    coverage = None
    spec = CheckedSpec.of(spec)
    if spec.nemesis:
        coverage = results["coverage"] = coverage_table(faults, spec.nemesis)
    notes = [*results.get("harness_notes", []), *notes]
    return record(results, decide(results.get("checkers") or {}, coverage=coverage, notes=notes))


def write_columnar(run_dir: Path, log: Any) -> None:
    """Write the run's columnar history (``history.parquet`` beside ``history.jsonl``, for the Spark engine
    and ``kraftcheck aggregate``) after the check. It is derived data: whatever goes wrong (pyarrow not
    installed, a value that is not an integer) is a line in harness.log, never a failure of the run, and
    ``kraftcheck export --format parquet`` can write it later."""
    history = Path(run_dir) / store.HISTORY
    if not history.is_file():
        return
    try:
        # pyarrow comes with the optional 'spark' extra: without it the run keeps its JSONL only.
        from checkers.history.parquet import write_history_parquet
    except ImportError as exc:
        log(f"no columnar history: {install_hint(exc) or exc}")
        return
    started = time.monotonic()
    try:
        written = write_history_parquet(history, force=True)
    except Exception as exc:
        log(f"no columnar history: {type(exc).__name__}: {exc}")
        return
    log(f"columnar history {written.path.name}: {written.manifest['tables']['ops']['rows']} ops in "
        f"{time.monotonic() - started:.1f} s")


def load_spec_or_empty(run_dir: Path) -> dict[str, Any]:
    try:
        return store.read_json(run_dir / store.SPEC)
    except (OSError, ValueError):
        return {}
