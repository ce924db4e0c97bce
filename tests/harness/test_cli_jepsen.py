"""The harness under abuse (jepsen-marked): killed with SIGKILL mid-run, then ``analyze`` and ``clean``;
``clean`` after ``cluster up`` on both backends leaves no process, container, network or data directory.

Each test uses its own state directory (``KRAFTCHECK_STATE``), so ``clean`` only ever sees what the test
started, never another run on the same machine.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.hosts import state

pytestmark = pytest.mark.jepsen


def kraftcheck(args, env, timeout=180, **kwargs):
    return subprocess.run([sys.executable, "-m", "kraftcheck.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, **kwargs)


@pytest.fixture
def env(tmp_path):
    environment = dict(os.environ)
    environment["KRAFTCHECK_STATE"] = str(tmp_path / "state")
    environment["KRAFTCHECK_STORE"] = str(tmp_path / "store")
    return environment


def live_pids(state_root):
    """Recorded node pids that are still the same live process."""
    pids = []
    for path in (Path(state_root) / "pids").glob("*.json"):
        record = json.loads(path.read_text())
        if state.same_process_alive(record.get("pid"), record.get("start_time")):
            pids.append(record["pid"])
    return pids


def node_processes_of(run_id):
    """Processes on this machine whose environment names the run (nodes get KRAFTCHECK_RUN_ID)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if f"KRAFTCHECK_RUN_ID={run_id}".encode() in environ.split(b"\0"):
            found.append(int(proc.name))
    return found


def test_harness_killed_mid_run_then_analyze_and_clean(env, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "kraftcheck.cli", "run", "--time-limit", "60", "--nemesis", "kill",
                             "--nemesis-interval", "3", "--no-progress", "--seed", "11"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        store = tmp_path / "store"
        deadline = time.monotonic() + 90
        history = None
        while time.monotonic() < deadline:
            runs = list(store.glob("queue/*/history.jsonl"))
            if runs and sum(1 for _ in open(runs[0])) >= 120:
                history = runs[0]
                break
            assert proc.poll() is None, "the run ended before it could be killed"
            time.sleep(0.5)
        assert history is not None, "the run never got going"
        run_ids = [json.loads(p.read_text())["run_id"] for p in (tmp_path / "state" / "runs").glob("*.json")]
        assert len(run_ids) == 1
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    run_dir = history.parent
    assert not (run_dir / "results.json").exists()
    # the streamed history survived the kill (a torn last line at most)
    lines = history.read_text().splitlines()
    assert len(lines) >= 120

    analyzed = kraftcheck(["analyze", str(run_dir), "--json"], env)
    results = json.loads(analyzed.stdout)
    assert analyzed.returncode == 2, analyzed.stderr  # unknown: no final read proves the acked writes
    assert results["valid"] == "unknown"
    assert any("final read" in note for note in results["harness_notes"])
    assert results["checkers"]["queue"]["valid"] in (True, "unknown")  # nothing contradicts the history
    assert (run_dir / "results.json").is_file() and (run_dir / "report.html").is_file()
    # the node traces and logs the dead harness never collected were recovered from the node directories
    assert "rebuilt trace.jsonl" in analyzed.stderr
    trace = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert trace and {e["node_name"] for e in trace} >= {"controller", "b1", "b2", "b3"}
    assert min(e["time"] for e in trace) >= 0  # rebased onto the history's clock
    assert (run_dir / "nodes" / "b1" / "node.log").stat().st_size > 0

    cleaned = kraftcheck(["clean", "--no-docker"], env)
    assert cleaned.returncode == 0, cleaned.stderr
    time.sleep(0.5)
    assert node_processes_of(run_ids[0]) == []
    assert live_pids(tmp_path / "state") == []
    assert not (run_dir / "node-dirs").exists() or not any((run_dir / "node-dirs").iterdir())
    assert list((tmp_path / "state" / "runs").glob("*.json")) == []


def test_cluster_up_down_and_clean_local(env, tmp_path):
    up = kraftcheck(["cluster", "up", "--backend", "local", "--brokers", "3"], env, timeout=120)
    assert up.returncode == 0, up.stderr
    bootstrap = up.stdout.strip().splitlines()[0].split(",")
    assert len(bootstrap) == 3 and all(b.startswith("127.") and b.endswith(":9092") for b in bootstrap)
    record = json.loads((tmp_path / "state" / "manual-cluster.json").read_text())
    assert len(live_pids(tmp_path / "state")) == 4  # controller + 3 brokers, left running

    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    metadata = producer.send("kraftcheck", b"1", partition=0).get(timeout=20)
    producer.close()
    assert metadata.offset == 0

    status = kraftcheck(["cluster", "status"], env)
    assert status.returncode == 0 and status.stdout.strip() == ",".join(bootstrap)
    again = kraftcheck(["cluster", "up"], env)
    assert again.returncode == 1 and "already running" in again.stderr

    cleaned = kraftcheck(["clean", "--no-docker"], env)
    assert cleaned.returncode == 0, cleaned.stderr
    assert live_pids(tmp_path / "state") == []
    assert node_processes_of(record["run_id"]) == []
    assert not (Path(record["run_dir"]) / "node-dirs").exists()
    assert not (tmp_path / "state" / "manual-cluster.json").exists()
    assert list((tmp_path / "state" / "runs").glob("*.json")) == []
    # the logs stay in the store for later reading
    assert (Path(record["run_dir"]) / "nodes" / "b1" / "node.log").is_file()


def test_clean_after_a_crashed_docker_cluster_keeper(env, tmp_path):
    from kraftcheck.commands.run import docker_problem

    problem = docker_problem()
    if problem:
        pytest.skip(problem)
    import docker

    up = kraftcheck(["cluster", "up", "--backend", "docker", "--brokers", "3"], env, timeout=240)
    assert up.returncode == 0, up.stderr
    record = json.loads((tmp_path / "state" / "manual-cluster.json").read_text())
    client = docker.from_env()
    try:
        label = f"kraftcheck.run={record['run_id']}"
        assert len(client.containers.list(filters={"label": label})) == 4
        assert len(client.networks.list(filters={"label": label})) == 1
        os.kill(record["pid"], signal.SIGKILL)  # the keeper crashes: its containers stay behind
        time.sleep(1)
        assert len(client.containers.list(filters={"label": label})) == 4
        cleaned = kraftcheck(["clean"], env, timeout=180)
        assert cleaned.returncode == 0, cleaned.stderr
        assert client.containers.list(all=True, filters={"label": label}) == []
        assert client.networks.list(filters={"label": label}) == []
        node_dirs = Path(record["run_dir"]) / "node-dirs"
        assert not node_dirs.exists() or list(node_dirs.iterdir()) == []  # every node's data dir is gone
        assert list((tmp_path / "state" / "runs").glob("*.json")) == []
    finally:
        for container in client.containers.list(all=True, filters={"label": f"kraftcheck.run={record['run_id']}"}):
            container.remove(force=True)
        client.close()


def test_sigterm_tears_everything_down_and_still_checks(env, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "kraftcheck.cli", "run", "--time-limit", "60", "--nemesis", "kill",
                             "--nemesis-interval", "3", "--no-progress"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 90
        history = None
        while time.monotonic() < deadline and history is None:
            runs = list((tmp_path / "store").glob("queue/*/history.jsonl"))
            if runs and sum(1 for _ in open(runs[0])) >= 60:
                history = runs[0]
            assert proc.poll() is None, "the run ended before it could be stopped"
            time.sleep(0.5)
        assert history is not None
        run_id = json.loads(next((tmp_path / "state" / "runs").glob("*.json")).read_text())["run_id"]
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode in (1, 2), out  # checked; interrupted runs are never "valid"
    results = json.loads((history.parent / "results.json").read_text())
    assert results["valid"] != True  # noqa: E712
    assert any("interrupted" in note for note in results["harness_notes"])
    assert "replay: kraftcheck run --replay" in out
    # teardown ran in the harness itself: no node process, no run record, no pid file left
    assert node_processes_of(run_id) == []
    assert live_pids(tmp_path / "state") == []
    assert list((tmp_path / "state" / "runs").glob("*.json")) == []
    heals = [json.loads(line) for line in history.read_text().splitlines() if '"heal"' in line]
    assert any(op["type"] == "ok" for op in heals)  # faults were healed on the way out
