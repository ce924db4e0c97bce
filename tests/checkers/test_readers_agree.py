"""Every history reader gives the same completed ops (``harness.history.complete_op``), and the records the
queue checker and the columnar key table derive from them carry the same completion.

The history is built so the rule matters: ``ok``, ``fail`` and ``info`` completions whose value differs from
their invocation's, an invocation never completed, final and seek marks on one side only, outcome fields
(``hwm``, ``ends``) on completions, and nemesis ops in between.
"""

import json

import pytest

from checkers.history.edn import read_edn_history
from checkers.history.export import to_edn
from checkers.history.jsonl import read_ops
from checkers.queue.extract import extract
from harness.history import completed_ops, read_history


def completion_history() -> list[dict]:
    ops = []

    def op(type_, process, f, value, **extra):
        ops.append({"index": len(ops), "time": 10 * (len(ops) + 1), "type": type_, "process": process, "f": f,
                    "value": value, "node": "b1" if process != "nemesis" else None, "error": None, **extra})

    op("invoke", 0, "send", [1, 10])
    op("invoke", 1, "send", [1, 11])
    op("invoke", 2, "send", [2, 12])
    op("ok", 0, "send", [1, [0, 10]])
    op("invoke", "nemesis", "kill", {"nodes": ["b2"]})
    op("info", 1, "send", None, error="timeout: no completion within 5 s")
    op("fail", 2, "send", [2, 99], error="RecordTooLargeError")
    op("ok", "nemesis", "kill", {"nodes": ["b2"], "effective": True})
    op("invoke", 3, "assign", [1, 2], seek_to_beginning=True)
    op("ok", 3, "assign", [1, 2])
    op("invoke", 4, "txn", [["send", 2, 13], ["poll"]])
    op("ok", 4, "txn", [["send", 2, [0, 13]], ["poll", {"1": [[0, 10]]}]])
    op("invoke", 5, "poll", None)
    op("info", 5, "poll", None, error="CommitFailed")
    op("invoke", 6, "poll", None, final=True)
    op("ok", 6, "poll", {"1": [[0, 10]], "2": [[0, 13]]}, final=True, hwm={"1": 1, "2": 1}, ends={"1": 1, "2": 1})
    op("invoke", 7, "send", [2, 14])
    return ops


def _write(tmp_path, ops) -> str:
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in ops))
    return str(path)


def test_the_history_exercises_the_rule():
    done = completed_ops(completion_history())
    assert {(o["type"], o["value"] != o["invoke_value"]) for o in done if o["process"] != "nemesis"} >= {
        ("ok", True), ("fail", True), ("info", True)}
    assert any(o["complete_time"] is None for o in done)


def test_the_jsonl_readers_and_the_edn_round_trip_give_the_same_completed_ops(tmp_path):
    ops = completion_history()
    path = _write(tmp_path, ops)
    expected = completed_ops(ops)
    assert completed_ops(read_history(path).ops) == expected
    assert completed_ops(read_ops(path)) == expected
    edn = tmp_path / "history.edn"
    edn.write_text(to_edn(ops))
    assert completed_ops(read_edn_history(edn)) == expected


def test_the_columnar_reader_gives_the_same_completed_ops(tmp_path):
    pytest.importorskip("pyarrow")
    from checkers.history.parquet import read_ops as read_columnar
    from checkers.history.parquet import write_history_parquet

    ops = completion_history()
    path = _write(tmp_path, ops)
    columnar, _ = read_columnar(write_history_parquet(path).path)
    assert completed_ops(columnar) == completed_ops(read_ops(path))


HEAD = ("index", "invoke_index", "process", "f", "type", "invoke_time", "complete_time")


def _queue_heads(ops) -> dict[int, tuple]:
    """The completion of every queue op, as the rule gives it: op index -> its head fields, final, seek."""
    return {o["index"]: (*(o[name] for name in HEAD), o.get("final") is True, o.get("seek_to_beginning") is True)
            for o in completed_ops(ops) if o["f"] in ("send", "poll", "txn", "assign")}


def test_the_queue_records_carry_the_rules_completion():
    ops = completion_history()
    recs = {r.index: (r.index, r.invoke_index, r.process, r.f, r.type, r.invoke_time, r.complete_time, r.final,
                      r.seek) for r in extract(ops)}
    assert recs == _queue_heads(ops)


def test_the_columnar_key_table_carries_the_rules_completion(tmp_path):
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from checkers.history.parquet import QUEUE, write_history_parquet

    ops = completion_history()
    table = pq.read_table(write_history_parquet(_write(tmp_path, ops)).path / QUEUE).to_pylist()
    rows = {r["op"]: (r["op"], r["invoke_index"], r["process"], r["f"], r["type"], r["invoke_time"],
                      r["complete_time"], r["final"], r["seek"]) for r in table}
    assert rows == _queue_heads(ops)
