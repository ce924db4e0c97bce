"""The two-process queue check (cycle search in a forked child) returns exactly the one-process result."""

import json
import os
import random

import pytest

from checkers import parallel
from checkers import queue as q
from checkers.analysis import check_run
from checkers.forked import Forked
from checkers.queue.checker import QueueChecker
from tests.checkers.fixtures import GOLDEN
from tests.support.synth import MUTATIONS, mutate, synth_history


@pytest.fixture
def tiny_thresholds(monkeypatch):
    """Fork for any history, so small ones exercise the two-process path."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_OPS", 0)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)


def _children() -> set[int]:
    try:
        with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as fh:
            return {int(x) for x in fh.read().split()}
    except OSError:
        return set()


def _two_process(ops, options=None):
    options = dict(options or {})
    with q.no_gc():
        side = parallel.start_side(ops, options)
        assert side is not None and side.pid is not None
        return q.anomalies_of(q.QueueAnalysis(ops, options), side)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_histories_same_in_two_processes(name, tiny_thresholds):
    ops, _ = GOLDEN[name]
    assert _two_process(ops) == q.queue_anomalies(ops, {"parallel": False})


@pytest.mark.parametrize("seed", range(6))
def test_mutated_histories_same_in_two_processes(seed, tiny_thresholds):
    ops = synth_history(300, seed=seed, keys=2, concurrency=4, p_txn=0.5)
    res = mutate(ops, MUTATIONS[seed % len(MUTATIONS)], random.Random(seed))
    if res is not None:
        ops = res[0]
    one = q.queue_anomalies(ops, {"parallel": False})
    assert _two_process(ops) == one


def test_side_started_on_the_file_matches(tmp_path, tiny_thresholds):
    ops, _ = GOLDEN["G1c"]
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(op) + "\n" for op in ops))
    before = _children()
    parallel = check_run({}, path, options={"linear": False})
    single = check_run({}, path, options={"linear": False, "queue": {"parallel": False}})
    assert parallel["checkers"]["queue"] == single["checkers"]["queue"]
    assert parallel["checkers"]["queue"]["anomaly_types"] == ["G1c"]
    assert _children() <= before  # the child was reaped


def test_small_histories_stay_in_one_process():
    ops = synth_history(100, seed=1)
    assert parallel.start_side(ops, {}) is None
    assert parallel.start_side(ops, {"parallel": False, "cycles": True}) is None


def test_child_failure_falls_back_to_this_process():
    calls = []

    def fn():
        calls.append(os.getpid())
        if os.getpid() != parent:
            raise RuntimeError("child breaks")
        return 42

    parent = os.getpid()
    handle = Forked(fn)
    assert handle.pid is not None
    assert handle.result() == 42
    assert calls == [parent]  # the child's attempt is not seen here; the parent computed it


def test_exception_in_parent_computation_still_raises_and_reaps(tiny_thresholds):
    ops = synth_history(200, seed=3)
    before = _children()
    checker = QueueChecker({})
    with pytest.raises(RuntimeError), q.no_gc():
        side = parallel.start_side(ops, {})
        assert side is not None
        pid = side.pid
        try:
            raise RuntimeError("the parent's part failed")
        finally:
            side.cancel()
    assert _children() <= before
    with pytest.raises(ChildProcessError):  # already reaped: no zombie, no running child
        os.waitpid(pid, os.WNOHANG)
    assert checker.check({}, ops, [])["valid"] is True


@pytest.mark.parametrize("tail", ["", "\r\n", '{"type": "info", "process": 9, "f": "poll", "time": 1, "value": 123456789012345678901234}\n'])
def test_the_side_reads_the_file_one_op_at_a_time_with_the_same_result(tmp_path, tail, monkeypatch):
    # The child builds its analysis from checkers.history.jsonl.iter_ops; a carriage return or a big integer met
    # after ops were already used (small blocks here) makes it start over with the reference reader.
    from checkers.history import jsonl as history_fast
    from checkers.history.jsonl import read_ops

    whole = history_fast.iter_ops
    monkeypatch.setattr(history_fast, "iter_ops",
                        lambda path, malformed=None, block_bytes=0: whole(path, malformed, 256))

    rng = random.Random(3)
    ops = mutate(synth_history(300, seed=11), "swap-offsets", rng)[0]
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(op) + "\n" for op in ops) + tail)
    expected = parallel._side_kinds(q.QueueAnalysis(read_ops(path), {}))
    assert parallel._side_from_file(str(path), {}) == expected
    assert expected["G0"] or expected["G1c"] or expected["G0-realtime"] or expected["G1c-realtime"]
