"""DockerHost: containers on a fixed-subnet internal network; start/kill/exec/teardown; labels."""

import signal
import time

import pytest

from harness.hosts.docker import host_pid_of, pick_subnet, project_root


def test_pick_subnet_skips_used_ones():
    import ipaddress

    used = [ipaddress.ip_network("172.29.0.0/20")]
    net = pick_subnet("r", used)
    assert net.prefixlen == 24 and str(net).startswith("172.29.") and not net.overlaps(used[0])


def test_project_root_is_what_containers_mount_at_kraftcheck():
    """Node processes import the project from the mount; a wrong root leaves them without ``nemesis``."""
    root = project_root()
    assert (root / "harness" / "__init__.py").is_file() and (root / "nemesis" / "lazyfs").is_dir()


def test_host_pid_of_unknown_namespace_is_none():
    assert host_pid_of(2**22 + 11, 1) is None


@pytest.mark.jepsen
def test_start_kill_exec_teardown(tmp_path, monkeypatch):
    from harness.image import ImageError, docker_client

    monkeypatch.setenv("KRAFTCHECK_STATE", str(tmp_path / "state"))
    try:
        client = docker_client()
    except ImageError as exc:
        pytest.skip(str(exc))
    from harness.hosts.docker import DockerHost
    from harness.hosts.state import proc_state

    host = DockerHost(tmp_path / "store")
    try:
        assert host.ip("n1").startswith("172.29.") and host.ip("n1") != host.ip("n2")
        pid = host.start("n1", ["python", "-c", "import time;print('hi',flush=True);time.sleep(60)"])
        assert host.is_running("n1") and proc_state(pid) in ("S", "R")
        code, out = host.exec("n1", ["ip", "-4", "addr"])
        assert code == 0 and host.ip("n1") in out
        host.kill("n1", signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while proc_state(pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc_state(pid) == "T"
        assert host.exit_code("n1") is None  # still there (stopped)
        host.kill("n1", signal.SIGKILL)
        assert not host.is_running("n1") and host.is_container_up("n1")  # the container outlives the node
        assert host.exit_code("n1") == -9  # as on the local backend: negative for a signal
        pid2 = host.start("n1", ["python", "-c", "import time;time.sleep(60)"])
        assert pid2 != pid and host.is_running("n1") and host.exit_code("n1") is None
        host.stop("n1", timeout_s=5)
        assert not host.is_running("n1") and host.exit_code("n1") == -15  # no handler: SIGTERM ends it
        host.start("n1", ["python", "-c", "import sys,time;time.sleep(1);sys.exit(3)"])
        deadline = time.monotonic() + 10
        while host.is_running("n1") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert host.exit_code("n1") == 3
        assert "hi" in host.logs("n1")
        labels = client.containers.get(host.container_name("n1")).labels
        assert labels["kraftcheck"] == "1" and labels["kraftcheck.run"] == host.run_id
        # Created through testcontainers (its labels beside ours), with its Ryuk reaper off.
        assert labels["org.testcontainers"] == "true"
        network = client.networks.get(f"kraftcheck-{host.run_id}")
        assert network.attrs["Labels"]["org.testcontainers"] == "true" and network.attrs["Internal"] is True
        images = [c.attrs["Config"]["Image"] for c in client.containers.list(all=True)]
        assert not any("ryuk" in image for image in images)
    finally:
        host.teardown()
    assert client.containers.list(all=True, filters={"label": f"kraftcheck.run={host.run_id}"}) == []
    assert client.networks.list(filters={"label": f"kraftcheck.run={host.run_id}"}) == []


def test_the_mounted_project_root_holds_every_package_a_node_imports():
    """Containers import the servers, the lazyfs daemon and the probes from the bind-mounted checkout."""
    root = project_root()
    for package in ("harness", "nemesis", "reference_impl", "workloads"):
        assert (root / package / "__init__.py").is_file(), package
