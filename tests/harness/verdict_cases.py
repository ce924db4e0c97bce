"""Stored runs whose verdicts are pinned by ``golden_verdicts.json`` (see ``test_verdict_golden.py``).

Each case is a run directory (``spec.json`` and usually ``history.jsonl``) built from deterministic
histories: valid ones from ``tests.support.synth``, broken ones from its mutations and from the hand-built
anomaly fixtures, and runs whose verdict depends on the harness side (requested faults never proven, a
missing final read, harness notes, an empty or missing history). ``observe`` checks one case the ways a
user can (the runner's ``check_store``, ``kraftcheck check``, ``kraftcheck analyze``) and returns what the
golden file pins: the stored verdict, the harness notes, each checker's verdict and the exit codes (and,
beyond the golden file, the verdict words the three wrote).

``python -m tests.harness.verdict_cases`` prints the observations of every case as JSON (how the
golden file was made, from the code before the verdict was computed in one place).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from kraftcheck.commands import analyze, check
from kraftcheck.judge import check_store
from tests.checkers.fixtures import GOLDEN
from tests.support.synth import MUTATIONS, mutate, synth_history

# Small histories keep the linearizability engine (which every path runs) quick.
SYNTH_OPS = 120


def _nemesis_pair(f: str, start_ns: int, effective: bool = True, type_: str = "ok") -> list[dict]:
    return [{"time": start_ns, "type": "invoke", "process": "nemesis", "f": f, "value": {"target": "one"}},
            {"time": start_ns + 1000, "type": type_, "process": "nemesis", "f": f,
             "value": {"target": "one", "effective": effective}}]


def _with_faults(ops: list[dict], faults: list[dict]) -> list[dict]:
    """``ops`` with nemesis ops placed by time, reindexed."""
    merged = sorted([dict(op) for op in ops] + faults, key=lambda op: op["time"])
    return [dict(op, index=i) for i, op in enumerate(merged)]


def cases() -> dict[str, dict[str, Any]]:
    """Case name -> ``{"ops": [...] | None, "spec": {...}, "notes": [...], "raw": str | None}``."""
    valid = synth_history(SYNTH_OPS, seed=11)
    out: dict[str, dict[str, Any]] = {
        "synth-valid": {"ops": valid, "spec": {}},
        "synth-valid-without-final-read": {"ops": synth_history(SYNTH_OPS, seed=12, final=False), "spec": {}},
        "synth-valid-interrupted": {"ops": valid, "spec": {}, "notes": ["run interrupted: interrupted (Ctrl-C)"]},
        "synth-valid-acks-1": {"ops": valid, "spec": {"acks": 1, "linearizability": False}},
        "kill-requested-never-attempted": {"ops": valid, "spec": {"nemesis": ["kill"]}},
        "kill-proven": {"ops": _with_faults(valid, _nemesis_pair("kill", 5_000) + _nemesis_pair("start", 40_000)),
                        "spec": {"nemesis": ["kill"]}},
        "kill-never-effective": {
            "ops": _with_faults(valid, _nemesis_pair("kill", 5_000, effective=False)
                                + _nemesis_pair("start", 40_000)),
            "spec": {"nemesis": "kill,partition"}},
        "empty-history": {"ops": [], "spec": {}},
        "only-malformed-lines": {"ops": None, "raw": "not json\n{\"time\": 1}\n", "spec": {}},
        "missing-history": {"ops": None, "spec": {}},
    }
    rng = random.Random(5)
    base = synth_history(SYNTH_OPS, seed=13)
    for kind in MUTATIONS:
        mutated = mutate(base, kind, rng)
        assert mutated is not None, kind
        out[f"synth-{kind}"] = {"ops": mutated[0], "spec": {}}
        out[f"synth-{kind}-kill-unproven"] = {"ops": mutated[0], "spec": {"nemesis": ["kill"]},
                                              "notes": ["final read did not complete within 60 s"]}
    for name, (ops, _kinds) in GOLDEN.items():
        out[f"fixture-{name}"] = {"ops": ops, "spec": {}}
    return out


def write_case(run_dir: Path, case: dict[str, Any]) -> Path:
    """Write the case's ``spec.json`` and history into ``run_dir``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "spec.json").write_text(json.dumps(case["spec"]), encoding="utf-8")
    if case.get("raw") is not None:
        (run_dir / "history.jsonl").write_text(case["raw"], encoding="utf-8")
    elif case["ops"] is not None:
        with open(run_dir / "history.jsonl", "w", encoding="utf-8") as fh:
            for op in case["ops"]:
                fh.write(json.dumps(op) + "\n")
    return run_dir


def _quietly(main: Any, argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def observe(run_dir: Path, case: dict[str, Any]) -> dict[str, Any]:
    """What the golden file pins for one written case."""
    results = check_store(run_dir, case["spec"], list(case.get("notes") or []))
    seen: dict[str, Any] = {
        "verdict": results.get("verdict"),
        "valid": results.get("valid"),
        "harness_notes": results.get("harness_notes", []),
        "checkers": {name: r.get("valid") for name, r in sorted(results.get("checkers", {}).items())},
    }
    history = run_dir / "history.jsonl"
    check_argv = ["--history", str(history), "--spec", str(run_dir / "spec.json"), "--json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        seen["check_exit"] = check.main(check_argv)
    seen["check_verdict"] = json.loads(out.getvalue()).get("verdict") if out.getvalue() else None
    seen["analyze_exit"] = _quietly(analyze.main, [str(run_dir), "--no-report"])
    stored = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    seen["analyze_valid"] = stored.get("valid")
    seen["analyze_verdict"] = stored.get("verdict")
    seen["analyze_notes"] = stored.get("harness_notes", [])
    return seen


def observe_all() -> dict[str, dict[str, Any]]:
    """Every case observed in a fresh temporary directory."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, case in cases().items():
            out[name] = observe(write_case(Path(tmp) / name, case), case)
    return out


if __name__ == "__main__":
    json.dump(observe_all(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
