"""Differential tests: the Spark queue checks return exactly what checkers.queue.queue_anomalies returns.

The 1k-op history carries planted anomalies of every Spark kind (tests/spark_analysis/planted.py), a
torn last line and the unseen deadline option; the slow variants go up to 1 M ops and the Parquet path.
"""

import json

import pytest

from checkers.queue import queue_anomalies
from checkers.synth import synth_history
from spark_analysis.check import check_history
from spark_analysis.errors import CorruptInput
from spark_analysis.queue_jobs import KINDS
from spark_analysis.read import raise_if_malformed, read_jsonl

from .planted import planted_history


def _write(path, ops, torn_tail=False):
    with open(path, "w") as fh:
        for op in ops:
            fh.write(json.dumps(op) + "\n")
        if torn_tail:
            fh.write('{"index": 999999, "time": 1, "ty')
    return str(path)


def _assert_same(expected, got):
    for kind in KINDS:
        assert got[kind] == expected[kind], f"{kind}: spark {got[kind][:3]} != python {expected[kind][:3]}"


def test_spark_equals_python_on_1k_ops_with_planted_anomalies(spark, tmp_path):
    ops = planted_history(1000, seed=0)
    path = _write(tmp_path / "history.jsonl", ops, torn_tail=True)
    options = {"cycles": False, "unseen_deadline_ns": ops[len(ops) // 2]["time"]}
    expected = queue_anomalies(ops, options)
    assert all(expected[k] for k in KINDS), [k for k in KINDS if not expected[k]]  # every kind planted
    result = check_history(path, options, spark=spark)
    _assert_same(expected, result.anomalies)
    assert result.malformed_count == 1
    assert (result.malformed[0].line, result.malformed[0].reason) == (len(ops) + 1, "invalid JSON")


def test_corrupt_input_names_file_and_line(spark, tmp_path):
    path = _write(tmp_path / "h.jsonl", synth_history(20, seed=3), torn_tail=True)
    with pytest.raises(CorruptInput, match=r"h\.jsonl:\d+: invalid JSON"):
        raise_if_malformed(spark, read_jsonl(spark, path))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
@pytest.mark.parametrize("n_ops,seed", [(20_000, 1), (1_000_000, 2)])
def test_spark_equals_python_at_scale(spark, tmp_path, n_ops, seed, fmt):
    from spark_analysis.parquet import jsonl_to_parquet

    ops = planted_history(n_ops, seed=seed)
    path = _write(tmp_path / "history.jsonl", ops)
    expected = queue_anomalies(ops, {"cycles": False})
    del ops
    if fmt == "parquet":
        parquet = str(tmp_path / "history.parquet")
        jsonl_to_parquet(path, parquet)
        path = parquet
    # The session's 2 shuffle partitions are for small tests: at 1 M ops a partition of the shared tables
    # outgrew the 2 GB local heap (an OutOfMemoryError in the JSONL check); keep partitions near 60 k ops.
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(max(2, n_ops // 62_500)))
    try:
        _assert_same(expected, check_history(path, {"cycles": False}, spark=spark).anomalies)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
