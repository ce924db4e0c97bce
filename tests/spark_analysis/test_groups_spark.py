"""The consumer-group checks by Spark (spark_analysis.groups) find exactly what the Python checker finds.

Several runs are checked by one job, as a store is: the hand-built histories of tests/checkers (a clean
handover, each of the three anomalies, a transaction reading below the commit), random subscribing runs
with one and two groups, and a history without group ops, read from JSONL and from their columnar form.
The engine's verdict (``--engine spark``) carries the group checker's result as the Python engine does.
"""

import json

import pytest

from checkers.analysis import check_run
from checkers.groups import GROUP_KINDS, GroupChecker
from checkers.groups.checks import find_anomalies
from checkers.groups.extract import by_key, extract
from checkers.history.parquet import write_history_parquet
from spark_analysis import columnar
from spark_analysis.engine import check_run_spark
from spark_analysis.groups import collect, group_parts
from spark_analysis.read import read_jsonl, with_order
from tests.support.groups import FIXTURES, random_group_history, with_final
from tests.support.synth import synth_history

SPEC = {"variant": "kip966", "acks": "all", "nemesis": ["kill"]}
RANDOM = {f"random-{seed}": {"seed": seed, "groups": ("g", "h") if seed % 2 else ("g",)} for seed in range(4)}


def _write(path, ops):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(op) + "\n" for op in ops))
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """run name -> (its history.jsonl, its ops)."""
    root = tmp_path_factory.mktemp("groups-store")
    runs = {name: with_final(build()) for name, (build, _) in FIXTURES.items()}
    runs.update({name: random_group_history(**kw) for name, kw in RANDOM.items()})
    runs["no-groups"] = synth_history(200, seed=5)
    out = {}
    for name, ops in runs.items():
        path = _write(root / name / "history.jsonl", ops)
        write_history_parquet(path)
        out[name] = (path, ops)
    return out


@pytest.mark.parametrize("source", ["jsonl", "parquet"])
def test_spark_finds_every_group_anomaly_python_finds_over_a_store(spark, store, source):
    paths = [str(path) for path, _ in store.values()]
    if source == "jsonl":
        ops = with_order(spark, read_jsonl(spark, paths))
    else:
        ops = columnar.ops(spark, [str(path.with_suffix(".parquet")) for path, _ in store.values()])
    parts = group_parts(ops)
    assert parts is not None
    try:
        found = collect(parts)
    finally:
        parts.unpersist()
    by_name = {run.rsplit("/", 1)[-1]: f for run, f in found.items()}
    assert set(by_name) == set(store) - {"no-groups"}  # a history without group ops gets no group checker
    planted = set()
    for name, (_, history) in store.items():
        if name == "no-groups":
            continue
        steps, tally = extract(history)
        expected = find_anomalies(by_key(steps))
        got = by_name[name]
        assert got.anomalies == json.loads(json.dumps(expected)), name
        assert got.tally.counts() == tally.counts() and got.tally.checked == tally.checked, name
        planted |= {kind for kind, rows in got.anomalies.items() if rows}
        if name in FIXTURES:
            assert [k for k, rows in got.anomalies.items() if rows] == FIXTURES[name][1], name
    assert planted == set(GROUP_KINDS)


def _python_groups(spec, path):
    result = json.loads(json.dumps(check_run(spec, path, options={"linear": False})["checkers"]["groups"]))
    result["counts"]["coordinator_loads"] = None  # the Spark engine reads no trace
    return result


@pytest.mark.parametrize("source", ["jsonl", "parquet"])
def test_the_spark_verdict_names_the_group_anomalies_as_the_python_one(spark, store, source):
    path, _ = store["poll-below-commit"]
    results = check_run_spark(SPEC, str(path), spark=spark, source=source)
    groups = results["checkers"]["groups"]
    assert groups.pop("engine") == "spark"
    assert groups == _python_groups(SPEC, path)
    assert groups["forbidden_found"] == ["poll-below-commit"] and results["valid"] is False


def test_statuses_follow_the_profile_and_histories_without_group_ops_have_no_group_checker(spark, store):
    spec = {**SPEC, "unclean_leader_election": True}
    path, _ = store["commit-regression"]
    groups = check_run_spark(spec, str(path), spark=spark, source="parquet")["checkers"]["groups"]
    groups.pop("engine")
    assert groups == _python_groups(spec, path)
    assert groups["statuses"]["commit-regression"] == "allowed" and groups["valid"] is True
    assert groups["anomaly_counts"]["commit-regression"] == 1

    plain = check_run_spark(SPEC, str(store["no-groups"][0]), spark=spark, source="parquet")
    assert "groups" not in plain["checkers"]
    assert GroupChecker.name not in check_run(SPEC, store["no-groups"][0], options={"linear": False})["checkers"]


@pytest.mark.slow  # the whole aggregation (availability, recovery, both checks) over ten runs: half a minute
def test_a_store_aggregation_counts_the_group_anomalies_of_each_run(spark, store, tmp_path):
    import shutil

    import pandas as pd

    from spark_analysis.aggregate import aggregate_store

    root = tmp_path / "store"
    for i, (name, (path, _)) in enumerate(sorted(store.items())):
        # Half the runs keep their columnar history: the JSONL and the Parquet runs are read by one job.
        shutil.copytree(path.parent, root / "groups" / name,
                        ignore=None if i % 2 else shutil.ignore_patterns("history.parquet"))
    summary = aggregate_store(spark, root, tmp_path / "out")
    runs = pd.read_parquet(tmp_path / "out" / "runs.parquet").set_index("started")
    assert set(GROUP_KINDS) <= set(summary["kinds"])
    for name, (_, history) in store.items():
        steps, _ = extract(history)
        expected = {kind: len(rows) for kind, rows in find_anomalies(by_key(steps)).items()}
        assert {kind: int(runs.loc[name, kind]) for kind in GROUP_KINDS} == expected, name
    assert int(runs.loc["poll-below-commit", "anomalies"]) >= 1
