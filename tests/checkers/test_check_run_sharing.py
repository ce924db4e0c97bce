"""``check_run``'s sharing: the queue checker's anomalies reused by the invariants checker, and the
linearizability engine started on the file before the history is read (and never left running)."""

import gc
import json
import random
import subprocess
import sys

import pytest

import checkers.queue as queue
from checkers.analysis import check_run
from checkers.linear.runner import LinearChecker
from checkers.queue_checker import QueueChecker
from checkers.synth import mutate, synth_history


def _write(path, ops):
    with open(path, "w") as fh:
        for op in ops:
            fh.write(json.dumps(op) + "\n")
    return str(path)


def test_invariants_reuse_the_queue_checkers_anomalies_which_equal_a_fresh_analysis(monkeypatch):
    ops, _ = mutate(synth_history(400, seed=8, p_gap=0.0), "swap-offsets", random.Random(3))
    fresh = queue.queue_anomalies(ops, {"cycles": False})
    assert fresh["inconsistent-offsets"] or fresh["realtime-order"]  # the comparison is not of empties
    QueueChecker({"unseen_deadline_ns": 0}).check({}, ops, [])  # a deadline: its unseen rows differ

    def no_second_analysis(*args, **kwargs):
        raise AssertionError("the history was analysed again")

    monkeypatch.setattr(queue, "queue_anomalies", no_second_analysis)
    shared = queue.cached_anomalies(ops)
    assert set(shared) == set(queue.SHARED_KINDS) and "unseen" not in shared
    assert shared == {k: fresh[k] for k in queue.SHARED_KINDS}
    queue.forget_anomalies()
    with pytest.raises(AssertionError, match="analysed again"):
        queue.cached_anomalies(ops)


def test_check_run_lets_go_of_the_history(tmp_path):
    path = _write(tmp_path / "h.jsonl", synth_history(300, seed=2, p_gap=0.0))
    res = check_run({}, path, None, options={"linear": False})
    assert res["checkers"]["invariants"]["invariants"]["I7"]["valid"] is True  # read the shared kinds
    assert queue._CACHE == {}


def test_engine_started_early_gives_the_verdict_of_a_late_start(tmp_path):
    good = _write(tmp_path / "good.jsonl", synth_history(300, seed=5, p_gap=0.0))
    bad_ops, _ = mutate(synth_history(300, seed=5, p_gap=0.0), "swap-offsets", random.Random(1))
    bad = _write(tmp_path / "bad.jsonl", bad_ops)
    for path, expected in ((good, True), (bad, False)):
        late = LinearChecker(time_limit_s=30).check({"_history_path": path}, [], [])
        early = LinearChecker(time_limit_s=30)
        early.start(path)
        got = early.check({"_history_path": path}, [], [])
        assert late["valid"] is got["valid"] is expected
        assert got["keys"].keys() == late["keys"].keys()
    # Started on one file, asked about another: the engine is rerun on the right one.
    checker = LinearChecker(time_limit_s=30)
    checker.start(good)
    first = checker._started[1].proc
    assert checker.check({"_history_path": bad}, [], [])["valid"] is False
    assert first.poll() is not None


def test_cancel_kills_and_reaps_an_engine_still_running(tmp_path):
    path = _write(tmp_path / "h.jsonl", synth_history(200, seed=1, p_gap=0.0))
    checker = LinearChecker(time_limit_s=30)
    checker.start(path)
    proc = checker._started[1].proc
    checker.cancel()
    assert proc.returncode is not None  # reaped: no zombie, nothing left running
    checker.cancel()  # twice is harmless


def test_check_run_leaves_no_engine_behind_when_a_checker_is_interrupted(tmp_path, monkeypatch):
    path = _write(tmp_path / "h.jsonl", synth_history(300, seed=3, p_gap=0.0))
    started = []
    real_start = LinearChecker.start

    def start(self, p):
        real_start(self, p)
        started.append(self._started[1].proc)

    def interrupted(self, spec, history, traces):
        raise KeyboardInterrupt

    monkeypatch.setattr(LinearChecker, "start", start)
    monkeypatch.setattr(QueueChecker, "check", interrupted)
    with pytest.raises(KeyboardInterrupt):
        check_run({}, path, None)
    assert len(started) == 1 and started[0].returncode is not None


def test_engine_executable_restores_the_collector(tmp_path):
    from checkers.linear.__main__ import main
    path = _write(tmp_path / "h.jsonl", synth_history(100, seed=4, p_gap=0.0))
    assert gc.isenabled()
    assert main(["--format", "jsonl", path]) == 0
    assert gc.isenabled()
    proc = subprocess.run([sys.executable, "-m", "checkers.linear", "--format", "jsonl", path],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout)["valid"] is True


@pytest.mark.parametrize("options, parallel", [({}, False), ({"linear": False}, True),
                                               ({"queue": {"parallel": True}}, True)])
def test_no_queue_side_process_while_the_engine_keeps_the_other_core_busy(tmp_path, monkeypatch, options,
                                                                           parallel):
    import checkers.analysis as analysis
    path = _write(tmp_path / "h.jsonl", synth_history(100, seed=6, p_gap=0.0))
    asked = []

    def start_side(history, opts):
        asked.append(dict(opts or {}))
        return None

    monkeypatch.setattr(analysis, "start_side", start_side)
    assert check_run({}, path, None, options=options)["valid"] is True
    assert len(asked) == 1 and asked[0].get("parallel", True) is parallel
