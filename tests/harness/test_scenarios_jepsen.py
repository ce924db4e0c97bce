"""Every scenario of the catalog on a real local cluster (jepsen-marked, root needed), both variants, and a
suite end to end. Each run takes well under a minute; durations are printed, not asserted.

Each run must meet its scenario's expectation for the variant, be valid, prove every fault family it
requested took effect, and leave nothing behind (iptables rules, FUSE mounts). Last Replica Standing has
its own tests (``test_scenario_jepsen.py``).
"""

import argparse
import json
import os
import subprocess
import time

import pytest

from kraftcheck import scenarios
from kraftcheck.commands import suite as suite_command
from kraftcheck.commands.scenario import build_scenario_spec, environment_problem
from kraftcheck.scenarios.script import ScriptedRunner

pytestmark = pytest.mark.jepsen

CATALOG = [s.name for s in scenarios.all_scenarios() if s.name != "last-replica-standing"]


def run_scenario(tmp_path, name, variant, seed=31):
    scenario = scenarios.get(name)
    problem = environment_problem(scenario, "local")
    if problem:
        pytest.skip(problem)
    spec, environment = build_scenario_spec(scenario, argparse.Namespace(backend="local", variant=variant, seed=seed),
                                            [name])
    started = time.monotonic()
    outcome = ScriptedRunner(scenario, spec, tmp_path / "store", progress=False, environment=environment).execute()
    results = json.loads((outcome.run_dir / "results.json").read_text())
    print(f"{name} {variant}: {time.monotonic() - started:.1f} s, exit {outcome.exit_code}, verdict "
          f"{results.get('valid')}, store {outcome.run_dir}")
    for line in (results.get("scenario") or {}).get("lines", []):
        print(line)
    return outcome, results


def assert_nothing_left(run_dir):
    log = (run_dir / "harness.log").read_text().splitlines()
    run_id = next(line for line in log if "run id" in line).rsplit("run id ", 1)[1].strip()
    if os.geteuid() == 0:
        assert f"kraftcheck-{run_id}" not in subprocess.run(["iptables", "-S"], capture_output=True, text=True).stdout
    with open("/proc/mounts") as fh:
        assert f"kraftcheck-{run_id}" not in fh.read()


# reassign-incremental asserts that every batch is seen in ListPartitionReassignments, which depends on
# polling faster than a batch completes: it missed the batches in 1 of 4 bounded runs on a loaded machine,
# so it runs with the slow set (and in `kraftcheck suite seeds`), not in the bounded CI set.
TIMING_SENSITIVE = {"reassign-incremental"}


@pytest.mark.parametrize("variant", ["v3.5", "kip966"])
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in TIMING_SENSITIVE else n
                                  for n in CATALOG])
def test_scenario_meets_its_expectation(tmp_path, name, variant):
    outcome, results = run_scenario(tmp_path, name, variant)
    assert "harness_error" not in results, results.get("harness_error")
    section = results["scenario"]
    assert section["expectation_met"] is True, [c for c in section["checks"] if not c["ok"]]
    assert outcome.exit_code == 0 and results["valid"] is True
    assert not results.get("harness_notes"), results.get("harness_notes")
    for family in scenarios.get(name).spec_options["nemesis"]:
        assert results["coverage"][family]["effective"] >= 1, family
    report = (outcome.run_dir / "report.html").read_text()
    assert f"Scenario: {name}" in report and "<h3>Checks</h3>" in report
    assert_nothing_left(outcome.run_dir)


def test_suite_runs_its_cells_and_writes_suite_json(tmp_path, capsys):
    if os.geteuid() != 0:
        pytest.skip("the local backend needs root for these scenarios")
    root = tmp_path / "suite"
    code = suite_command.main(["reassign-move-one", "--variants", "kip966", "--test-count", "2", "--seed", "3",
                               "--store", str(root)])
    out = capsys.readouterr().out
    print(out[-2000:])
    doc = json.loads((root / "suite.json").read_text())
    assert code == 0 and doc["finished"] is True and doc["summary"]["matched"] == 2
    assert [c["id"] for c in doc["cells"]] == ["reassign-move-one/kip966/admin+partition/local#1",
                                               "reassign-move-one/kip966/admin+partition/local#2"]
    for cell in doc["cells"]:
        run = root / cell["run_dir"]
        assert cell["outcome"] == "valid" and (run / "spec.json").is_file() and (run / "report.html").is_file()
        assert json.loads((run / "spec.json").read_text())["seed"] == cell["seed"]
    assert doc["cells"][0]["seed"] != doc["cells"][1]["seed"]
    assert "2/2 cells run, 2 as expected; exit 0" in out
