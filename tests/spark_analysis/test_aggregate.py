"""Store aggregation by Spark vs the same numbers computed in plain Python from the same files."""

import json
from collections import defaultdict

import pandas as pd
import pytest

from checkers.queue import SPARK_KINDS as KINDS
from checkers.queue import queue_anomalies
from harness.history import pair_ops
from spark_analysis.aggregate import aggregate_store, fault_mix
from spark_analysis.intervals import fault_intervals, state_at

from .store_fixture import RUNS, build_store

pytestmark = pytest.mark.slow  # one Spark pass over four runs: about a minute, minutes on a busy machine


def _expected(written):
    """Availability, recovery and anomaly counts per run computed directly (pair_ops + intervals)."""
    meta = {}
    for test, stamp, nemesis, variant, *_ in RUNS:
        meta[(test, stamp)] = (fault_mix(nemesis), variant)
    avail = defaultdict(lambda: {"ops": 0, "ok": 0, "fail": 0, "info": 0, "lat": []})
    rec = defaultdict(list)
    anomalies = {}
    for run_dir, ops in written.items():
        test, stamp = run_dir.split("/")[-2:]
        mix, variant = meta[(test, stamp)]
        end = max(op["time"] for op in ops)
        ivs, heals = fault_intervals([op for op in ops if op["process"] == "nemesis"], end)
        pairs, _ = pair_ops([op for op in ops if op["process"] != "nemesis"])
        for inv, comp in pairs:
            typ = comp["type"] if comp else "info"
            cell = avail[(mix, variant, state_at(ivs, inv["time"]), inv["f"])]
            cell["ops"] += 1
            cell[typ] += 1
            if typ == "ok":
                cell["lat"].append(comp["time"] - inv["time"])
        for h in heals:
            done = [c["time"] for i, c in pairs if c and c["type"] == "ok" and i["time"] >= h]
            rec[(mix, variant)].append(min(done) - h if done else None)
        anomalies[run_dir] = {k: len(v) for k, v in queue_anomalies(ops, {"cycles": False}).items() if k in KINDS}
    return avail, rec, anomalies


@pytest.mark.parametrize("columnar", [False, True])
def test_aggregate_matches_a_direct_computation(spark, tmp_path, columnar):
    written = build_store(tmp_path / "store", n_ops=120)
    if columnar:  # half the runs with a columnar history (the torn one among them), read by one job
        from checkers.history.parquet import write_history_parquet

        for run_dir in sorted(written)[::2] + [d for d in written if "/lrs/" in d]:
            write_history_parquet(f"{run_dir}/history.jsonl", force=True)
    out = tmp_path / "agg"
    summary = aggregate_store(spark, tmp_path / "store", out)
    avail, rec, anomalies = _expected(written)

    runs = pd.read_parquet(out / "runs.parquet").set_index("run_dir")
    assert summary["runs"] == len(runs) == 4
    for run_dir in written:
        row = runs.loc[run_dir]
        assert {k: int(row[k]) for k in KINDS if row[k]} == {k: n for k, n in anomalies[run_dir].items() if n}
    lrs = runs.loc[[d for d in written if "/lrs/" in d][0]]
    assert lrs["malformed"] == 1 and lrs["verdict"] == "missing" and lrs["fault_mix"] == "none"
    assert sorted(runs["verdict"]) == ["invalid", "missing", "valid", "valid"]

    got = pd.read_parquet(out / "availability.parquet")
    assert len(got) == len(avail)
    for r in got.itertuples():
        cell = avail[(r.fault_mix, r.variant, r.state, r.f)]
        assert r.ops == cell["ops"]
        assert r.ok_rate == pytest.approx(cell["ok"] / cell["ops"])
        assert r.info_rate == pytest.approx(cell["info"] / cell["ops"])
        assert r.fail_rate == pytest.approx(cell["fail"] / cell["ops"])
        if cell["lat"]:
            assert r.max_ms == pytest.approx(max(cell["lat"]) / 1e6)
            assert min(cell["lat"]) / 1e6 <= r.p50_ms <= max(cell["lat"]) / 1e6
    assert {r.state for r in got.itertuples()} == {"fault", "healthy"}

    recovery = pd.read_parquet(out / "recovery.parquet")
    for r in recovery.itertuples():
        values = rec[(r.fault_mix, r.variant)]
        assert r.heals == len(values)
        assert r.never_recovered == sum(v is None for v in values)
        assert r.max_ms == pytest.approx(max(v for v in values if v is not None) / 1e6)

    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["by_mix"] == summary["by_mix"] and (out / "by_mix.csv").exists()
