"""Issue 5's acceptance run: 5 minutes of mixed faults (power loss on at most one node at a time) on the
reference implementation with RF 3, MinISR 2 and KIP-966 on must end valid, every fault proven."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.jepsen, pytest.mark.slow]


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_five_minute_mixed_fault_run_is_valid(tmp_path, backend):
    if backend == "docker":
        from harness.image import ImageError, docker_client

        try:
            docker_client()
        except ImageError as exc:
            pytest.skip(str(exc))
    if os.geteuid() != 0 and backend == "local":
        pytest.skip("partitions and FUSE on the local backend need root")
    env = dict(os.environ, KRAFTCHECK_STATE=str(tmp_path / "state"))
    argv = [sys.executable, "-m", "kraftcheck.cli", "run", "--backend", backend, "--nemesis", "all",
            "--nemesis-interval", "8", "--time-limit", "300", "--seed", "20261122", "--replication-factor", "3",
            "--min-isr", "2", "--variant", "kip966", "--store", str(tmp_path / "store"), "--no-progress"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, check=False)
    results_path = next(Path(tmp_path / "store").rglob("results.json"))
    results = json.loads(results_path.read_text())
    coverage = results["coverage"]
    assert all(row["effective"] > 0 for row in coverage.values()), coverage
    # Power loss hits one node at a time: at most one fault is active and disk targets one node.
    history = [json.loads(line) for line in (results_path.parent / "history.jsonl").read_text().splitlines()]
    assert all(len(op["value"]["nodes"]) <= 1 for op in history
               if op.get("f") == "power-loss" and op["type"] == "ok")
    assert results["valid"] is True, (done.stderr[-3000:], {k: v.get("valid") for k, v in results["checkers"].items()})
    assert done.returncode == 0
