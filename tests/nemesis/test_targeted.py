"""Targeted faults, pure parts: the mix, the schedule, trace triggers, the tail, cut edges, churn plans."""

import json
import random

import pytest

from harness.faults import HEALED_BY, MIXES, TARGETED, fault_timeline, requested_families
from nemesis.registry import build_package
from nemesis.targeted.churn import plan_churn
from nemesis.targeted.cuts import cut_edges
from nemesis.targeted.plans import CHURNS, CUTS, draw_strike
from nemesis.targeted.tail import TraceTail
from nemesis.targeted.triggers import Leaders, match


def test_targeted_mix_is_its_families_and_all_includes_them():
    assert requested_families("targeted") == list(TARGETED) == ["crash-lossy", "strike", "churn", "cut", "strand",
                                                                  "episodes"]
    assert set(TARGETED) <= set(requested_families("all")) == set(MIXES["all"])
    assert requested_families("kill,targeted") == ["kill", *TARGETED]


def test_targeted_package_members_and_first_round():
    pkg = build_package("targeted", seed=3)
    assert set(pkg.nemesis.members) == {"lossy", "strike", "churn", "cut", "strand", "episodes"}
    fs = [op["f"] for _, op in pkg.schedule.take(14)]
    # the first round: every family once, each lasting fault followed by its heal
    assert {"crash-lossy", "strike", "churn", "start-cut", "strand", "episodes"} <= set(fs)
    for i, f in enumerate(fs[:-1]):
        if f == "strike":
            assert fs[i + 1] == "end-strike"
        if f == "start-cut":
            assert fs[i + 1] == "stop-cut"
    assert fs == [op["f"] for _, op in build_package("targeted", seed=3).schedule.take(14)]


def test_lossy_member_stands_in_for_disk():
    pkg = build_package("disk,crash-lossy", seed=1)
    assert set(pkg.nemesis.members) == {"lossy"}
    assert {"power-loss", "lose-unsynced", "crash-lossy"} <= pkg.nemesis.fs()
    assert type(build_package("disk", seed=1).nemesis.members["disk"]).__name__ == "DiskNemesis"


def test_strike_and_cut_intervals_end_at_their_heals():
    s = 1_000_000_000
    ops = [
        {"time": 1 * s, "type": "invoke", "f": "strike"}, {"time": 2 * s, "type": "ok", "f": "strike"},
        {"time": 5 * s, "type": "invoke", "f": "end-strike"}, {"time": 6 * s, "type": "ok", "f": "end-strike"},
        {"time": 7 * s, "type": "invoke", "f": "crash-lossy"}, {"time": 9 * s, "type": "ok", "f": "crash-lossy"},
        {"time": 10 * s, "type": "invoke", "f": "start-cut"}, {"time": 11 * s, "type": "ok", "f": "start-cut"},
        {"time": 12 * s, "type": "invoke", "f": "stop-cut"}, {"time": 13 * s, "type": "ok", "f": "stop-cut"},
    ]
    spans = [(i.start // s, i.end // s, i.f) for i in fault_timeline(ops, 20 * s).intervals]
    assert spans == [(1, 6, "strike"), (7, 9, "crash-lossy"), (10, 13, "start-cut")]
    assert HEALED_BY["end-strike"] == {"strike"} and "strike" in HEALED_BY["heal"]


def test_triggers_match_their_moments_only():
    leaders = Leaders()
    grow = {"kind": "isr_proposed", "topic": "q", "partition": 0, "replica": 1, "isr": [1, 2], "proposed": [1, 2, 3]}
    shrink = {**grow, "isr": [1, 2, 3], "proposed": [1, 2]}
    moment = match("isr-expand", grow, leaders)
    assert (moment.leader, moment.joining) == (1, 3)
    assert match("isr-expand", shrink, leaders) is None
    assert match("leader-epoch", grow, leaders) is None
    step = {"kind": "metadata_applied", "topic": "q", "partition": 0, "leader": 2, "adding": [3], "removing": []}
    assert match("reassignment", step, leaders)[3:] == (2, 3)
    assert match("reassignment", {**step, "adding": []}, leaders) is None
    leaders.see({"kind": "leader_epoch_start", "topic": "q", "partition": 0, "replica": 2})
    truncate = {"kind": "truncate", "topic": "q", "partition": 0, "replica": 3}
    assert match("truncate", truncate, leaders)[3:] == (2, 3)
    with pytest.raises(ValueError):
        match("nonsense", truncate, leaders)


def test_tail_returns_only_new_complete_lines(tmp_path):
    path = tmp_path / "trace.jsonl"
    event = {"time": 1, "kind": "isr_proposed", "replica": 1}
    path.write_text(json.dumps({"time": 0, "kind": "hwm"}) + "\n" + json.dumps(event, separators=(",", ":")) + "\n")
    tail = TraceTail({"b1": str(path)}, ["isr_proposed"])
    assert [e["kind"] for e in tail.poll()] == ["isr_proposed"]  # hwm filtered out before parsing
    assert tail.poll() == []
    with open(path, "a") as fh:
        fh.write('{"time":2,"kind":"isr_proposed"')  # half a line: not yet
    assert tail.poll() == []
    with open(path, "a") as fh:
        fh.write("}\n")
    assert [(e["time"], e["node_name"]) for e in tail.poll()] == [(2, "b1")]
    tail.skip_to_end()
    assert tail.poll() == []


def test_cut_edges():
    assert cut_edges("controller-only", "b1", "b2", "controller") == {("b1", "controller"), ("controller", "b1")}
    assert cut_edges("follower-controller", "b1", "b2", "controller") == {("b2", "controller"), ("controller", "b2")}
    assert cut_edges("leader-to-follower", "b1", "b2", "controller") == {("b1", "b2")}
    assert cut_edges("follower-to-leader", "b1", "b2", "controller") == {("b2", "b1")}
    assert cut_edges("leader-to-follower", "b1", None, "controller") == set()
    assert set(CUTS) == {"controller-only", "follower-controller", "leader-to-follower", "follower-to-leader"}


@pytest.mark.parametrize("kind", CHURNS)
def test_churn_plans_end_where_they_began(kind):
    steps, moved = plan_churn(kind, [1, 2, 3], 1, [1, 2, 3], random.Random(0))
    assert sorted(steps[-1]) == [1, 2, 3] and moved not in steps[0]
    if kind in ("shrink-grow", "grow-shrink"):
        assert moved == 1  # the leader leaves (no broker outside the set to grow into)
    else:
        assert moved in (2, 3)


def test_churn_grows_into_a_free_broker():
    steps, moved = plan_churn("grow-shrink", [1, 2], 1, [1, 2, 3], random.Random(0))
    assert steps == [[1, 2, 3], [1, 2]] and moved == 3
    assert plan_churn("remove-readd", [1], 1, [1, 2], random.Random(0)) == ([], None)


def test_strike_draws_are_seeded_and_sensible():
    draws = [draw_strike(random.Random(i))[1] for i in range(50)]
    assert draws == [draw_strike(random.Random(i))[1] for i in range(50)]
    assert {d["trigger"] for d in draws} == {"isr-expand", "leader-epoch", "reassignment", "truncate"}
    assert all(d["victim"] in ("leader", "joining", "controller") for d in draws)


def test_churn_asks_again_on_a_fresh_admin_client_while_a_call_fails(monkeypatch):
    from nemesis.targeted import churn as churn_module

    class FlakyAdmin:
        """Fails like a client still connected to a killed broker, then answers."""

        def __init__(self, failures):
            self.failures, self.teardowns = failures, 0

        def describe(self, run, topic):
            if self.failures:
                self.failures -= 1
                raise ConnectionError("socket disconnected")
            return {0: {"replicas": [1, 2, 3]}}

        def teardown(self, run):
            self.teardowns += 1

    monkeypatch.setattr(churn_module.time, "sleep", lambda s: None)
    nemesis = churn_module.ChurnNemesis()
    nemesis.admin = FlakyAdmin(failures=2)
    assert nemesis._ask(None, "describe", "queue") == {0: {"replicas": [1, 2, 3]}}
    assert nemesis.admin.teardowns == 2
    monkeypatch.setattr(churn_module, "ASK_TIMEOUT_S", 0.0)
    nemesis.admin = FlakyAdmin(failures=5)
    with pytest.raises(ConnectionError):
        nemesis._ask(None, "describe", "queue")
