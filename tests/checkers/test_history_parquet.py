"""The columnar history (checkers/history/parquet.py): lossless, reproducible to the byte, checked against
its JSONL, and its key table gives the Python checker's anomalies key by key."""

import json
import math

import pytest

pytest.importorskip("pyarrow")

import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from checkers.history.parquet import (  # noqa: E402
    MANIFEST,
    QUEUE,
    NotColumnar,
    ParquetHistoryError,
    check_current,
    parquet_dir_for,
    read_ops,
    verify,
    write_history_parquet,
)
from checkers.queue import queue_anomalies  # noqa: E402
from checkers.queue.keys import KEY_KINDS, analysis_of_key, key_anomalies, merge_keys  # noqa: E402
from checkers.queue.rows import records_of_key  # noqa: E402
from harness.history import HistoryFormatError, read_history  # noqa: E402
from tests.spark_analysis.planted import planted_history  # noqa: E402

ODD_LINES = [
    {"index": 0, "time": 1, "type": "invoke", "process": 0, "f": "send", "value": [1, 7]},
    {"index": 1, "time": 2, "type": "ok", "process": 0, "f": "send", "value": [1, [0, 7]], "node": "n1"},
    "not json {",
    {"time": 3, "type": "invoke", "process": "nemesis", "f": "kill", "value": None},
    {"index": 3, "time": 4, "type": "ok", "process": 1, "f": "poll", "value": {"1": [[0, 7]]}, "final": True,
     "hwm": {"1": 1}, "error": {"code": 5}},
    {"index": 4, "time": True, "type": "ok", "process": 1, "f": "poll"},
    {"index": 5, "time": 6, "type": "invoke", "process": 2, "f": "write", "value": "x\u00e9\n", "node": 3},
]


def _write(path, lines):
    with open(path, "w") as fh:
        for x in lines:
            fh.write((x if isinstance(x, str) else json.dumps(x)) + "\n")
        fh.write("\n")
    return path


def test_ops_come_back_exactly_with_their_lines_and_the_bad_lines_are_listed(tmp_path):
    src = _write(tmp_path / "history.jsonl", ODD_LINES)
    written = write_history_parquet(src)
    assert written.path == parquet_dir_for(src) == tmp_path / "history.parquet"
    ops, lines = read_ops(written.path)
    expected = read_history(src)
    assert ops == expected.ops
    assert lines == [1, 2, 4, 5, 7]
    malformed = written.manifest["malformed"]
    assert malformed["count"] == 2
    assert [(m["line"], m["reason"]) for m in malformed["first"]] == [(m.line, m.reason) for m in expected.malformed]
    nemesis, _ = read_ops(written.path, "nemesis.parquet")
    assert nemesis == [op for op in expected.ops if op["process"] == "nemesis"]


def test_values_only_json_reads_back_the_same_survive(tmp_path):
    # NaN and a 20-digit integer: the reference reader's territory (orjson would change both).
    src = tmp_path / "history.jsonl"
    src.write_text('{"index": 0, "time": 1, "type": "invoke", "process": 0, "f": "w", "value": NaN}\n'
                   '{"index": 1, "time": 2, "type": "ok", "process": 0, "f": "w", "value": 123456789012345678901}\n')
    ops, _ = read_ops(write_history_parquet(src).path)
    assert math.isnan(ops[0]["value"]) and ops[1]["value"] == 123456789012345678901


def test_the_same_history_gives_the_same_bytes(tmp_path):
    src = _write(tmp_path / "history.jsonl", planted_history(600, seed=5))
    a = write_history_parquet(src, tmp_path / "a.parquet").path
    b = write_history_parquet(src, tmp_path / "b.parquet").path
    names = sorted(p.name for p in a.iterdir())
    assert names == ["manifest.json", "nemesis.parquet", "ops.parquet", "queue.parquet"]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert verify(a, src) == []


def test_an_existing_directory_is_replaced_only_when_forced(tmp_path):
    src = _write(tmp_path / "history.jsonl", ODD_LINES)
    write_history_parquet(src)
    with pytest.raises(FileExistsError, match="--force"):
        write_history_parquet(src)
    write_history_parquet(src, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.jsonl", "history.parquet"]


def test_a_directory_that_no_longer_matches_is_refused_with_the_fix(tmp_path):
    src = _write(tmp_path / "history.jsonl", planted_history(200, seed=1))
    out = write_history_parquet(src).path
    assert check_current(out, src)["tables"]["queue"]["rows"] > 0
    with open(src, "a") as fh:
        fh.write(json.dumps({"index": 99999, "time": 10**12, "type": "invoke", "process": 0, "f": "poll"}) + "\n")
    with pytest.raises(ParquetHistoryError, match="changed since.*--format parquet --force"):
        check_current(out, src)
    assert verify(out, src)
    write_history_parquet(src, force=True)
    queue = out / QUEUE
    data = bytearray(queue.read_bytes())
    data[len(data) // 2] ^= 0xFF
    queue.write_bytes(bytes(data))
    with pytest.raises(ParquetHistoryError, match="queue.parquet is not what the manifest says"):
        check_current(out, src)
    (out / MANIFEST).unlink()
    with pytest.raises(ParquetHistoryError, match="no manifest.json"):
        check_current(out, src)


def test_non_integer_values_and_edn_are_refused_and_leave_nothing(tmp_path):
    src = _write(tmp_path / "history.jsonl", [
        {"index": 0, "time": 1, "type": "invoke", "process": 0, "f": "send", "value": [1, "a"]},
        {"index": 1, "time": 2, "type": "ok", "process": 0, "f": "send", "value": [1, [0, "a"]]}])
    with pytest.raises(NotColumnar, match="op 1: send value 'a' is not a 64-bit integer"):
        write_history_parquet(src)
    src.write_text('{"index": 0, "time": 1, "type": "invoke", "process": 0, "f": "poll"}\n'
                   '{"index": 1, "time": 2, "type": "ok", "process": 0, "f": "poll", "value": {"1": [[0, 1.5]]}}\n')
    with pytest.raises(NotColumnar, match="op 1: read value 1.5 is not"):
        write_history_parquet(src)
    src.write_text('{:type :invoke, :f :poll, :process 0}\n')
    with pytest.raises(HistoryFormatError):
        write_history_parquet(src)
    assert [p.name for p in tmp_path.iterdir()] == ["history.jsonl"]


def test_the_key_table_gives_the_python_checkers_anomalies_key_by_key(tmp_path):
    ops = planted_history(1500, seed=2)
    src = _write(tmp_path / "history.jsonl", ops)
    out = write_history_parquet(src).path
    table = pq.read_table(out / QUEUE)
    expected = queue_anomalies(ops, {"cycles": False})
    has_final = any(op.get("final") for op in ops)
    parts = []
    keys = [k for k in dict.fromkeys(table["key"].to_pylist()) if k is not None]
    assert keys == sorted(keys)
    for k in keys:
        rows = table.filter(pc.equal(table["key"], k))
        assert rows["op"].to_pylist() == sorted(rows["op"].to_pylist())
        recs = records_of_key(rows)
        committed = {r.index for r, c in zip(recs, rows["committed"].to_pylist(), strict=True) if c}
        parts.append(key_anomalies(analysis_of_key(recs, {}, has_final, committed)))
    got = merge_keys(parts)
    assert any(got.values())
    assert got == {kind: expected[kind] for kind in KEY_KINDS}
