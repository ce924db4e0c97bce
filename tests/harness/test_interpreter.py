"""Unit tests of harness.interpreter with scripted in-memory clients (pure logic, no cluster)."""

import random
import threading
import time

from harness.context import RunContext
from harness.generator import FnGen, Limit, Once, Stagger, TimeLimit
from harness.history import HistoryWriter, pair_ops, read_history
from harness.interpreter import Interpreter
from harness.spec import RunSpec
from nemesis.compose import ComposedNemesis
from nemesis.registry import NemesisPackage, families
from nemesis.schedule import Schedule
from workloads.queue_ops import QueueOps


class ScriptedClient:
    """Completes ops by a rule: ok / fail / raise / hang, per value."""

    def __init__(self, process, behaviour, closed):
        self.process, self.behaviour, self.closed = process, behaviour, closed

    def invoke(self, run, op):
        action = self.behaviour(op)
        if action == "raise":
            raise ConnectionError("broken pipe")
        if action == "hang":
            time.sleep(1.0)
        if action == "garbage":
            return "nonsense"
        return dict(op, type=action if action in ("ok", "fail", "info") else "ok")

    def close(self):
        self.closed.append(self.process)


def make(tmp_path, behaviour, concurrency=2, timeout=0.3):
    history = HistoryWriter(tmp_path / "history.jsonl")
    run = RunContext(spec=RunSpec(), host=None, store_dir=tmp_path, rng=random.Random(1), history=history)
    closed, created = [], []

    def factory(process):
        created.append(process)
        return ScriptedClient(process, behaviour, closed)

    return run, Interpreter(run, factory, concurrency, timeout), closed, created


def ops_of(tmp_path):
    history = read_history(tmp_path / "history.jsonl")
    assert not history.malformed
    return history.ops


def test_every_invoke_completes_once_per_process(tmp_path):
    # A generous timeout: on a loaded machine a 0.3 s budget can expire and retire a process (info).
    run, interp, _, _ = make(tmp_path, lambda op: "ok", concurrency=3, timeout=30.0)
    stats = interp.run_phase(Limit(QueueOps(keys=2), 60))
    run.history.close()
    ops = ops_of(tmp_path)
    pairs, problems = pair_ops(ops)
    assert not problems and len(pairs) == 60 and all(c is not None for _, c in pairs)
    assert stats.by_type["ok"] == 60 and stats.finished
    assert [op["index"] for op in ops] == list(range(len(ops)))
    assert all(isinstance(op["time"], int) for op in ops)
    # No process was retired (a retired slot continues as process 3, 4, ...); which of the three slots got
    # ops is up to thread scheduling.
    assert {op["process"] for op in ops} <= {0, 1, 2}


def test_timeout_is_info_and_retires_the_process(tmp_path):
    run, interp, closed, created = make(tmp_path, lambda op: "hang" if op["value"] == "slow" else "ok",
                                        concurrency=1, timeout=0.2)
    gen = FnGen(lambda ctx: None)
    ops_to_run = [{"f": "x", "value": "slow"}, {"f": "x", "value": "fast"}]
    gen = FnGen(lambda ctx: ops_to_run.pop(0) if ops_to_run else None)
    t0 = time.monotonic()
    stats = interp.run_phase(gen)
    assert time.monotonic() - t0 < 0.9  # the hung call was abandoned, not waited for
    run.history.close()
    completions = [op for op in ops_of(tmp_path) if op["type"] != "invoke"]
    assert [(c["type"], c["process"]) for c in completions] == [("info", 0), ("ok", 1)]
    assert "timeout" in completions[0]["error"]
    assert created == [0, 1] and stats.retired == 1
    time.sleep(1.0)  # the abandoned call returns and closes its own client
    assert 0 in closed


def test_exception_is_info_fail_keeps_process(tmp_path):
    script = ["fail", "raise", "ok", "garbage", "ok"]
    run, interp, closed, _ = make(tmp_path, lambda op: script[op["value"]], concurrency=1)
    values = list(range(len(script)))
    interp.run_phase(FnGen(lambda ctx: {"f": "x", "value": values.pop(0)} if values else None))
    run.history.close()
    completions = [op for op in ops_of(tmp_path) if op["type"] != "invoke"]
    assert [(c["type"], c["process"]) for c in completions] == [
        ("fail", 0), ("info", 0), ("ok", 1), ("info", 1), ("ok", 2)]
    assert "ConnectionError" in completions[1]["error"]
    assert "invalid completion" in completions[3]["error"]
    assert closed == [0, 1]  # retired clients are closed


def test_completion_keeps_extra_invoke_fields(tmp_path):
    run, interp, _, _ = make(tmp_path, lambda op: "ok", concurrency=1)
    interp.run_phase(Once({"f": "poll", "value": None, "final": True}))
    run.history.close()
    invoke, completion = ops_of(tmp_path)
    assert invoke["final"] is True and completion["final"] is True


def test_rate_and_time_limit(tmp_path):
    run, interp, _, _ = make(tmp_path, lambda op: "ok", concurrency=4)
    t0 = time.monotonic()
    stats = interp.run_phase(TimeLimit(Stagger(QueueOps(keys=2), rate=50.0), 1.0))
    elapsed = time.monotonic() - t0
    n = stats.by_type["ok"]
    assert 0.9 < elapsed < 2.0
    assert 25 <= n <= 80  # about 50 ops in one second


def test_stop_interrupts_a_phase(tmp_path):
    run, interp, _, _ = make(tmp_path, lambda op: "ok", concurrency=2)
    threading.Timer(0.3, interp.stop).start()
    t0 = time.monotonic()
    stats = interp.run_phase(Stagger(QueueOps(keys=1), rate=20.0))
    assert time.monotonic() - t0 < 2 and not stats.finished


def test_max_duration_bounds_a_phase(tmp_path):
    run, interp, _, _ = make(tmp_path, lambda op: "ok", concurrency=1)
    stats = interp.run_phase(Stagger(QueueOps(keys=1), rate=20.0), max_duration_s=0.5)
    assert not stats.finished


class ScriptedNemesis:
    """A nemesis member that kills without a cluster: ``kill`` succeeds, ``start`` raises."""

    def fs(self):
        return {"kill", "start"}

    def setup(self, run):
        pass

    def invoke(self, run, op):
        if op["f"] == "start":
            raise RuntimeError("no such node")
        return dict(op, type="ok", value={"killed": 123, "effective": True})

    def heal_all(self, run):
        return {"effective": True}

    def teardown(self, run):
        pass


def test_nemesis_ops_interleave_with_client_ops_in_one_history(tmp_path):
    # As in the runner: the nemesis package runs its schedule on its own thread while the interpreter
    # runs the clients, both recording into the run's history.
    run, interp, _, _ = make(tmp_path, lambda op: "ok", concurrency=2)
    package = NemesisPackage(["kill"], ComposedNemesis({"process": ScriptedNemesis()}),
                             Schedule([families()["kill"]], seed=1, interval_s=0.05))
    stop = threading.Event()
    nemesis = threading.Thread(target=package.run, args=(run, time.monotonic() + 0.6, stop))
    nemesis.start()
    interp.run_phase(TimeLimit(Stagger(QueueOps(keys=2), rate=100.0), 0.6))
    nemesis.join(5)
    run.history.close()
    ops = ops_of(tmp_path)
    pairs, problems = pair_ops(ops)
    assert not problems and all(c is not None for _, c in pairs)
    faults = [op for op in ops if op["process"] == "nemesis"]
    assert len(faults) >= 4 and len(faults) < len(ops)
    assert [op["index"] for op in ops] == list(range(len(ops)))
    kills = [op for op in faults if op["f"] == "kill" and op["type"] != "invoke"]
    starts = [op for op in faults if op["f"] == "start" and op["type"] != "invoke"]
    assert kills and all(op["type"] == "ok" and op["value"]["killed"] == 123 for op in kills)
    assert starts and all(op["type"] == "info" and "no such node" in op["error"] for op in starts)


def test_a_broken_generator_is_reported_not_swallowed(tmp_path):
    run, interp, _, _ = make(tmp_path, lambda op: "ok", concurrency=2)

    def broken(ctx):
        raise KeyError("generator bug")

    stats = interp.run_phase(FnGen(broken))
    assert stats.errors and "generator bug" in stats.errors[0]
