"""JSONL -> Parquet conversion (pyarrow only, no JVM)."""

import json

import pyarrow.parquet as pq
import pytest

from harness.core.history import read_history
from spark_analysis.errors import CorruptInput
from spark_analysis.parquet import jsonl_to_parquet

LINES = [
    {"index": 0, "time": 1, "type": "invoke", "process": 0, "f": "send", "value": [1, 7]},
    {"index": 1, "time": 2, "type": "ok", "process": 0, "f": "send", "value": [1, [0, 7]]},
    "not json {",
    {"time": 3, "type": "invoke", "process": "nemesis", "f": "kill", "value": None},
    {"index": 3, "time": 4, "type": "ok", "process": 1, "f": "poll", "value": {"1": [[0, 7]]}, "final": True,
     "hwm": {"1": 1}},
    {"index": 4, "time": True, "type": "ok", "process": 1, "f": "poll"},
]


def _write(path, lines):
    with open(path, "w") as fh:
        for x in lines:
            fh.write((x if isinstance(x, str) else json.dumps(x)) + "\n")
        fh.write("\n")


def test_conversion_keeps_valid_ops_in_order_and_reports_bad_lines(tmp_path):
    src, dst = tmp_path / "h.jsonl", tmp_path / "h.parquet"
    _write(src, LINES)
    res = jsonl_to_parquet(src, dst, batch_rows=2)  # several row groups
    table = pq.read_table(dst).to_pylist()
    expected = read_history(src)
    assert res.rows == len(expected.ops) == 4
    assert [(r["index"], r["line"]) for r in table] == [(0, 1), (1, 2), (2, 4), (3, 5)]
    assert [json.loads(r["value"]) if r["value"] else None for r in table] == [op["value"] for op in expected.ops]
    assert [r["process"] for r in table] == ["0", "0", "nemesis", "1"]
    assert table[3]["final"] == "true" and json.loads(table[3]["hwm"]) == {"1": 1}
    assert res.malformed_count == 2
    assert [line for line, _ in res.malformed] == [m.line for m in expected.malformed] == [3, 6]


def test_strict_conversion_names_file_and_line_and_leaves_no_output(tmp_path):
    src, dst = tmp_path / "h.jsonl", tmp_path / "h.parquet"
    _write(src, LINES)
    with pytest.raises(CorruptInput, match=r"h\.jsonl:3: invalid JSON"):
        jsonl_to_parquet(src, dst, strict=True)
    assert not dst.exists()
