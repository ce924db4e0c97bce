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

from .store_fixture import INVALID_RUN, KILLED_RUN, LRS_KIP966, LRS_V35, VALID_RUN, build_store


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
