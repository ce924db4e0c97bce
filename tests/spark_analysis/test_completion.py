"""Spark completes ops by the same rule as the Python readers (``harness.history.complete_op``): its JSONL
extraction (``extract.records``) and its client pairs (``aggregate.client_pairs``) give, op by op, the
fields ``completed_ops`` gives on the same file."""

import json

from harness.history import completed_ops
from spark_analysis.aggregate import client_pairs
from spark_analysis.extract import records
from spark_analysis.read import read_jsonl, with_order
from tests.checkers.test_readers_agree import completion_history


def _raw(value):
    return None if value is None else json.loads(value)


def test_spark_records_complete_ops_as_complete_op_does(spark, tmp_path):
    ops = completion_history()
    path = tmp_path / "run" / "history.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(op) + "\n" for op in ops), encoding="utf-8")
    df = with_order(spark, read_jsonl(spark, str(path), run="r"))
    expected = {o["index"]: o for o in completed_ops(ops) if o["process"] != "nemesis"}

    got = {r["op"]: r for r in records(df).collect()}
    assert set(got) == set(expected)
    for index, r in got.items():
        o = expected[index]
        assert (r["invoke_index"], r["process"], r["f"], r["type"], r["invoke_time"], r["complete_time"]) == (
            o["invoke_index"], o["process"], o["f"], o["type"], o["invoke_time"], o["complete_time"]), index
        assert (_raw(r["ival"]), _raw(r["cval"])) == (o["invoke_value"], o.get("value")), index
        assert (r["final"], r["seek"]) == (o.get("final") is True, o.get("seek_to_beginning") is True), index
        assert _raw(r["rebalance"]) == o.get("rebalance_log"), index
        # hwm: the completion's, or for a final read its "ends" (the queue contract's reading of them)
        marks = o.get("hwm")
        if not isinstance(marks, dict):
            marks = o.get("ends") if o.get("final") is True and isinstance(o.get("ends"), dict) else None
        assert _raw(r["hwm"]) == marks, index

    pairs = {(r["invoke_time"], r["f"]): (r["type"], r["complete_time"]) for r in client_pairs(df).collect()}
    assert pairs == {(o["invoke_time"], o["f"]): (o["type"], o["complete_time"]) for o in expected.values()}
