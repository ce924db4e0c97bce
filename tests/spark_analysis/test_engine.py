"""``--engine spark`` (spark_analysis.engine) judges exactly as the Python queue checker does."""

import json

import pytest

from checkers.queue.checker import QueueChecker
from spark_analysis.engine import check_run_spark

from .planted import planted_history

pytestmark = pytest.mark.slow


def test_spark_engine_verdict_equals_python_queue_checker(spark, tmp_path):
    ops = planted_history(400, seed=7)
    ops.append({"index": len(ops), "time": ops[-1]["time"] + 1, "type": "invoke", "process": "nemesis",
                "f": "kill", "value": None, "node": None, "error": None})
    ops.append({"index": len(ops), "time": ops[-1]["time"] + 1, "type": "ok", "process": "nemesis",
                "f": "kill", "value": {"effective": True}, "node": None, "error": None})
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(op) + "\n" for op in ops))
    spec = {"variant": "v3.5", "acks": "all", "min_isr": 2, "nemesis": ["kill"], "final_read_timeout_s": 30}
    python = QueueChecker().check(spec, ops, [])
    spark_result = check_run_spark(spec, str(path), spark=spark)
    queue = spark_result["checkers"]["queue"]
    assert queue["valid"] == python["valid"] and spark_result["valid"] == python["valid"]
    assert queue["anomaly_types"] == python["anomaly_types"]
    assert queue["anomalies"] == python["anomalies"]
    assert "G0" in queue["anomaly_types"]  # cycles computed, not left out
    assert queue["profile"] == python["profile"]
    assert queue["unseen_deadline_ns"] == python["unseen_deadline_ns"]
