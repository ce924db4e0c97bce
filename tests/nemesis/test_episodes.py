"""The historical-bug episodes family: its roles, its draw, and that a broken or skipped episode still heals."""

import random
from types import SimpleNamespace

import pytest

from harness.fault_time import fitted_interval_s
from harness.faults import FAULT_FAMILIES, TARGETED
from nemesis.registry import DRAWERS
from nemesis.targeted.episodes import EpisodesNemesis, episode_roles
from nemesis.targeted.plans import EPISODES, draw_episodes


@pytest.mark.parametrize("seed", range(20))
def test_zombie_follower_is_never_the_lowest_broker(seed):
    a, b, c = episode_roles("zombie-follower", [3, 1, 2], random.Random(seed))
    assert {a, b, c} == {1, 2, 3} and b != 1


def test_roles_are_three_distinct_replicas_or_none():
    for episode in EPISODES:
        roles = episode_roles(episode, [2, 3, 1], random.Random(0))
        assert sorted(roles) == [1, 2, 3]
        assert episode_roles(episode, [1, 2], random.Random(0)) is None
    with pytest.raises(ValueError):
        episode_roles("nonsense", [1, 2, 3], random.Random(0))


def test_every_turn_plays_all_three_with_the_elr_episode_last():
    assert DRAWERS["episodes"] is draw_episodes
    f, value = draw_episodes(random.Random(5))
    assert f == "episodes" and value["episodes"] == ["zombie-follower", "fast-failover", "elr-slip"]
    row = FAULT_FAMILIES["episodes"]
    assert row.targeted and row.heal is None and row.within_op == ("episodes",) and "episodes" in TARGETED


def test_targeted_still_fits_five_minutes():
    assert fitted_interval_s(TARGETED, 300) == 5.0


class FakeNet:
    """Records the heals asked of the member's rules."""

    def __init__(self):
        self.heals = 0

    def heal_all(self, run):
        self.heals += 1
        return {"effective": True}


def fake_run(partitions):
    """A run whose cluster answers Metadata with ``partitions`` (a callable, to fail on demand)."""
    cluster = SimpleNamespace(partitions=lambda topic: partitions(), restart_node=lambda node: 42)
    return SimpleNamespace(cluster=cluster, spec=SimpleNamespace(topic="queue"))


def test_no_full_isr_skips_every_episode_and_still_heals():
    nemesis = EpisodesNemesis(wait_timeout_s=0.0)
    nemesis.net = FakeNet()
    run = fake_run(lambda: {0: {"leader": 1, "replicas": [1, 2, 3], "isr": [1, 2]}})
    done = nemesis.invoke(run, {"f": "episodes", "value": {"pick": 1}})
    played = done["value"]["played"]
    assert [p["episode"] for p in played] == list(EPISODES)
    assert all(p["skipped"] == "no partition with a full ISR" and not p["effective"] for p in played)
    assert done["value"]["effective"] is False and nemesis.net.heals == 3


def test_a_broken_step_is_evidence_and_the_nodes_it_stopped_restart():
    nemesis = EpisodesNemesis()
    nemesis.net = FakeNet()
    nemesis.down = {"b2"}  # as if the ELR episode had stopped b2 when Metadata broke

    def broken():
        raise ConnectionError("no broker answers")

    done = nemesis.invoke(fake_run(broken), {"f": "episodes", "value": {"episodes": ["elr-slip"]}})
    (played,) = done["value"]["played"]
    assert played["error"].startswith("ConnectionError") and played["effective"] is False
    assert played["healed"]["started"] == {"b2": 42} and nemesis.down == set()


def test_an_admin_call_is_asked_once_more_on_a_fresh_client():
    nemesis = EpisodesNemesis()
    calls, teardowns = [], []
    nemesis.admin = SimpleNamespace(teardown=lambda run: teardowns.append(run))

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("bound to a restarted broker")
        return {0: None}

    assert nemesis._ask(None, flaky) == {0: None} and len(teardowns) == 1

    def broken():
        raise KeyError("always")

    assert nemesis._ask(None, broken) == "KeyError: 'always'" and len(teardowns) == 3
