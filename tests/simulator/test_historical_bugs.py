"""The designs Kafka replaced (``--inject-bug``, docs/historical-bugs.md) are found by the simulator.

Each stored schedule is the shrunk finding of ``kraftcheck simulate --inject-bug NAME --variant kip966
--seed 0`` (tests/simulator/historical_bugs/NAME.json): replayed with the switch it breaks the rule it broke
then; the very same events with the switch off break nothing, so each finding is the old design's doing.
The two episodes that reach the KIP-320 and KIP-279 windows (``simulator.historical_episodes``) are checked on
their own the same way.
"""

from __future__ import annotations

import os
import random

import pytest

from reference_impl.protocol.historical_bugs import HISTORICAL_BUGS
from simulator import SimOptions, run_schedule
from simulator.cli import main as simulate_main
from simulator.historical_episodes import EPISODE_SHARE, historical_episode_events
from simulator.schedule import Schedule, generate

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "historical_bugs")


def _stored(name: str) -> Schedule:
    with open(os.path.join(HERE, f"{name}.json"), encoding="utf-8") as fh:
        return Schedule.from_json(fh.read())


@pytest.mark.parametrize("name", sorted(HISTORICAL_BUGS))
def test_the_stored_schedule_breaks_its_rule_only_with_the_switch(name):
    schedule = _stored(name)
    assert schedule.options.inject_bug == name and schedule.options.variant == "kip966"
    found = run_schedule(schedule).finding
    assert found is not None and found.rule == schedule.found["rule"]
    clean = Schedule(schedule.seed, schedule.options.with_(inject_bug=None), schedule.events)
    assert run_schedule(clean).finding is None


def test_a_replay_names_the_bug_and_its_kip(capsys):
    path = os.path.join(HERE, "truncate-to-hwm.json")
    assert simulate_main(["--replay", path]) == 1
    out = capsys.readouterr().out
    assert "injected bug truncate-to-hwm (KIP-101" in out


def _episode_seeds(kind: str, count: int) -> list[int]:
    """Seeds whose schedule draws the given episode (``zombie`` or ``fast``)."""
    seeds = []
    for seed in range(1000):
        draw = random.Random(f"{seed}:historical-episode").random()
        if (draw < EPISODE_SHARE) == (kind == "zombie") and draw < 2 * EPISODE_SHARE:
            seeds.append(seed)
        if len(seeds) == count:
            return seeds
    raise AssertionError("too few episodes drawn")


@pytest.mark.parametrize(("bug", "kind"), [("fetch-without-leader-epoch", "zombie"),
                                           ("kip279-fast-failover-divergence", "fast")])
def test_each_episode_alone_finds_its_bug_and_leaves_the_correct_core_clean(bug, kind):
    for seed in _episode_seeds(kind, 3):
        events = tuple(sorted(historical_episode_events(seed, SimOptions()), key=lambda e: e["at"]))
        broken = run_schedule(Schedule(seed, SimOptions(variant="kip966", inject_bug=bug), events)).finding
        assert broken is not None and broken.rule in ("I4", "I16", "core", "L8"), (seed, broken)
        assert run_schedule(Schedule(seed, SimOptions(variant="kip966"), events)).finding is None


def test_episodes_need_reassignments_and_elections_and_come_in_about_two_schedules_of_five():
    options = SimOptions()
    without = options.with_(faults=tuple(f for f in options.faults if f != "elect"))
    assert not any(historical_episode_events(s, without) for s in range(50))
    drawn = [s for s in range(200) if historical_episode_events(s, options)]
    assert 20 <= len(drawn) <= 60  # about one in five
    seed = drawn[0]
    assert all(e in generate(seed, options).events for e in historical_episode_events(seed, options))
