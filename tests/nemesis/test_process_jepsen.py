"""Process faults against real processes on the local host: kill -9/start, pause/resume, stop/start."""

import pytest

from harness.hosts.state import proc_state
from harness.verdict import coverage_reasons
from nemesis.coverage import coverage_table
from nemesis.registry import build_package

pytestmark = pytest.mark.jepsen


def test_kill_pause_stop_each_prove_their_effect(any_run):
    run = any_run
    run.cluster.setup()
    pkg = build_package("kill,pause,stop", seed=11, interval_s=0.1)
    pkg.setup(run)
    try:
        done = pkg.execute(run, {"f": "kill", "value": {"target": "leader", "topic": "queue", "partition": 0}})
        assert done["type"] == "ok" and done["value"]["effective"] is True
        assert done["value"]["nodes"] == ["b1"]
        old_pid = done["value"]["killed"]["b1"]
        assert proc_state(old_pid) is None and not run.host.is_running("b1")

        done = pkg.execute(run, {"f": "start", "value": {}})
        new_pid = done["value"]["started"]["b1"]
        assert done["value"]["effective"] is True and new_pid != old_pid and run.host.is_running("b1")

        done = pkg.execute(run, {"f": "pause", "value": {"target": "majority", "pick": 5}})
        assert done["value"]["effective"] is True and len(done["value"]["nodes"]) == 2
        assert set(done["value"]["proc_state"].values()) == {"T"}
        paused = done["value"]["nodes"]
        done = pkg.execute(run, {"f": "resume", "value": {}})
        assert done["value"]["effective"] is True and sorted(done["value"]["nodes"]) == sorted(paused)
        assert all(proc_state(run.host.pid(n)) != "T" for n in paused)

        done = pkg.execute(run, {"f": "stop", "value": {"target": "controller"}})
        assert done["value"]["effective"] is True and done["value"]["nodes"] == ["c1"]
        if run.host.name == "local":
            assert done["value"]["exit_codes"]["c1"] == -15  # SIGTERM ended the stand-in
        # Heal restarts what is down and continues what is paused.
        pkg.execute(run, {"f": "pause", "value": {"target": "one", "pick": 1}})
        heal = pkg.heal(run)
        assert heal["value"]["effective"] is True
        assert all(run.host.is_running(n) for n in ["c1", "b1", "b2", "b3"])
        assert all(proc_state(run.host.pid(n)) != "T" for n in ["b1", "b2", "b3"])
    finally:
        pkg.teardown(run)
    run.history.close()
    from harness.history import read_history

    table = coverage_table(read_history(run.history.path).ops, "kill,pause,stop")
    assert coverage_reasons(table) == []


def test_kill_of_a_node_that_is_down_is_not_effective(local_run):
    run = local_run
    run.cluster.setup()
    pkg = build_package("kill", seed=1)
    first = pkg.execute(run, {"f": "kill", "value": {"nodes": ["b2"]}})
    assert first["value"]["effective"] is True
    second = pkg.execute(run, {"f": "kill", "value": {"nodes": ["b2"]}})
    assert second["value"]["effective"] is False
    pkg.heal(run)
    assert run.host.is_running("b2")
