"""Admin nemesis ``set-reassignment-mode``: seeded values (pure), its place in the admin family's seeded
schedule, and the live switch through kafka-python against the reference cluster (jepsen)."""

import random

import pytest

from nemesis.admin import CLUSTER_DEFAULT_SOURCE, plan_reassignment_config
from nemesis.coverage import F_FAMILY
from nemesis.registry import build_package, families
from nemesis.schedule import Schedule


def test_plan_reassignment_config_kinds():
    inc = plan_reassignment_config("incremental", random.Random(3))
    assert inc["reassignment.mode"] == "incremental" and inc["reassignment.parallel.replica.count"] in ("1", "2")
    assert plan_reassignment_config("all-at-once", random.Random(3)) == {"reassignment.mode": "all-at-once"}
    par = plan_reassignment_config("parallel", random.Random(3))
    assert set(par) == {"reassignment.parallel.replica.count", "reassignment.parallel.partition.count",
                        "reassignment.parallel.leader.movements"} and all(int(v) >= 1 for v in par.values())
    assert plan_reassignment_config("parallel", random.Random(3)) == par  # seeded
    with pytest.raises(ValueError):
        plan_reassignment_config("sometimes", random.Random(3))


def test_admin_schedule_draws_every_reassignment_config_kind():
    ops = [op for _, op in Schedule([families()["admin"]], seed=5).take(200)]
    kinds = {op["value"]["kind"] for op in ops if op["f"] == "set-reassignment-mode"}
    assert kinds == {"incremental", "all-at-once", "parallel"}
    assert F_FAMILY["set-reassignment-mode"] == "admin"


@pytest.mark.jepsen
def test_reassignment_config_switches_live_on_the_reference_cluster(kraftcheck_cluster):
    cluster = kraftcheck_cluster
    run = cluster.run
    run.cluster = cluster
    pkg = build_package("admin", seed=1)
    pkg.setup(run)
    try:
        inc = pkg.execute(run, {"f": "set-reassignment-mode", "value": {"kind": "incremental", "pick": 2}})
        assert inc["type"] == "ok", inc.get("error")
        v = inc["value"]
        assert v["answer"] == "OK" and v["effective"] is True, v
        assert v["configs_after"]["reassignment.mode"] == {"value": "incremental",
                                                            "config_source": CLUSTER_DEFAULT_SOURCE}
        assert "reassignment.mode" not in v["configs_before"]
        back = pkg.execute(run, {"f": "set-reassignment-mode", "value": {"kind": "all-at-once"}})
        assert back["value"]["effective"] is True
        assert back["value"]["configs_before"]["reassignment.mode"]["value"] == "incremental"
        assert back["value"]["configs_after"]["reassignment.mode"]["value"] == "all-at-once"
    finally:
        pkg.teardown(run)
