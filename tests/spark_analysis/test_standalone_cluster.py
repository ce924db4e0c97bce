"""``--master spark://...`` against a REAL standalone master and worker on loopback (slow)."""

import json
import subprocess
import sys

import pytest

from spark_analysis.standalone import standalone_cluster

from .store_fixture import build_store

pytestmark = pytest.mark.slow


def test_aggregate_runs_on_a_standalone_master_and_worker(tmp_path):
    store = tmp_path / "store"
    build_store(store, n_ops=60)
    out = tmp_path / "agg"
    with standalone_cluster(tmp_path / "spark", cores=1, memory="1g", timeout=180) as url:
        proc = subprocess.run([sys.executable, "-m", "spark_analysis", "aggregate", str(store), "--master", url,
                               "--out", str(out), "--shuffle-partitions", "2", "--json"],
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        worker_log = (tmp_path / "spark" / "worker0.log").read_text(errors="replace")
    # The executor ran on the worker, not in the driver: the worker launched it for our application.
    assert "Launching executor" in worker_log or "Asked to launch executor" in worker_log
    summary = json.loads(proc.stdout)
    assert summary["runs"] == 4
    assert {(r["fault_mix"], r["variant"]) for r in summary["by_mix"]} == {
        ("kill", "v3.5"), ("kill", "kip966"), ("kill+partition", "v3.5"), ("none", "v3.5")}
    assert (out / "runs.parquet").exists() and (out / "summary.json").exists()
