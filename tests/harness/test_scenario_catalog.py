"""Fast tests of the scenario catalog's pure parts: the registry, trace reading, the check/verdict helpers,
KIP-435 step reconstruction and a judge run on hand-built traces (no cluster)."""

import pytest

from harness.spec import RunSpec
from kraftcheck import scenarios
from kraftcheck.scenarios import checks, observe, reassign_examples, reassign_incremental
from kraftcheck.scenarios.base import Scenario

SEEDS = ("seed 000", "seed 001", "seed 002", "seed 003", "seed 004")


def test_every_scenario_names_its_seed_section_and_an_expectation_per_variant():
    every = scenarios.all_scenarios()
    assert len(every) >= 13
    for s in every:
        assert s.reproduces and s.recipe and s.summary and s.script and s.judge
        assert set(s.expected) == set(s.variants) == {"v3.5", "kip966"}
        assert s.spec_options["test_name"] == s.name
    covered = " ".join(s.reproduces for s in every)
    assert all(seed in covered for seed in SEEDS)
    assert [s.name for s in every if "expected-failure" in s.expected.values()] == ["last-replica-standing"]
    assert scenarios.get("kip-860").name == "reassign-rf-guard" and scenarios.get("seed-001").name == "reassign-phase-ab"


def test_a_scenario_without_an_expected_outcome_per_variant_is_refused():
    with pytest.raises(ValueError, match="no expected outcome"):
        Scenario("x", "s", "r", "recipe", ("v3.5", "kip966"), {"v3.5": "valid"})


# -- trace reading ------------------------------------------------------------------------------------------

T = "t"


def state(time, replicas, isr, leader=1, le=0, pe=0, adding=(), removing=(), elr=()):
    return {"time": time, "kind": "metadata_applied", "source": "controller", "topic": T, "partition": 0,
            "replicas": list(replicas), "isr": list(isr), "leader": leader, "leader_epoch": le,
            "partition_epoch": pe, "adding": list(adding), "removing": list(removing), "elr": list(elr),
            "last_known_elr": [], "offset": time}


def test_controller_states_keep_the_committed_replica_order_and_sort_the_sets():
    [s] = observe.controller_states([state(5, [1, 2, 4, 3], [2, 1], adding=[4], removing=[3])], T, 0)
    assert s["replica_order"] == [1, 2, 4, 3] and s["replicas"] == [1, 2, 3, 4] and s["isr"] == [1, 2]
    assert observe.describe_assignment(s) == "RS [1, 2, 4, 3] AR [4] RR [3] leader 1 ISR [1, 2] LE 0 PE 0"
    assert observe.describe_state(s).startswith("replicas [1, 2, 4, 3] adding [4] removing [3] leader 1")
    assert [x["time"] for x in observe.states_between([state(1, [1], [1]), state(2, [1], [1]), state(3, [1], [1])],
                                                      T, 0, after=2, before=3)] == [2]


def test_events_refusals_epochs_and_replica_events():
    events = [
        {"time": 1, "kind": "registered", "source": "controller", "broker": 3, "broker_epoch": 2},
        {"time": 2, "kind": "registration_failed", "broker": 3, "error": "DUPLICATE_BROKER_REGISTRATION"},
        {"time": 3, "kind": "registered", "source": "controller", "broker": 3, "broker_epoch": 9},
        {"time": 4, "kind": "alter_partition_rejected", "source": "controller", "topic": T, "partition": 0,
         "broker": 1, "error": "INELIGIBLE_REPLICA", "message": "3: fenced", "proposed": [[1, -1], [3, 2]]},
        {"time": 5, "kind": "alter_partition_rejected", "source": "controller", "broker": 1,
         "error": "STALE_BROKER_EPOCH", "message": "stale sender broker epoch"},
        {"time": 6, "kind": "log_deleted", "topic": T, "partition": 0, "replica": 3},
    ]
    assert observe.broker_epochs(events, 3) == [2, 9]
    assert [e["time"] for e in observe.events_of(events, "registered", after=2, broker=3)] == [3]
    assert [r["error"] for r in observe.ap_refusals(events, T, 0)] == ["INELIGIBLE_REPLICA"]
    assert [r["error"] for r in observe.ap_refusals(events)] == ["INELIGIBLE_REPLICA", "STALE_BROKER_EPOCH"]
    assert observe.replica_events(events, "log_deleted", T, 0, replica=3)[0]["time"] == 6
    assert observe.replica_events(events, "log_deleted", T, 0, replica=2) == []


# -- checks and verdicts --------------------------------------------------------------------------------------


def test_verdict_is_met_only_when_every_check_passes_and_the_run_is_valid():
    good = [checks.check("a", True, 1, 1, "C1")]
    bad = good + [checks.check("b", False, "x", "y", "C2")]
    met = checks.verdict("s", "kip966", "e", good, {}, {"valid": True})
    assert met["expectation_met"] is True and met["failed_checks"] == []
    assert met["checks"][0] == {"name": "a", "ok": True, "expected": 1, "observed": 1, "rule": "C1"}
    assert checks.verdict("s", "kip966", "e", bad, {}, {"valid": True})["failed_checks"] == ["b"]
    assert checks.verdict("s", "kip966", "e", good, {}, {"valid": "unknown"})["expectation_met"] is False
    assert checks.verdict("s", "kip966", "e", [], {}, {"valid": True})["expectation_met"] is False
    labelled = checks.verdict("s", "v3.5", "e", good, {}, {"valid": True}, label="KNOWN ISSUE")
    assert labelled["label"] == "KNOWN ISSUE" and "KNOWN ISSUE" in labelled["lines"]
    assert checks.verdict("s", "v3.5", "e", bad, {}, {"valid": True}, label="KNOWN ISSUE")["label"] is None


def history(acked, read):
    ops = []
    for i, (o, v) in enumerate(acked):
        ops += [{"type": "invoke", "process": 0, "f": "send", "value": [0, v], "time": 2 * i},
                {"type": "ok", "process": 0, "f": "send", "value": [0, [o, v]], "time": 2 * i + 1}]
    ops.append({"type": "ok", "process": 10_000_000, "f": "poll", "final": True, "value": {"0": read}, "time": 99})
    return ops


def test_no_acked_loss():
    assert checks.no_acked_loss(history([[0, 7], [1, 8]], [[0, 7], [1, 8]])).ok
    lost = checks.no_acked_loss(history([[0, 7], [1, 8]], [[0, 7]]))
    assert not lost.ok and lost.observed["lost"] == [[1, 8]]
    assert not checks.no_acked_loss(history([[0, 7]], [[0, 7]])[:-1]).ok  # no final read


# -- KIP-435 steps ------------------------------------------------------------------------------------------------


def seed_example_states():
    """The controller's states for (1..5) -> (6..10) with R=2, as the seed's example goes (ids + 1)."""
    s = [state(1, [6, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5], adding=[6])]
    s.append(state(2, [6, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6]))
    s.append(state(3, [6, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6], leader=6))  # the preferred leader elected
    s.append(state(4, [6, 7, 3, 4, 5, 1, 2], [1, 2, 3, 4, 5, 6], leader=6, adding=[7], removing=[1, 2]))
    s.append(state(5, [6, 7, 3, 4, 5], [3, 4, 5, 6, 7], leader=6))
    s.append(state(6, [6, 7, 8, 9, 5, 3, 4], [3, 4, 5, 6, 7], leader=6, adding=[8, 9], removing=[3, 4]))
    s.append(state(7, [6, 7, 8, 9, 5], [5, 6, 7, 8, 9], leader=6))
    s.append(state(8, [6, 7, 8, 9, 10, 5], [5, 6, 7, 8, 9], leader=6, adding=[10], removing=[5]))
    s.append(state(9, [6, 7, 8, 9, 10], [6, 7, 8, 9, 10], leader=6))
    return observe.controller_states(s, T, 0)


def test_committed_steps_follow_grow_and_completion_and_see_drop_only_steps():
    steps = reassign_incremental.committed_steps(seed_example_states())
    assert [s["target"] for s in steps] == reassign_incremental.SEED_EXAMPLE
    assert [(s["added"], s["dropped"]) for s in steps] == [([6], []), ([7], [1, 2]), ([8, 9], [3, 4]), ([10], [5])]
    drop_only = observe.controller_states([state(1, [1, 6, 7], [1, 6, 7]), state(2, [1, 7], [1, 7])], T, 0)
    [step] = reassign_incremental.committed_steps(drop_only)
    assert (step["current"], step["target"], step["added"], step["dropped"]) == ([1, 6, 7], [1, 7], [], [6])


def test_phase_checks_pass_the_seed_example_and_catch_a_wrong_batch():
    states = seed_example_states()
    steps = reassign_incremental.committed_steps(states)
    listed = [{"listed": {"adding": [7], "removing": [1, 2], "replicas": []}}]
    good = reassign_incremental.phase_checks(2, reassign_incremental.HIGH, steps, states, listed)
    assert all(c.ok for c in good), [c for c in good if not c.ok]
    wide = reassign_incremental.phase_checks(1, reassign_incremental.HIGH, steps, states, listed)
    assert [c.name for c in wide if not c.ok] == ["R=1 ->[6, 7, 8, 9, 10]: every later step drops and adds at most "
                                                 "R replicas"]
    stray = [{"listed": {"adding": [9], "removing": [1], "replicas": []}}]
    assert not all(c.ok for c in reassign_incremental.phase_checks(2, reassign_incremental.HIGH, steps, states, stray))


# -- a judge on a hand-built trace --------------------------------------------------------------------------------


def move_one(completion_in_one_change):
    """Seed 000 example 1's controller states (reassign invoked at 10), the completion in one or two changes."""
    s = [state(5, [1, 2, 3], [1, 2], pe=1),
         state(11, [1, 2, 4, 3], [1, 2], pe=2, adding=[4], removing=[3])]
    if completion_in_one_change:
        s.append(state(20, [1, 2, 4], [1, 2, 4], le=1, pe=3))
    else:
        s.append(state(20, [1, 2, 4, 3], [1, 2, 4], pe=3, adding=[4], removing=[3]))
        s.append(state(21, [1, 2, 4], [1, 2, 4], le=1, pe=4))
    s.append({"time": 30, "kind": "log_deleted", "topic": T, "partition": 0, "replica": 3})
    ops = [{"type": "invoke", "process": "nemesis", "f": "reassign", "time": 10}] + history([[0, 1]], [[0, 1]])
    steps = [{"step": "grow", "admin_view": {"metadata_replicas": [1, 2, 4, 3],
                                             "listed": {"adding": [4], "removing": [3], "replicas": [1, 2, 4, 3]}}}]
    spec = RunSpec(topic=T, scenario="reassign-move-one", variant="kip966")
    return reassign_examples.judge_move_one(spec, steps, ops, s, {"valid": True})


def test_move_one_judge_passes_the_seed_and_fails_a_two_step_completion():
    assert move_one(True)["expectation_met"] is True
    split = move_one(False)
    assert split["failed_checks"] == ["catch-up and completion are one change: LE+1, PE+1"]
