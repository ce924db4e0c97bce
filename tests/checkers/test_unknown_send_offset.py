"""An acknowledged send whose offset the producer was not told (Kafka's -1) is a write of unknown offset.

Seen on a real run against tansu: kafka-python acknowledged a retried batch the broker called a duplicate
(DUPLICATE_SEQUENCE_NUMBER) with offset -1; the record sat once in the log at its real offset. Read as
offset -1, the checkers reported a duplicate, inconsistent offsets, an unreadable acknowledged write and a
non-linearizable log: all false.
"""

import json

import pytest

from checkers.analysis import check_run


def _history(tmp_path, send_offset):
    ops = [
        {"type": "invoke", "process": 0, "f": "send", "value": [0, 1]},
        {"type": "ok", "process": 0, "f": "send", "value": [0, [0, 1]]},
        {"type": "invoke", "process": 1, "f": "send", "value": [0, 2]},
        {"type": "ok", "process": 1, "f": "send", "value": [0, [send_offset, 2]]},
        {"type": "invoke", "process": 2, "f": "poll", "value": None, "final": True},
        {"type": "ok", "process": 2, "f": "poll", "value": {"0": [[0, 1], [1, 2]]}, "final": True,
         "ends": {"0": 2}},
    ]
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps({**op, "index": i, "time": i * 1000}) + "\n" for i, op in enumerate(ops)))
    return path


@pytest.mark.parametrize("offset", [-1, None])
def test_an_acknowledged_send_of_unknown_offset_is_judged_by_its_value(tmp_path, offset):
    spec = {"acks": "all", "idempotence": True, "variant": "kip966", "min_isr": 2}
    results = check_run(spec, _history(tmp_path, offset))
    assert results["verdict"] == "valid", results.get("reasons")
    assert results["checkers"]["queue"]["valid"] is True and results["checkers"]["linear"]["valid"] is True


def test_a_real_offset_that_disagrees_is_still_an_anomaly(tmp_path):
    results = check_run({"acks": "all", "idempotence": True}, _history(tmp_path, 0))
    assert results["verdict"] == "invalid"
    assert "inconsistent-offsets" in results["checkers"]["queue"]["anomaly_types"]
