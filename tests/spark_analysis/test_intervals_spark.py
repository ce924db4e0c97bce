"""Spark's per-fault statistics see the fault intervals the report shades, on the same history."""

import json

import pytest

from harness.faults import end_of, fault_timeline, nemesis_ops
from reports.run_report import nemesis_intervals as report_bands
from spark_analysis.aggregate import client_pairs, nemesis_intervals, with_state
from spark_analysis.intervals import merge, state_at
from spark_analysis.read import read_jsonl, with_order
from tests.harness.test_faults import history

pytestmark = pytest.mark.slow  # a Spark session and two small jobs


def test_spark_intervals_and_op_states_match_the_report_bands(spark, tmp_path):
    ops = history()
    path = tmp_path / "run" / "history.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(op) + "\n" for op in ops), encoding="utf-8")
    df = with_order(spark, read_jsonl(spark, str(path), run="r"))

    rows = nemesis_intervals(df).collect()
    faults = sorted((r["start"], r["end"]) for r in rows if r["kind"] == "fault")
    heals = sorted(r["start"] for r in rows if r["kind"] == "heal")
    bands = merge(report_bands(ops))
    assert faults == [(iv.start, iv.end) for iv in bands]
    assert heals == fault_timeline(nemesis_ops(ops), end_of(ops)).recoveries

    states = {r["invoke_time"]: r["state"] for r in with_state(client_pairs(df), nemesis_intervals(df)).collect()}
    expected = {op["time"]: state_at(bands, op["time"]) for op in ops
                if op["process"] != "nemesis" and op["type"] == "invoke"}
    assert states == expected
    assert set(states.values()) == {"fault", "healthy"}
