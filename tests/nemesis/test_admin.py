"""Admin nemesis: reassignment planning (pure) and the real admin API against a reference cluster."""

import random
import time

import pytest

from nemesis.admin import plan_reassignment
from nemesis.registry import build_package


def test_plan_reassignment_kinds():
    rng = random.Random(1)
    target, flag = plan_reassignment("move", [1, 2, 3], [1, 2, 3], rng)
    assert sorted(target) == [1, 2, 3] and target != [1, 2, 3] and flag
    target, _ = plan_reassignment("move", [1, 2], [1, 2, 3, 4], rng)
    assert len(target) == 2 and set(target) - {1, 2} <= {3, 4} and target != [1, 2]
    assert plan_reassignment("grow", [1, 2], [1, 2, 3], rng) == ([1, 2, 3], True)
    assert plan_reassignment("grow-without-flag", [1, 2], [1, 2, 3], rng) == ([1, 2, 3], False)
    assert plan_reassignment("grow", [1, 2, 3], [1, 2, 3], rng) == (None, True)
    target, flag = plan_reassignment("shrink-without-flag", [1, 2, 3], [1, 2, 3], rng)
    assert len(target) == 2 and not flag
    with pytest.raises(ValueError):
        plan_reassignment("explode", [1], [1], rng)


@pytest.mark.jepsen
def test_admin_ops_against_the_reference_cluster(kraftcheck_cluster):
    cluster = kraftcheck_cluster
    run = cluster.run
    run.cluster = cluster
    run.spec["topic"] = "adm"
    cluster.create_topic("adm", 2, 2)
    pkg = build_package("admin", seed=1)
    pkg.setup(run)
    try:
        guard = pkg.execute(run, {"f": "reassign", "value": {"kind": "grow-without-flag", "partition": 0}})
        assert guard["type"] == "ok", guard.get("error")
        assert guard["value"]["error"] == "InvalidReplicationFactorError" and guard["value"]["effective"] is True
        grow = pkg.execute(run, {"f": "reassign", "value": {"kind": "grow", "partition": 0}})
        assert grow["value"]["error"] is None and grow["value"]["effective"] is True, grow["value"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(pkg.nemesis.members["admin"].describe(run, "adm")[0]["replicas"]) != 3:
            time.sleep(0.5)
        assert len(pkg.nemesis.members["admin"].describe(run, "adm")[0]["replicas"]) == 3
        move = pkg.execute(run, {"f": "reassign", "value": {"kind": "move", "partition": 1}})
        assert move["value"]["error"] is None and move["value"]["effective"] is True, move["value"]
        elect = pkg.execute(run, {"f": "elect-preferred", "value": {}})
        assert elect["value"]["effective"] is True and set(elect["value"]["errors"]) == {0, 1}
        cancel = pkg.execute(run, {"f": "cancel-reassignment", "value": {}})
        assert cancel["type"] == "ok" and cancel["value"]["error"] in (None, "NoReassignmentInProgressError")
    finally:
        pkg.teardown(run)
