"""``check_run``'s sharing: one analysis of the history passed to the queue and invariants checkers (no
module-level cache, no tricks inside the checkers), and the linearizability engine started on the file
before the history is read (and never left running)."""

import gc
import json
import random
import subprocess
import sys

import pytest

import checkers.queue as queue
from checkers.analysis import check_run
from checkers.invariants import InvariantChecker
from checkers.linear.runner import LinearChecker
from checkers.queue.checker import QueueChecker, find_anomalies
from tests.support.synth import mutate, synth_history


def _write(path, ops):
    with open(path, "w") as fh:
        for op in ops:
            fh.write(json.dumps(op) + "\n")
    return str(path)


TRACE_EVENT = {"time": 1, "node": "b1", "kind": "role", "topic": "t", "partition": 0, "replica": 1,
               "role": "leader", "leader": 1, "leader_epoch": 1}


def _count_analyses(monkeypatch) -> list[int]:
    """Count every ``QueueAnalysis`` built in this process from now on."""
    built: list[int] = []
    real_init = queue.QueueAnalysis.__init__

    def init(self, ops, options=None):
        built.append(1)
        real_init(self, ops, options)

    monkeypatch.setattr(queue.QueueAnalysis, "__init__", init)
    return built


@pytest.mark.parametrize("with_trace", [False, True])
def test_check_run_analyses_the_history_once_for_every_checker(tmp_path, monkeypatch, with_trace):
    ops, _ = mutate(synth_history(400, seed=8, p_gap=0.0), "swap-offsets", random.Random(3))
    path = _write(tmp_path / "h.jsonl", ops)
    trace = _write(tmp_path / "trace.jsonl", [TRACE_EVENT]) if with_trace else None
    built = _count_analyses(monkeypatch)
    res = check_run({}, path, trace, options={"linear": False})
    assert len(built) == 1
    # Both checkers read the one analysis: the queue checker's anomalies, the invariants' I7.
    assert "inconsistent-offsets" in res["checkers"]["queue"]["violations"]
    assert res["checkers"]["invariants"]["invariants"]["I7"]["valid"] is False


def test_checkers_given_the_shared_findings_decide_as_they_do_alone():
    ops, _ = mutate(synth_history(400, seed=8, p_gap=0.0), "swap-offsets", random.Random(3))
    spec, options, traces = {"final_read_timeout_s": 1}, {"unseen_deadline_ns": 0}, [TRACE_EVENT]
    findings = find_anomalies(spec, ops, options)
    assert findings.anomalies["inconsistent-offsets"]  # the comparison is not of empties
    assert findings.options["unseen_deadline_ns"] == 0
    assert (QueueChecker(options, findings=findings).check(spec, ops, traces)
            == QueueChecker(options).check(spec, ops, traces))
    assert (InvariantChecker(queue=findings).check(spec, ops, traces)
            == InvariantChecker().check(spec, ops, traces))


def test_nothing_is_kept_from_one_check_to_the_next(tmp_path):
    good_ops = synth_history(300, seed=2, p_gap=0.0)
    bad_ops, _ = mutate(synth_history(300, seed=2, p_gap=0.0), "swap-offsets", random.Random(1))
    good, bad = _write(tmp_path / "good.jsonl", good_ops), _write(tmp_path / "bad.jsonl", bad_ops)
    verdicts = [check_run({}, p, None, options={"linear": False}) for p in (bad, good, bad)]
    assert [r["checkers"]["invariants"]["invariants"]["I7"]["valid"] for r in verdicts] == [False, True, False]
    # The checkers themselves keep nothing either: one instance judges two histories independently.
    checker = InvariantChecker(trace_given=False)
    assert checker.check({}, bad_ops, [])["invariants"]["I7"]["valid"] is False
    assert checker.check({}, good_ops, [])["invariants"]["I7"]["valid"] is True


def test_the_checkers_neither_fork_nor_pause_the_collector(monkeypatch):
    import checkers.forked as forked
    import checkers.parallel as parallel

    monkeypatch.setattr(parallel, "PARALLEL_MIN_OPS", 0)  # check_run would fork for a history this small
    ops = synth_history(300, seed=4, p_gap=0.0)

    def forbidden(*args):
        raise AssertionError("a checker used a process or collector trick")

    monkeypatch.setattr(forked.os, "fork", forbidden)
    monkeypatch.setattr(gc, "disable", forbidden)
    assert QueueChecker().check({}, ops, [])["valid"] is True
    assert InvariantChecker().check({}, ops, [TRACE_EVENT])["invariants"]["I7"]["valid"] is True
    assert queue.queue_anomalies(ops)["G0"] == []


def test_engine_started_early_gives_the_verdict_of_a_late_start(tmp_path):
    good = _write(tmp_path / "good.jsonl", synth_history(300, seed=5, p_gap=0.0))
    bad_ops, _ = mutate(synth_history(300, seed=5, p_gap=0.0), "swap-offsets", random.Random(1))
    bad = _write(tmp_path / "bad.jsonl", bad_ops)
    for path, expected in ((good, True), (bad, False)):
        late = LinearChecker(time_limit_s=30, history_path=path).check({}, [], [])
        early = LinearChecker(time_limit_s=30, history_path=path)
        early.start()
        got = early.check({}, [], [])
        assert late["valid"] is got["valid"] is expected
        assert got["keys"].keys() == late["keys"].keys()
    # Started twice: the first engine is stopped, not left behind.
    checker = LinearChecker(time_limit_s=30, history_path=bad)
    checker.start()
    first = checker._started.proc
    checker.start()
    assert first.poll() is not None
    assert checker.check({}, [], [])["valid"] is False
    with pytest.raises(ValueError, match="history_path"):
        LinearChecker().start()


def test_cancel_kills_and_reaps_an_engine_still_running(tmp_path):
    path = _write(tmp_path / "h.jsonl", synth_history(200, seed=1, p_gap=0.0))
    checker = LinearChecker(time_limit_s=30, history_path=path)
    checker.start()
    proc = checker._started.proc
    checker.cancel()
    assert proc.returncode is not None  # reaped: no zombie, nothing left running
    checker.cancel()  # twice is harmless


def test_check_run_leaves_no_engine_behind_when_a_checker_is_interrupted(tmp_path, monkeypatch):
    path = _write(tmp_path / "h.jsonl", synth_history(300, seed=3, p_gap=0.0))
    started = []
    real_start = LinearChecker.start

    def start(self):
        real_start(self)
        started.append(self._started.proc)

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
