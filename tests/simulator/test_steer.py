"""Steered episodes (``simulator.steer``): aimed at the guard table, drawn beside the random events from the
same seed, valid, replayable, limited to the fault kinds asked for; kind-filtered link faults."""

from __future__ import annotations

import random

from reference_impl.protocol.raft.messages import FetchRequest, VoteRequest
from simulator import SimOptions, generate, run_schedule
from simulator import steer as steer_module
from simulator.guard_report import quorum_guard
from simulator.guards import core_guards
from simulator.network import LinkFault, Message, Network
from simulator.schedule import Schedule
from simulator.world import traffic_kind


def _steered_seeds(options: SimOptions, count: int = 40) -> list[int]:
    return [s for s in range(count) if len(generate(s, options).events) > len(generate(s, options.with_(steer=0.0)).events)]


def test_steering_adds_events_beside_the_random_ones():
    options = SimOptions(variant="kip966")
    steered = _steered_seeds(options)
    assert 8 <= len(steered) <= 32                       # about half the seeds at the default share
    for seed in steered[:5]:
        plain = list(generate(seed, options.with_(steer=0.0)).events)
        events = list(generate(seed, options).events)
        remaining = list(events)
        for e in plain:                                  # every random event is still there, in order
            remaining.remove(e)
        assert remaining                                 # and the steered ones besides
        assert [e for e in events if e in plain] == plain
    assert all(generate(s, options).events == generate(s, options.with_(steer=0.0)).events
               for s in range(40) if s not in steered)


def test_steered_schedules_are_valid_and_replay_identically():
    options = SimOptions(variant="kip966")
    for seed in _steered_seeds(options, 12)[:3]:
        schedule = generate(seed, options)
        again = Schedule.from_json(schedule.to_json())   # validated as a file is
        assert again.events == schedule.events
        first = run_schedule(schedule, keep_trace=True)
        second = run_schedule(again, keep_trace=True)
        assert (first.trace, first.ops, first.steps) == (second.trace, second.ops, second.steps)
        assert first.finding is None


def test_every_guard_in_scope_is_aimed_at():
    for quorum in (False, True):
        guards, kinds, weights = steer_module.aims(quorum)
        expected = [g for g in core_guards() if quorum or not quorum_guard(g)]
        assert list(guards) == expected
        assert all(k for k in kinds) and all(w > 0 for w in weights)
        assert all(not set(steer_module.QUORUM_KINDS) & set(k) for k in kinds) or quorum


def test_a_guard_the_calibration_never_saw_is_aimed_at_too(monkeypatch):
    monkeypatch.setattr(steer_module, "calibration", lambda: {"schedules": 0, "guards": {}, "functions": {}})
    steer_module.aims.cache_clear()
    try:
        guards, kinds, weights = steer_module.aims(False)
        assert len(guards) == len([g for g in core_guards() if not quorum_guard(g)])
        assert set(kinds) == {tuple(k for k in steer_module.ALL_KINDS if k not in steer_module.QUORUM_KINDS)}
        assert set(weights) == {1.0}
    finally:
        steer_module.aims.cache_clear()


def test_rarely_fired_guards_weigh_more():
    guards, _, weights = steer_module.aims(False)
    data = steer_module.calibration()
    fired = {name: entry["fired"] for name, entry in data["guards"].items()}
    never = [w for g, w in zip(guards, weights, strict=True) if g.name not in fired]
    often = [w for g, w in zip(guards, weights, strict=True) if fired.get(g.name, 0) > data["schedules"]]
    assert never and often and min(never) > max(often)


def test_steering_keeps_to_the_fault_kinds_asked_for():
    options = SimOptions(variant="kip966", faults=("crash",), steer=1.0)
    for seed in range(10):
        for e in generate(seed, options).events:
            assert e["do"] in ("produce", "poll", "offsets", "crash", "restart"), e
    assert generate(0, SimOptions(faults=(), steer=1.0)).events == generate(0, SimOptions(faults=(), steer=0.0)).events


def test_a_link_fault_with_kinds_touches_only_those_requests():
    net = Network(random.Random(1))
    net.set_fault(1, 2, LinkFault(drop=1.0, dup=0.0, delay=0, kinds=frozenset({"fetch"})))
    assert all(net.delays(1, 2, "fetch") == [] for _ in range(20))
    assert all(len(net.delays(1, 2, "heartbeat")) == 1 for _ in range(20))
    net.set_fault(1, 2, LinkFault(drop=1.0, dup=0.0, delay=0))
    assert net.delays(1, 2, "heartbeat") == []


def test_votes_are_a_part_of_the_quorums_traffic():
    vote = Message(1001, 1002, "raft", VoteRequest(1001, 3, 2, 10), 1)
    fetch = Message(1001, 1002, "raft", FetchRequest(1001, 3, 10, 2), 2)
    assert (traffic_kind(vote), traffic_kind(fetch)) == ("vote", "raft")
    net = Network(random.Random(1))
    net.set_fault(1001, 1002, LinkFault(drop=1.0, dup=0.0, delay=0, kinds=frozenset({"raft"})))
    assert net.delays(1001, 1002, "vote") == [] and net.delays(1001, 1002, "raft") == []  # raft covers votes
    net.set_fault(1001, 1002, LinkFault(drop=1.0, dup=0.0, delay=0, kinds=frozenset({"vote"})))
    assert net.delays(1001, 1002, "vote") == [] and len(net.delays(1001, 1002, "raft")) == 1


def test_an_episode_aimed_at_votes_slows_them_on_every_voter_link_while_the_active_controller_restarts():
    options = SimOptions(variant="kip966", controllers=3)
    voters = [1001, 1002, 1003]
    for seed in range(6):
        events = steer_module._aim(random.Random(seed), "vote", 1000, 2000, options, [1, 2, 3], voters, 100)
        links = {(e["a"], e["b"]) for e in events if e["do"] == "link"}
        assert links == {(1001, 1002), (1001, 1003), (1002, 1003)}
        assert all(e["kinds"] == ["vote"] for e in events if e["do"] == "link")
        crashes = [e for e in events if e["do"] in ("crash", "restart")]
        assert all(e["node"] == "active" and e["episode"] == 100 for e in crashes)
    assert steer_module.aims(False)[1] and all("vote" not in k for k in steer_module.aims(False)[1])


def test_the_leader_target_acts_on_the_partition_leader():
    base = generate(0, SimOptions(variant="kip966", steer=0.0, produces=4, polls=0, faults=()))
    schedule = base.with_events([{"at": 100, "do": "crash", "node": "leader", "lossy": False, "episode": 100},
                                 {"at": 150, "do": "produce", "key": 0},
                                 {"at": 1500, "do": "restart", "node": "leader", "episode": 100}])
    result = run_schedule(schedule, keep_trace=True)
    assert result.finding is None
    crashed = [e for e in result.trace if e.get("kind") == "role" and e.get("role") == "leader"]
    assert len({e["node"] for e in crashed}) >= 2         # the first leader was killed: another one took over


def test_the_calibration_file_knows_every_guarded_function_a_search_runs():
    # a guard added in a new function must be calibrated (python -m simulator.steer_calibrate) so that it
    # is aimed at through its own request kinds rather than through its module's
    from simulator.guard_count import GuardCounter, counting

    counter = GuardCounter(core_guards())
    with counting(counter):
        for seed in range(4):
            run_schedule(generate(seed, SimOptions(variant="kip966", steer=0.0)))
    known = steer_module.calibration()["functions"]
    assert counter.calls and set(counter.calls) <= set(known), sorted(set(counter.calls) - set(known))
