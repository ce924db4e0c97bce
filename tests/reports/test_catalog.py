"""The catalog of a store: matrix place, status and expectation of each run (real checkers, no cluster)."""

import json

import pytest

from reports.catalog import (
    EXPECTED_FAILURE,
    SITE_MARKER,
    Column,
    cell_status,
    normalize_expectation,
    read_catalog,
    run_dirs,
    status_of,
)
from reports.findings import Finding, findings
from reports.known_issues import LRS, evidence, issues_shown
from tests.support.synth import synth_history

from .store_fixture import (
    INVALID_RUN,
    KILLED_RUN,
    LRS_KIP966,
    LRS_V35,
    VALID_RUN,
    build_store,
    scaled,
    spec_for,
    write_run,
)


@pytest.fixture(scope="module")
def store_root(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("store"))


def by_path(catalog):
    return {r.path: r for r in catalog.runs}


def test_every_run_is_found_once_and_latest_is_skipped(store_root):
    catalog = read_catalog(store_root)
    assert [r.path for r in catalog.runs] == sorted([VALID_RUN, INVALID_RUN, LRS_V35, LRS_KIP966, KILLED_RUN])


def test_statuses_rows_and_columns(store_root):
    catalog = read_catalog(store_root)
    runs = by_path(catalog)
    assert runs[VALID_RUN].status == "valid" and runs[VALID_RUN].expected is None
    assert runs[INVALID_RUN].status == "invalid"
    assert runs[INVALID_RUN].reasons == ("queue: invalid (int-poll-skip)",)
    assert runs[KILLED_RUN].status == "unknown" and "no results.json" in runs[KILLED_RUN].reasons[0]
    lrs = runs[LRS_V35]
    assert (lrs.verdict, lrs.status, lrs.expected, lrs.as_expected) == ("valid", EXPECTED_FAILURE, EXPECTED_FAILURE,
                                                                        True)
    assert lrs.known_issues == (LRS,)
    assert runs[LRS_KIP966].status == "valid" and runs[LRS_KIP966].as_expected is True
    assert catalog.rows() == ["last-replica-standing", "queue"]  # scenarios first
    assert catalog.columns() == [Column("kip966", "disk+partition", "local"), Column("kip966", "kill", "local"),
                                 Column("v3.5", "disk+partition", "local"), Column("v3.5", "partition", "local")]
    kill = Column("kip966", "kill", "local")
    assert [r.path for r in catalog.cell("queue", kill)] == [VALID_RUN, KILLED_RUN]
    assert cell_status(catalog.cell("queue", kill)) == "unknown"  # the most pressing run of the cell
    assert lrs.reproduce == "kraftcheck scenario last-replica-standing --backend local --variant v3.5 --seed 11"
    assert runs[VALID_RUN].reproduce == f"kraftcheck run --replay {store_root / VALID_RUN / 'spec.json'}"


def test_suite_expectations_override_and_flag_mismatches(store_root, tmp_path):
    suite = {"name": "smoke", "cells": [
        {"run_dir": VALID_RUN, "expected": "valid"},
        {"run_dir": str(store_root / INVALID_RUN), "expected_outcome": "expected-failure"},
        {"run_dirs": [LRS_KIP966, KILLED_RUN], "expected": "invalid"},
    ]}
    (store_root / "suite.json").write_text(json.dumps(suite))
    try:
        runs = by_path(read_catalog(store_root))
    finally:
        (store_root / "suite.json").unlink()
    assert runs[VALID_RUN].as_expected is True
    assert runs[INVALID_RUN].status == EXPECTED_FAILURE and runs[INVALID_RUN].as_expected is True
    assert runs[LRS_KIP966].status == "valid" and runs[LRS_KIP966].as_expected is False
    assert "expected invalid, got valid" in runs[LRS_KIP966].explanation
    assert runs[KILLED_RUN].expected == "invalid" and runs[KILLED_RUN].as_expected is False


def test_a_published_site_inside_the_store_is_not_read_as_runs(store_root):
    site = store_root / "site"
    (site / "runs" / "queue" / "x").mkdir(parents=True)
    (site / "runs" / "queue" / "x" / "spec.json").write_text("{}")
    (site / SITE_MARKER).write_text("")
    try:
        assert all("site" not in p.parts for p in run_dirs(store_root))
    finally:
        import shutil

        shutil.rmtree(site)


def test_expectation_words():
    assert normalize_expectation("xfail") == EXPECTED_FAILURE
    assert normalize_expectation("Expected Failure") == EXPECTED_FAILURE
    assert normalize_expectation(True) == "valid" and normalize_expectation("nonsense") is None
    assert status_of("invalid", "invalid", ()) == EXPECTED_FAILURE
    assert status_of("invalid", None, (LRS,)) == "invalid"  # a forbidden anomaly stays a violation
    assert status_of("valid", None, (LRS,)) == EXPECTED_FAILURE


def test_a_random_v35_run_with_known_issue_findings_shows_lrs():
    results = {"checkers": {"queue": {"valid": True, "anomalies": {
        "lost-write": {"count": 2, "status": "known-issue", "reason": "v3.5 ... Last Replica Standing",
                       "examples": [{"key": 0, "value": 5, "offset": 3, "writer": 9},
                                    {"key": 1, "value": 6, "offset": None, "writer": 11}]},
        "G0": {"count": 1, "status": "allowed", "examples": []}}}}}
    found = findings(results)
    assert [(f.kind, f.known) for f in found] == [("G0", False), ("lost-write", True)]
    assert issues_shown(results, found) == [LRS]
    ev = evidence(results, found)
    assert ev["lost"] == [{"key": 0, "offset": 3, "value": 5}, {"key": 1, "offset": None, "value": 6}]
    assert issues_shown({"checkers": {}}, [Finding("queue", "G0", 1, "allowed", ())]) == []


def test_a_scenario_stopped_by_a_harness_error_has_no_expectation(tmp_path):
    from reports.catalog import read_run

    run = tmp_path / "last-replica-standing" / "20261125T160838.109Z"
    run.mkdir(parents=True)
    (run / "spec.json").write_text(json.dumps({"scenario": "last-replica-standing", "variant": "v3.5",
                                               "backend": "docker", "nemesis": ["disk", "partition"]}))
    (run / "results.json").write_text(json.dumps({
        "valid": "unknown", "verdict": "unknown", "reasons": ["harness error: lazyfs did not mount"],
        "harness_error": "lazyfs did not mount", "scenario": {"name": "last-replica-standing", "steps": []}}))
    record = read_run(tmp_path, run)
    assert (record.status, record.expected, record.as_expected) == ("unknown", None, None)
    assert record.explanation == "harness error: lazyfs did not mount"


def test_a_third_party_system_gets_columns_of_its_own(tmp_path):
    from reports.catalog import system_of

    assert system_of({"variant": "v3.5"}) == "reference"
    assert system_of({"sut": "reference", "variant": "kip966"}) == "reference"
    facts = {"name": "tansu", "setting": "sqlite", "traces": False}
    assert system_of({"sut": "tansu", "sut_setting": "sqlite", "sut_facts": facts}) == "tansu sqlite"
    assert system_of({"sut": "tansu"}) == "tansu"  # a spec written before the run resolved it
    ref, other = Column("kip966", "kill", "local"), Column("kip966", "kill", "local", "tansu sqlite")
    assert (ref.label, other.label) == ("kip966 / kill / local", "tansu sqlite / kill / local")
    run = tmp_path / "queue" / "r1"
    run.mkdir(parents=True)
    (run / "spec.json").write_text(json.dumps({"sut": "tansu", "sut_setting": "sqlite", "sut_facts": facts,
                                               "variant": "kip966", "nemesis": ["kill"], "backend": "local"}))
    (run / "results.json").write_text(json.dumps({"valid": True, "verdict": "valid", "checkers": {}}))
    catalog = read_catalog(tmp_path)
    assert catalog.columns() == [other]


def test_a_run_that_did_not_recover_is_a_finding():
    from reports.findings import NO_RECOVERY

    results = {"checkers": {"recovery": {"valid": False, "ops": [7, 9], "errors": ["Unable to bootstrap"],
                                         "reason": "the system did not recover"}}}
    (finding,) = findings(results)
    assert (finding.checker, finding.kind, finding.status) == ("recovery", NO_RECOVERY, "forbidden")
    assert finding.examples[0]["ops"] == [7, 9]
    assert findings({"checkers": {"recovery": {"valid": True}}}) == []


@pytest.mark.parametrize("extra, row", [
    ({}, "queue"),
    ({"sub_via": "assign", "txn": False}, "queue"),
    ({"sub_via": "subscribe"}, "queue (subscribe)"),
    ({"sub_via": "assign,subscribe"}, "queue (assign+subscribe)"),
    ({"txn": True, "isolation_level": "read_committed"}, "queue (txn)"),
    ({"txn": True, "isolation_level": "read_uncommitted"}, "queue (txn, read_uncommitted)"),
    ({"sub_via": "subscribe", "txn": True}, "queue (subscribe, txn)"),
    ({"sub_via": "subscribe", "txn": True, "inject_bug": "aborted-read-committed"},
     "queue (subscribe, txn) (bug: aborted-read-committed)"),
    ({"sub_via": "subscribe", "scenario": "lrs"}, "lrs"),  # a scenario's row is its own
])
def test_a_workload_row_names_its_mode(tmp_path, extra, row):
    from reports.catalog import row_of

    run_dir = tmp_path / "queue" / "20261126T100000.000Z"
    assert row_of(spec_for("kip966", ["kill"], **extra), run_dir, tmp_path) == row


def test_the_matrix_has_a_row_per_workload_mode(tmp_path):
    ops = scaled(synth_history(30, keys=1, concurrency=2, seed=5))
    write_run(tmp_path, "queue/a", spec_for("kip966", ["kill"]), ops)
    write_run(tmp_path, "queue/b", spec_for("kip966", ["kill"], sub_via="subscribe"), ops)
    write_run(tmp_path, "queue/c", spec_for("kip966", ["kill"], txn=True), ops)
    write_run(tmp_path, "queue/d", spec_for("kip966", ["kill"], sub_via="subscribe", txn=True), ops)
    catalog = read_catalog(tmp_path)
    assert catalog.rows() == ["queue", "queue (subscribe)", "queue (subscribe, txn)", "queue (txn)"]
    kill = Column("kip966", "kill", "local")
    assert [r.path for r in catalog.cell("queue (txn)", kill)] == ["queue/c"]


def test_group_anomalies_are_findings_with_the_checkers_status():
    groups = {"valid": False, "anomalies": {"poll-below-commit": [{"op": 12, "offset": 3, "committed": 5}],
                                            "double-assignment": []},
              "anomaly_counts": {"poll-below-commit": 4, "double-assignment": 0, "commit-regression": 0},
              "statuses": {"poll-below-commit": "forbidden", "double-assignment": "forbidden",
                           "commit-regression": "forbidden"}, "reason": ""}
    (finding,) = findings({"checkers": {"groups": groups}})
    assert (finding.checker, finding.kind, finding.count, finding.status) == ("groups", "poll-below-commit", 4,
                                                                             "forbidden")
    assert finding.examples == ({"op": 12, "offset": 3, "committed": 5},)
    allowed = {**groups, "valid": True, "statuses": dict.fromkeys(groups["statuses"], "allowed"),
               "reason": "unclean leader election performed"}
    (finding,) = findings({"checkers": {"groups": allowed}})
    assert finding.status == "allowed" and finding.reason == "unclean leader election performed"
    assert findings({"checkers": {"groups": {"valid": True, "anomalies": {}}}}) == []
