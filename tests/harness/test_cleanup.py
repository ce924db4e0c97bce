"""``clean_all``: a killed harness leaves nothing behind once clean has run; live runs are kept."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness import cleanup
from harness.hosts import state
from nemesis.net import comment_tag


def _rules(run_id):
    out = subprocess.run(["iptables", "-S"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if comment_tag(run_id) in line]


def test_records_of_live_owner_are_kept_and_dead_ones_cleaned(tmp_path, monkeypatch):
    monkeypatch.setenv("KRAFTCHECK_STATE", str(tmp_path / "state"))
    state.write_run_record("20260101000000-aaaaaa", "local", node_dirs=[])
    dead_dir = tmp_path / "dead" / "b1"
    dead_dir.mkdir(parents=True)
    state.write_run_record("20260101000000-bbbbbb", "local", node_dirs=[str(dead_dir)])
    state.update_run_record("20260101000000-bbbbbb", owner_pid=2**22 + 7, owner_start=1)
    report = cleanup.clean_all(docker=False)
    assert report["live_runs_kept"] == ["20260101000000-aaaaaa"]
    assert report["runs"] == ["20260101000000-bbbbbb"] and not dead_dir.exists()
    assert [r["run_id"] for r in state.read_run_records()] == ["20260101000000-aaaaaa"]
    assert "runs cleaned: 1" in cleanup.summary(report)


@pytest.mark.jepsen
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for partitions")
def test_kill_harness_mid_partition_then_clean(tmp_path, monkeypatch):
    monkeypatch.setenv("KRAFTCHECK_STATE", str(tmp_path / "state"))
    env = dict(os.environ, KRAFTCHECK_STATE=str(tmp_path / "state"))
    proc = subprocess.Popen([sys.executable, "-m", "tests.harness.crash_harness", str(tmp_path / "store"),
                             "partition"], stdout=subprocess.PIPE, env=env, text=True)
    try:
        info = json.loads(proc.stdout.readline())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    run_id = info["run_id"]
    assert info["partition"]["effective"] is True
    assert _rules(run_id), "the partition's rules outlive the harness until clean"
    # Nodes die with the harness (parent-death signal); give the kernel a moment.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(state.proc_state(p) not in (None, "Z") for p in info["pids"].values()):
        time.sleep(0.1)
    assert all(state.proc_state(p) in (None, "Z") for p in info["pids"].values())
    report = cleanup.clean_all(docker=False)
    assert run_id in report["runs"]
    assert _rules(run_id) == []
    assert not (tmp_path / "store" / "node-dirs").exists() or not any((tmp_path / "store" / "node-dirs").iterdir())
    assert state.read_pid_files() == [] and state.read_run_records() == []
