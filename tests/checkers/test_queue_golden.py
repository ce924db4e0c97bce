"""Golden fixtures: each hand-built history yields exactly its anomaly kind (tests/checkers/fixtures.py)."""

import pytest

from checkers.queue import KINDS, SPARK_KINDS, queue_anomalies
from tests.checkers.fixtures import GOLDEN


def test_every_kind_has_a_fixture():
    assert set(GOLDEN) == set(KINDS)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_fixture_produces_exactly_its_kind(name):
    ops, expected = GOLDEN[name]
    result = queue_anomalies(ops)
    assert list(result) == list(KINDS)  # every kind present, in contract order
    assert {k for k, rows in result.items() if rows} == expected


def test_shapes_are_the_contract():
    """Whole results for several fixtures: these are the shapes the Spark implementation reproduces."""
    r = queue_anomalies(GOLDEN["inconsistent-offsets"][0])
    assert r["inconsistent-offsets"] == [{"key": 1, "offset": 0, "values": [1, 2], "ops": [2, 3, 5, 7]}]
    r = queue_anomalies(GOLDEN["duplicate"][0])
    assert r["duplicate"] == [{"key": 1, "value": 1, "offsets": [0, 1]}]
    r = queue_anomalies(GOLDEN["lost-write"][0])
    assert r["lost-write"] == [{"key": 1, "value": 2, "offset": 1, "index": 1, "max_read_index": 2,
                                "writer": 3, "max_read": 9}]
    r = queue_anomalies(GOLDEN["poll-skip"][0])
    assert r["poll-skip"] == [{"key": 1, "process": 3, "ops": [7, 9], "values": [1, 3], "delta": 2,
                               "skipped": [2]}]
    r = queue_anomalies(GOLDEN["nonmonotonic-poll"][0])
    assert r["nonmonotonic-poll"] == [{"key": 1, "process": 2, "ops": [5, 7], "values": [2, 2], "delta": 0}]
    r = queue_anomalies(GOLDEN["int-poll-skip"][0])
    assert r["int-poll-skip"] == [{"key": 1, "op": 7, "pos": 1, "values": [1, 3], "delta": 2, "skipped": [2]}]
    r = queue_anomalies(GOLDEN["int-nonmonotonic-poll"][0])
    assert r["int-nonmonotonic-poll"] == [{"key": 1, "op": 5, "pos": 1, "values": [2, 1], "delta": -1}]
    r = queue_anomalies(GOLDEN["nonmonotonic-send"][0])
    assert r["nonmonotonic-send"] == [{"key": 1, "process": 0, "ops": [1, 3], "values": [1, 2], "delta": -1}]
    r = queue_anomalies(GOLDEN["int-nonmonotonic-send"][0])
    assert r["int-nonmonotonic-send"] == [{"key": 1, "op": 1, "pos": 1, "values": [1, 2], "delta": -1}]
    r = queue_anomalies(GOLDEN["int-send-skip"][0])
    assert r["int-send-skip"] == [{"key": 1, "op": 3, "pos": 1, "values": [10, 12], "delta": 2,
                                   "skipped": [11]}]
    assert r["G0"][0]["cycle"] == [2, 3]
    r = queue_anomalies(GOLDEN["G1a"][0])
    assert r["G1a"] == [{"key": 1, "value": 1, "writer": 1, "reader": 3}]
    r = queue_anomalies(GOLDEN["precommitted-read"][0])
    assert r["precommitted-read"] == [{"key": 1, "value": 1, "op": 1}]
    r = queue_anomalies(GOLDEN["unseen"][0])
    assert r["unseen"] == [{"key": 1, "value": 1, "offset": 0, "writer": 1}]
    r = queue_anomalies(GOLDEN["acked-unreadable"][0])
    assert r["acked-unreadable"] == [{"key": 1, "offset": 0, "value": 1, "writer": 1, "final_values": []}]
    r = queue_anomalies(GOLDEN["realtime-order"][0])
    assert r["realtime-order"] == [{"key": 1, "earlier": 1, "later": 3, "offsets": [1, 0], "values": [1, 2]}]
    assert r["G0-realtime"] == [{"cycle": [1, 3], "edges": [
        {"from": 1, "to": 3, "type": "rt", "key": None, "value": None},
        {"from": 3, "to": 1, "type": "ww", "key": 1, "value": 1}]}]
    r = queue_anomalies(GOLDEN["hwm-regression"][0])
    assert r["hwm-regression"] == [{"key": 1, "earlier": 3, "later": 5, "hwms": [1, 0]}]
    r = queue_anomalies(GOLDEN["G1c-realtime"][0])
    assert [e["type"] for e in r["G1c-realtime"][0]["edges"]] == ["rt", "ww", "wr"]


def test_unseen_deadline_counts_only_reads_before_it():
    ops = GOLDEN["poll-skip"][0]
    assert queue_anomalies(ops)["unseen"] == []
    # reads completing after the deadline do not count as having seen anything
    late = queue_anomalies(ops, {"unseen_deadline_ns": 0})["unseen"]
    assert [u["value"] for u in late] == [1, 2, 3]


def test_cycles_can_be_switched_off():
    r = queue_anomalies(GOLDEN["G0"][0], {"cycles": False})
    assert not any(r.values())


def test_spark_kinds_are_the_non_cycle_kinds_in_contract_order():
    assert SPARK_KINDS == tuple(k for k in KINDS if k not in {"G0", "G1c", "G0-realtime", "G1c-realtime"})


def test_seek_to_beginning_makes_a_late_first_read_a_skip():
    from tests.checkers.fixtures import build, poll, send
    rows = [*send(0, 1, 1, 0), *send(0, 1, 2, 1), *poll(2, {1: [(0, 1), (1, 2)]}),
            (1, "invoke", "assign", [1], {"seek_to_beginning": True}),
            (1, "ok", "assign", [1], {"seek_to_beginning": True}), *poll(1, {1: [(1, 2)]})]
    r = queue_anomalies(build(*rows))
    assert r["poll-skip"] == [{"key": 1, "process": 1, "ops": [7, 9], "values": [None, 2], "delta": 2,
                               "skipped": [1]}]


def test_final_read_by_a_busy_process_starts_from_the_beginning():
    from tests.checkers.fixtures import build, poll, send
    rows = [*send(0, 1, 1, 0), *send(0, 1, 2, 1), *poll(2, {1: [(0, 1), (1, 2)]}),
            *poll(2, {1: [(0, 1), (1, 2)]}, extra={"final": True, "ends": {"1": 2}})]
    assert not any(queue_anomalies(build(*rows)).values())
    # a final read that misses the start of the log skipped it
    rows[-2:] = poll(2, {1: [(1, 2)]}, extra={"final": True})
    r = queue_anomalies(build(*rows))
    assert r["poll-skip"] == [{"key": 1, "process": 2, "ops": [7, 7], "values": [None, 2], "delta": 2,
                               "skipped": [1]}]
    assert r["acked-unreadable"] == [{"key": 1, "offset": 0, "value": 1, "writer": 1, "final_values": []}]
