"""Unit tests of the runner's pure parts: verdict capping, exit codes, teardown ordering."""

import json

from harness.history import HistoryWriter
from kraftcheck.judge import check_store, write_columnar
from kraftcheck.runner import docker_engine_missing
from kraftcheck.teardown import TeardownStack


def test_teardown_runs_once_in_reverse_and_survives_failures():
    done = []
    td = TeardownStack()
    td.add("a", lambda: done.append("a"))
    td.add("b", lambda: (_ for _ in ()).throw(RuntimeError("x")))
    td.add("c", lambda: done.append("c"))
    logs = []
    td.run(logs.append)
    td.run(logs.append)
    assert done == ["c", "a"] and len(logs) == 1 and "b failed" in logs[0]


def test_docker_engine_missing_detection():
    assert docker_engine_missing(Exception("Error while fetching server API version: Connection refused"))
    assert not docker_engine_missing(ValueError("bad image tag"))


def _store(tmp_path, ops, spec):
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    with HistoryWriter(tmp_path / "history.jsonl") as writer:
        for op in ops:
            writer.append(op)
    return tmp_path


GOOD = [
    {"time": 1, "type": "invoke", "process": 0, "f": "send", "value": [0, 1]},
    {"time": 2, "type": "ok", "process": 0, "f": "send", "value": [0, [0, 1]]},
    {"time": 3, "type": "invoke", "process": 5, "f": "poll", "value": None, "final": True},
    {"time": 4, "type": "ok", "process": 5, "f": "poll", "value": {"0": [[0, 1]]}, "final": True},
]


def test_check_store_valid_run(tmp_path):
    results = check_store(_store(tmp_path, GOOD, {"test_name": "t"}))
    assert results["valid"] is True, results


def test_unproven_nemesis_caps_valid_at_unknown(tmp_path):
    results = check_store(_store(tmp_path, GOOD, {"nemesis": ["kill"]}))
    assert results["valid"] == "unknown"
    assert any("kill" in n for n in results["harness_notes"])
    assert results["coverage"]["kill"]["attempted"] == 0


def test_notes_cap_but_never_hide_invalid(tmp_path):
    lost = GOOD[:2] + [GOOD[2], dict(GOOD[3], value={"0": []})]
    results = check_store(_store(tmp_path, lost, {}), notes=["interrupted"])
    assert results["valid"] is False
    results = check_store(_store(tmp_path / "x" if (tmp_path / "x").mkdir() is None else None, GOOD, {}),
                          notes=["interrupted"])
    assert results["valid"] == "unknown" and results["harness_notes"] == ["interrupted"]


def test_the_columnar_history_is_written_after_the_check_and_never_fails_the_run(tmp_path, monkeypatch):
    import sys

    import pytest

    pytest.importorskip("pyarrow")
    run = _store(tmp_path / "a" if (tmp_path / "a").mkdir() is None else None, GOOD, {})
    logs = []
    write_columnar(run, logs.append)
    assert (run / "history.parquet" / "manifest.json").is_file() and "4 ops" in logs[0]

    bad = _store(tmp_path / "b" if (tmp_path / "b").mkdir() is None else None,
                 [{"time": 1, "type": "invoke", "process": 0, "f": "send", "value": [0, "x"]}], {})
    write_columnar(bad, logs.append)
    assert "no columnar history: NotColumnar" in logs[-1] and not (bad / "history.parquet").exists()

    monkeypatch.setitem(sys.modules, "checkers.history.parquet", None)  # as without the 'spark' extra
    other = _store(tmp_path / "c" if (tmp_path / "c").mkdir() is None else None, GOOD, {})
    write_columnar(other, logs.append)
    assert logs[-1].startswith("no columnar history") and not (other / "history.parquet").exists()
