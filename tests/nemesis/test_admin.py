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
    # the ops name their topic (the spec's is the run's own, and a spec never changes mid-run)
    cluster.create_topic("adm", 2, 2)
    pkg = build_package("admin", seed=1)
    pkg.setup(run)
    try:
        guard = pkg.execute(run, {"f": "reassign", "value": {"kind": "grow-without-flag", "partition": 0, "topic": "adm"}})
        assert guard["type"] == "ok", guard.get("error")
        assert guard["value"]["error"] == "InvalidReplicationFactorError" and guard["value"]["effective"] is True
        grow = pkg.execute(run, {"f": "reassign", "value": {"kind": "grow", "partition": 0, "topic": "adm"}})
        assert grow["value"]["error"] is None and grow["value"]["effective"] is True, grow["value"]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(pkg.nemesis.members["admin"].describe(run, "adm")[0]["replicas"]) != 3:
            time.sleep(0.5)
        assert len(pkg.nemesis.members["admin"].describe(run, "adm")[0]["replicas"]) == 3
        move = pkg.execute(run, {"f": "reassign", "value": {"kind": "move", "partition": 1, "topic": "adm"}})
        assert move["value"]["error"] is None and move["value"]["effective"] is True, move["value"]
        elect = pkg.execute(run, {"f": "elect-preferred", "value": {"topic": "adm"}})
        assert elect["value"]["effective"] is True and set(elect["value"]["errors"]) == {0, 1}
        cancel = pkg.execute(run, {"f": "cancel-reassignment", "value": {"topic": "adm"}})
        assert cancel["type"] == "ok" and cancel["value"]["error"] in (None, "NoReassignmentInProgressError")
    finally:
        pkg.teardown(run)


def test_an_impossible_rf_change_is_made_elsewhere_or_mirrored():
    from nemesis.admin import AdminNemesis

    rng = random.Random(2)
    full = {0: {"replicas": [1, 2, 3]}, 1: {"replicas": [3, 1, 2]}}
    # a grow on a cluster whose partitions hold every broker: the shrink, with the same flag
    partition, kind, target, flag = AdminNemesis._possible_instead(full, 1, "grow-without-flag", [1, 2, 3], rng)
    assert (partition, kind, flag) == (1, "shrink-without-flag", False) and len(target) == 2
    # a grow possible on another partition: that partition, the same kind
    mixed = {0: {"replicas": [1, 2, 3]}, 1: {"replicas": [2, 3]}}
    partition, kind, target, flag = AdminNemesis._possible_instead(mixed, 0, "grow", [1, 2, 3], rng)
    assert (partition, kind, flag, target) == (1, "grow", True, [2, 3, 1])
    # nothing possible anywhere: reported as impossible
    single = {0: {"replicas": [1]}}
    assert AdminNemesis._possible_instead(single, 0, "move", [1], rng)[2] is None


def test_an_empty_metadata_answer_is_asked_again(monkeypatch):
    from nemesis import admin as admin_module
    from nemesis.admin import AdminNemesis

    nemesis = AdminNemesis()
    answers = [{}, {}, {0: {"replicas": [1, 2], "isr": [1, 2], "leader": 1}}]
    monkeypatch.setattr(nemesis, "describe", lambda run, topic, admin=None: answers.pop(0) if answers else {})
    assert nemesis.described(None, "t") == {0: {"replicas": [1, 2], "isr": [1, 2], "leader": 1}}
    # still empty after the timeout: empty (the op then fails with its error)
    monkeypatch.setattr(admin_module, "DESCRIBE_TIMEOUT_S", 0.6)
    assert nemesis.described(None, "t") == {}
