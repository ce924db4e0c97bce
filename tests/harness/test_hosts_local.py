"""LocalHost: addresses, start/kill/exec/logs/teardown, pid files."""

import signal

import pytest

from harness.hosts import state
from harness.hosts.local import LocalHost, run_prefix


def test_prefix_is_stable_per_run_and_inside_loopback():
    a, b = run_prefix("r1"), run_prefix("r2")
    assert a == run_prefix("r1") and a.startswith("127.") and a.count(".") == 3
    assert a != b


@pytest.mark.jepsen
def test_start_kill_exec_teardown(tmp_path, monkeypatch):
    monkeypatch.setenv("KRAFTCHECK_STATE", str(tmp_path / "state"))
    host = LocalHost(tmp_path / "store")
    assert host.ip("n1") != host.ip("n2")
    pid = host.start("n1", ["python", "-c", "import sys,time;print('hello',flush=True);time.sleep(60)"])
    assert host.is_running("n1") and host.pid("n1") == pid
    assert [p["node"] for p in state.read_pid_files()] == ["n1"]
    code, out = host.exec("n1", ["python", "-c", "import os;print(os.getgid())"])
    assert code == 0 and int(out.strip()) == host.node_gid("n1")
    host.kill("n1", signal.SIGKILL)
    assert not host.is_running("n1") and host.exit_code("n1") == -9
    assert state.read_pid_files() == []
    host.start("n1", ["python", "-c", "import time;time.sleep(60)"])
    host.teardown()
    assert not host.is_running("n1") and state.read_run_records() == []
    assert "hello" in host.logs("n1")
    with pytest.raises(RuntimeError):
        host.start("n1", ["true"])
