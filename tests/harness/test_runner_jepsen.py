"""Real runs (jepsen-marked): a short run with the kill -9 nemesis on the local and on the docker backend.

Each is bounded (about 20 s of workload plus startup, final phase and checking) and asserts what a run
must leave behind: a valid verdict, a fault that provably took effect, the store layout, a final read.
"""

import json

import pytest

from harness.history import pair_ops, read_history
from harness.verdict import Verdict

pytestmark = pytest.mark.jepsen


def assert_complete_valid_run(outcome, backend):
    """The run completed, every acknowledged write was read back (queue checker valid), and the verdict
    and exit code agree, with no harness note (every requested fault proven, final read complete). The
    overall verdict also includes the protocol-invariant checker, which judges the servers (and reports
    ``unknown`` for invariants the trace cannot show); it is printed, and asserted in the servers' and
    checkers' own tests."""
    run = outcome.run_dir
    results = json.loads((run / "results.json").read_text())
    verdicts = {k: v.get("valid") for k, v in results.get("checkers", {}).items()}
    print(f"verdict {results['verdict']} {verdicts} reasons {results.get('reasons')}")
    assert outcome.exit_code == Verdict.of(results).exit_code, \
        (results.get("harness_notes"), results.get("harness_error"), verdicts)
    assert "harness_error" not in results
    assert verdicts["queue"] is True, results["checkers"]["queue"]
    assert not results.get("harness_notes")
    spec = json.loads((run / "spec.json").read_text())
    assert spec["backend"] == backend and spec["nemesis"] == ["kill"] and isinstance(spec["seed"], int)
    if backend == "docker":
        assert spec["image"].startswith("kraftcheck-node:")
    assert results["coverage"]["kill"]["effective"] >= 1
    history = read_history(run / "history.jsonl")
    assert not history.malformed
    pairs, problems = pair_ops(history.ops)
    assert not problems
    sends = [c for i, c in pairs if c is not None and i["f"] == "send" and c["type"] == "ok"]
    assert len(sends) > 50
    finals = [c for i, c in pairs if i.get("final") and c is not None and c["type"] == "ok"]
    assert finals, "the final phase read every partition"
    read_values = {v for records in finals[-1]["value"].values() for _, v in records}
    assert {c["value"][1][1] for c in sends} <= read_values
    assert any(op["process"] == "nemesis" and op["f"] == "kill" and op["type"] == "ok" for op in history.ops)
    trace = (run / "trace.jsonl").read_text().splitlines()
    assert trace and all(json.loads(line)["time"] >= 0 for line in trace[:100])
    for node in ("controller", "b1", "b2", "b3"):
        assert (run / "nodes" / node / "node.log").stat().st_size > 0
    assert (run / "report.html").stat().st_size > 1000
    assert (run.parent.parent / "latest").resolve() == run.resolve()


def test_local_run_with_kill_nemesis(kraftcheck_run):
    outcome = kraftcheck_run(backend="local", nemesis="kill", nemesis_interval_s=4, time_limit_s=20, rate=40)
    assert_complete_valid_run(outcome, "local")


def test_docker_run_with_kill_nemesis(kraftcheck_run):
    from kraftcheck.commands.run import docker_problem

    problem = docker_problem()
    if problem:
        pytest.skip(problem)
    outcome = kraftcheck_run(backend="docker", nemesis="kill", nemesis_interval_s=4, time_limit_s=20, rate=40)
    assert_complete_valid_run(outcome, "docker")
