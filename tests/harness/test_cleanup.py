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
from harness.hosts.iptables import comment_tag


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


def _host_rules(run_id):
    out = subprocess.run(["iptables", "-S"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if comment_tag(run_id) in line]


def _mounts(run_id):
    return [m for m in cleanup.kraftcheck_mounts() if m[0] == f"kraftcheck-{run_id}"]


def _crash(tmp_path, backend, *faults):
    env = dict(os.environ, KRAFTCHECK_STATE=str(tmp_path / "state"))
    proc = subprocess.Popen([sys.executable, "-m", "tests.harness.crash_harness", str(tmp_path / "store"),
                             backend, *faults], stdout=subprocess.PIPE, env=env, text=True)
    try:
        line = proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert line, "the crash harness did not get ready"
    return json.loads(line)


@pytest.mark.jepsen
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for partitions and FUSE")
def test_kill_local_harness_mid_partition_and_power_loss_then_clean(tmp_path, monkeypatch):
    monkeypatch.setenv("KRAFTCHECK_STATE", str(tmp_path / "state"))
    info = _crash(tmp_path, "local", "partition", "disk")
    run_id = info["run_id"]
    assert info["partition"]["effective"] is True and info["disk"]["killed"]
    assert _host_rules(run_id), "the partition's rules outlive the harness until clean"
    assert len(_mounts(run_id)) == 4, "the lazyfs mounts outlive the harness until clean"
    # Nodes die with the harness (parent-death signal); give the kernel a moment.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(state.proc_state(p) not in (None, "Z") for p in info["pids"].values()):
        time.sleep(0.1)
    report = cleanup.clean_all(docker=False)
    assert run_id in report["runs"]
    assert _host_rules(run_id) == [] and _mounts(run_id) == []
    assert all(state.proc_state(p) in (None, "Z") for p in info["pids"].values())
    node_dirs = tmp_path / "store" / "node-dirs"
    assert not node_dirs.exists() or not any(node_dirs.iterdir())
    assert state.read_pid_files() == [] and state.read_run_records() == []


@pytest.mark.jepsen
def test_kill_docker_harness_mid_partition_and_power_loss_then_clean(tmp_path, monkeypatch):
    from harness.image import ImageError, docker_client

    try:
        client = docker_client()
    except ImageError as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("KRAFTCHECK_STATE", str(tmp_path / "state"))
    info = _crash(tmp_path, "docker", "partition", "disk")
    run_id = info["run_id"]
    assert info["partition"]["effective"] is True and info["disk"]["killed"]
    label = {"label": f"kraftcheck.run={run_id}"}
    assert len(client.containers.list(all=True, filters=label)) == 4
    report = cleanup.clean_all()
    assert run_id in report["runs"] and len(report["docker"]["containers"]) == 4
    assert client.containers.list(all=True, filters=label) == []
    assert client.networks.list(filters=label) == []
    assert all(state.proc_state(p) in (None, "Z") for p in info["pids"].values())
    node_dirs = tmp_path / "store" / "node-dirs"
    assert not node_dirs.exists() or not any(node_dirs.iterdir())
    assert state.read_run_records() == []
