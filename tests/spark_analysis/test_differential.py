"""Differential tests: the Spark engine returns exactly what checkers.queue.queue_anomalies returns, from a
JSONL history (parsed and paired by Spark) and from its columnar form (checkers.history.parquet).

The 1k-op history carries planted anomalies of every kind but the realtime cycles
(tests/spark_analysis/planted.py), a torn last line and the unseen deadline option; the encodings history
holds every golden fixture and the odd encodings; the cycles history holds cycles of every class in
several components, with info ops and acyclic parts; the slow variants go up to 1 M ops.
"""

import json

import pytest

from checkers.history.parquet import write_history_parquet
from checkers.queue import CYCLE_KINDS, KINDS, SPARK_KINDS, queue_anomalies
from spark_analysis.check import check_history
from spark_analysis.errors import CorruptInput
from spark_analysis.read import raise_if_malformed, read_jsonl
from tests.support.synth import synth_history

from .planted import cycles_history, encodings_history, planted_history

INPUTS = ["jsonl", "parquet"]


def _write(path, ops, torn_tail=False):
    with open(path, "w") as fh:
        for op in ops:
            fh.write(json.dumps(op) + "\n")
        if torn_tail:
            fh.write('{"index": 999999, "time": 1, "ty')
    return str(path)


def _assert_same(expected, got, kinds=KINDS):
    for kind in kinds:
        assert got[kind] == expected[kind], f"{kind}: spark {got[kind][:3]} != python {expected[kind][:3]}"


def _check(spark, path, options, source):
    if source == "parquet":
        write_history_parquet(path)
    result = check_history(path, options, spark=spark, source=source)
    assert result.source == source
    return result


@pytest.mark.parametrize("source", INPUTS)
def test_spark_equals_python_on_1k_ops_with_planted_anomalies(spark, tmp_path, source):
    ops = planted_history(1000, seed=0)
    path = _write(tmp_path / "history.jsonl", ops, torn_tail=True)
    options = {"unseen_deadline_ns": ops[len(ops) // 2]["time"]}
    expected = queue_anomalies(ops, options)
    planted = (*SPARK_KINDS, "G0", "G1c")
    assert all(expected[k] for k in planted), [k for k in planted if not expected[k]]
    result = _check(spark, path, options, source)
    _assert_same(expected, result.anomalies)
    assert result.malformed_count == 1
    assert result.malformed[0].line == len(ops) + 1 and result.malformed[0].reason.startswith("invalid JSON")


@pytest.mark.parametrize("source", INPUTS)
def test_spark_equals_python_on_every_encoding(spark, tmp_path, source):
    ops = encodings_history()
    path = _write(tmp_path / "history.jsonl", ops)
    expected = queue_anomalies(ops)
    _assert_same(expected, _check(spark, path, {}, source).anomalies)


@pytest.mark.parametrize("source", INPUTS)
def test_spark_finds_the_cycles_python_finds(spark, tmp_path, source):
    ops = cycles_history()
    path = _write(tmp_path / "history.jsonl", ops)
    expected = queue_anomalies(ops)
    assert all(len(expected[k]) >= 2 for k in CYCLE_KINDS), {k: len(expected[k]) for k in CYCLE_KINDS}
    got = _check(spark, path, {}, source).anomalies
    _assert_same(expected, got, CYCLE_KINDS)
    # the option turns them off in both engines
    off = check_history(path, {"cycles": False}, spark=spark, source=source).anomalies
    assert all(off[k] == [] for k in CYCLE_KINDS)


def test_corrupt_input_names_file_and_line(spark, tmp_path):
    path = _write(tmp_path / "h.jsonl", synth_history(20, seed=3), torn_tail=True)
    with pytest.raises(CorruptInput, match=r"h\.jsonl:\d+: invalid JSON"):
        raise_if_malformed(spark, read_jsonl(spark, path))


def test_values_that_are_not_integers_are_refused_from_jsonl(spark, tmp_path):
    ops = synth_history(20, seed=3)
    ops.append({"index": len(ops), "time": 10**9, "type": "invoke", "process": 77, "f": "send", "value": [1, "a"]})
    path = _write(tmp_path / "history.jsonl", ops)
    with pytest.raises(CorruptInput, match="not a 64-bit integer"):
        check_history(path, spark=spark, source="jsonl")


def test_a_columnar_history_that_no_longer_matches_is_refused(tmp_path):
    path = _write(tmp_path / "history.jsonl", synth_history(20, seed=3))
    write_history_parquet(path)
    with open(path, "a") as fh:
        fh.write(json.dumps({"index": 999, "time": 10**9, "type": "invoke", "process": 1, "f": "poll"}) + "\n")
    # Refused before any Spark job: the JSONL is not silently used instead.
    with pytest.raises(CorruptInput, match="changed since.*kraftcheck export --history .* --force"):
        check_history(path, spark=object())


@pytest.mark.slow
@pytest.mark.parametrize("source", INPUTS)
@pytest.mark.parametrize("n_ops,seed", [(20_000, 1), (1_000_000, 2)])
def test_spark_equals_python_at_scale(spark, tmp_path, n_ops, seed, source):
    ops = planted_history(n_ops, seed=seed)
    path = _write(tmp_path / "history.jsonl", ops)
    expected = queue_anomalies(ops, {"cycles": False})
    del ops
    # The session's 2 shuffle partitions are for small tests: the JSONL path's joins need more at 1 M ops.
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(max(2, n_ops // 62_500)))
    try:
        _assert_same(expected, _check(spark, path, {"cycles": False}, source).anomalies)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
