"""The model conformance CLI (docs/conformance.md): one case per kind, malformed cases, unusable files."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kraftcheck.cli import main as kraftcheck
from reference_impl.conformance import main, run_case, run_cases

CASES = Path(__file__).resolve().parents[1] / "cases" / "one_per_kind.json"
FIELDS = {"replicas", "isr", "leader", "leader_epoch", "partition_epoch", "adding", "removing", "elr",
          "last_known_elr", "leader_recovery_state"}


def _by_id(results):
    return {c["id"]: c["result"] for c in results}


def test_example_file_one_case_per_kind():
    cases = json.loads(CASES.read_text())
    assert {c["kind"] for c in cases} >= {"reassign", "cancel", "alter_partition", "fence", "unfence",
                                          "controlled_shutdown", "elect", "elr"}
    results = run_cases(cases)
    assert [c["id"] for c in results] == [c["id"] for c in cases]  # same list, same order
    r = _by_id(results)
    # Seed 000 prints the merged replicas as [1, 2, 3, 4]; read as a set, it is Kafka's [1, 2, 4, 3].
    assert r["seed000-ex1-grow"] == {"error": None, "changed": True, "after": {
        "replicas": [1, 2, 4, 3], "isr": [1, 2], "leader": 1, "leader_epoch": 1, "partition_epoch": 3,
        "adding": [4], "removing": [3], "elr": [], "last_known_elr": [], "leader_recovery_state": "RECOVERED"}}
    assert r["kip860-rf-change-refused"]["error"] == "INVALID_REPLICATION_FACTOR"
    assert r["kip860-rf-change-refused"]["changed"] is False
    assert r["cancel-nothing-in-progress"]["error"] == "NO_REASSIGNMENT_IN_PROGRESS"
    assert r["seed000-ex1-complete"]["after"]["replicas"] == [1, 2, 4]
    assert r["seed000-ex1-complete"]["after"]["leader_epoch"] == 2
    assert r["scenario10-stale-broker-epoch"]["error"] == "INELIGIBLE_REPLICA"
    assert r["fence-leader-v35"]["after"]["leader"] == 2
    assert r["unfence-sole-isr-member-v35"]["after"]["leader"] == 1
    assert r["scenario28-controlled-shutdown"]["after"]["leader"] == 2
    assert r["preferred-election"]["after"]["leader"] == 1
    assert r["scenario22-unclean-restart-elr"]["after"]["elr"] == [3]
    assert r["scenario22-unclean-restart-elr"]["after"]["last_known_elr"] == [2]
    assert r["elr-clear"]["after"]["elr"] == []
    assert r["malformed-missing-before"]["error"] == "MALFORMED_CASE"
    assert "before" in r["malformed-missing-before"]["message"]
    assert r["malformed-bad-isr"]["error"] == "MALFORMED_CASE"
    assert r["unknown-kind"]["error"] == "UNKNOWN_KIND"
    for res in r.values():
        assert res["after"] is None or set(res["after"]) == FIELDS


def test_new_leader_elected_is_reported_with_the_change():
    case = {"id": "s18", "kind": "alter_partition",
            "config": {"min_isr": 2, "elr_enabled": False, "unclean_election": False,
                       "brokers": {str(b): {"fenced": False, "in_controlled_shutdown": False, "epoch": b}
                                   for b in (1, 2, 3, 4)}},
            "before": {"replicas": [1, 2, 3, 4], "isr": [1, 2, 3], "leader": 1, "leader_epoch": 1,
                       "partition_epoch": 2, "adding": [4], "removing": [1], "elr": [], "last_known_elr": [],
                       "leader_recovery_state": "RECOVERED"},
            "input": {"broker_id": 1, "broker_epoch": 1, "leader_epoch": 1, "partition_epoch": 2,
                      "new_isr": [{"broker_id": b, "broker_epoch": -1} for b in (1, 2, 3, 4)],
                      "leader_recovery_state": "RECOVERED"}}
    out = run_case(case)["result"]
    assert out["error"] == "NEW_LEADER_ELECTED" and out["changed"] is True
    assert out["after"]["replicas"] == [2, 3, 4] and out["after"]["leader"] == 2


def test_completion_rule_extension_and_unregistered_broker():
    base = {"id": "c", "kind": "alter_partition",
            "config": {"min_isr": 2, "brokers": {"1": {"fenced": False, "in_controlled_shutdown": False,
                                                       "epoch": 5},
                                                 "2": {"fenced": False, "in_controlled_shutdown": False,
                                                       "epoch": 6}}},
            "before": {"replicas": [1, 2, 3], "isr": [1], "leader": 1, "leader_epoch": 1, "partition_epoch": 2,
                       "adding": [3], "removing": [1]},
            "input": {"broker_id": 1, "broker_epoch": 5, "leader_epoch": 1, "partition_epoch": 2,
                      "new_isr": [{"broker_id": 1, "broker_epoch": -1}, {"broker_id": 3, "broker_epoch": -1}]}}
    # Broker 3 is absent from config.brokers: unregistered, so ineligible (C14).
    assert run_case(base)["result"]["error"] == "INELIGIBLE_REPLICA"
    base["config"]["brokers"]["3"] = {"fenced": False, "in_controlled_shutdown": False, "epoch": 7}
    assert run_case(base)["result"]["after"]["adding"] == [3]  # MinISR rule: final ISR {3} too small
    base["config"]["completion_rule"] = "non_empty"
    assert run_case(base)["result"]["after"]["replicas"] == [2, 3]


@pytest.mark.parametrize("case, fragment", [
    ("not an object", "JSON object"),
    ({"kind": "fence"}, "'id'"),
    ({"id": "x", "kind": "fence", "config": {"min_isr": "two"}, "before": {}, "input": {}}, "before"),
    ({"id": "x", "kind": "fence", "config": {"min_isr": "two"},
      "before": {"replicas": [1], "isr": [1], "leader": 1, "leader_epoch": 0, "partition_epoch": 0},
      "input": {"broker_ids": [1]}}, "min_isr"),
    ({"id": "x", "kind": "elect", "config": {"min_isr": 1},
      "before": {"replicas": [1], "isr": [1], "leader": 1, "leader_epoch": 0, "partition_epoch": 0},
      "input": {"election_type": "RANDOM"}}, "election_type"),
    ({"id": "x", "kind": "elr", "config": {"min_isr": 1, "brokers": {"abc": {}}},
      "before": {"replicas": [1], "isr": [1], "leader": 1, "leader_epoch": 0, "partition_epoch": 0},
      "input": {"event": "clear_elr"}}, "abc"),
    ({"id": "x", "kind": "cancel", "config": {"min_isr": 1},
      "before": {"replicas": [1], "isr": [1], "leader": 1, "leader_epoch": 0, "partition_epoch": 0},
      "input": {"target_replicas": [1]}}, "null"),
])
def test_malformed_cases_get_per_case_errors(case, fragment):
    out = run_case(case)["result"]
    assert out["error"] == "MALFORMED_CASE" and fragment in out["message"] and out["after"] is None


def test_cli_prints_json_and_dispatcher_works(tmp_path, capsys):
    assert main([str(CASES)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert len(printed) == len(json.loads(CASES.read_text())) and all("result" in c for c in printed)
    assert kraftcheck(["conformance", str(CASES)]) == 0
    assert json.loads(capsys.readouterr().out) == printed


def test_cli_rejects_unusable_files(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main([str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    obj = tmp_path / "obj.json"
    obj.write_text('{"id": 1}')
    assert main([str(obj)]) == 2
    assert "list of cases" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_python_dash_m_entry_point():
    proc = subprocess.run([sys.executable, "-m", "reference_impl.conformance", str(CASES)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)) == len(json.loads(CASES.read_text()))


SCENARIOS = CASES.parent / "protocol_scenarios.json"


@pytest.mark.parametrize("case", json.loads(SCENARIOS.read_text()), ids=lambda c: c["id"])
def test_scenario_cases_give_their_expected_results(case):
    """Regression fixtures: docs/protocol-rules.md / seed scenarios as conformance cases with the expected
    result (each checked by hand against the seed or scenario it names; see the unit tests for whole
    flows)."""
    expected = case.pop("expected")
    assert run_case(case)["result"] == expected
