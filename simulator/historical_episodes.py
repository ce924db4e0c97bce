"""Fault episodes that reach the windows of two bugs Kafka shipped, drawn beside the random ones.

Two of the designs Kafka replaced (``reference_impl.protocol.historical_bugs``) lose data only when several
things line up that random episodes almost never line up in a six-second schedule:

- **Zombie follower** (KAFKA-6880, what KIP-320's leader epoch in every fetch stops): a follower ``b`` cut off
  from the controller keeps fetching from the leader ``a`` it knew; ``a`` takes writes ``c`` does not fetch,
  ``c`` is elected (``a`` truncates them away), and ``a`` is elected back and takes new writes. ``b`` then
  fetches from ``a`` in a later epoch than its own and, without the epoch check, appends ``a``'s new records
  after the ones ``a`` truncated.
- **Fast fail-over** (KAFKA-6361, fixed by KIP-279): ``a`` leads and takes writes the lagging ``b`` does not
  fetch; ``b`` is elected while ``a`` and ``c`` cannot reach it, takes writes of its own, and ``a`` is
  elected back before anyone fetched them. ``b``'s last epoch is one ``a`` never had; answering its lookup
  with the start of ``a``'s next epoch lets ``b`` keep its own records where ``a`` has others.

Leadership is moved by a reassignment that only reorders the replicas followed by a preferred election, and
lagging is made with one-way cuts (the follower's fetch requests dropped). Nothing here knows which bug is
on: the correct core runs the same episodes and must stay clean (docs/historical-bugs.md). Each episode is
drawn in ``EPISODE_SHARE`` of the schedules, from a random stream of its own, so the schedules without one
stay exactly what they were. A random fault overlapping the episode would mostly undo it (a crash of the
stale follower, say), so the generator leaves out the random fault episodes that ``clear_of`` rejects (it
still draws them, so the other random events keep their times); client writes and reads stay. When a step
does not take (an election finds its candidate out of the ISR) the schedule is simply an ordinary one.
"""

from __future__ import annotations

import random
from typing import Any

EPISODE_SHARE = 0.1  # for each of the two episodes
NEEDED_KINDS = ("reassign", "elect")

Event = dict[str, Any]


def historical_episode_events(seed: int, options: Any) -> list[Event]:
    """The events of the episode drawn for schedule ``seed`` (none in most schedules)."""
    o = options
    rng = random.Random(f"{seed}:historical-episode")
    draw = rng.random()
    if (draw >= 2 * EPISODE_SHARE or not all(k in o.faults for k in NEEDED_KINDS)
            or o.replication_factor < 3 or o.brokers < 3):
        return []
    key = rng.randrange(o.partitions)
    a, b, c = rng.sample(range(1, o.brokers + 1), 3)
    t = rng.randrange(0, max(1, o.duration_ms // 10))
    make = zombie_follower if draw < EPISODE_SHARE else fast_failover
    return [e for e in make(rng, o, key, a, b, c, t) if e["at"] < o.duration_ms]


def clear_of(episode: list[Event], start: int, end: int) -> bool:
    """Whether a random fault episode from ``start`` to ``end`` keeps clear of the historical ``episode``
    (which lasts from its first event to the end of the fault phase: its stale follower stays stale)."""
    return not episode or end < min(e["at"] for e in episode)


def _lead(at: int, key: int, order: list[int]) -> list[Event]:
    """Make ``order[0]`` the leader: reorder the replicas, then a preferred election (~150 ms to take)."""
    return [{"at": at - 20, "do": "reassign", "key": key, "replicas": order}, {"at": at, "do": "elect", "key": key}]


def _cut(at: int, src: int, dst: int, heal: int) -> list[Event]:
    """Drop every message from ``src`` to ``dst`` between ``at`` and ``heal``."""
    return [{"at": at, "do": "cut", "a": src, "b": dst, "oneway": True},
            {"at": heal, "do": "uncut", "a": src, "b": dst, "oneway": True}]


def _produce(*times: int, key: int) -> list[Event]:
    return [{"at": at, "do": "produce", "key": key} for at in times]


def zombie_follower(rng: random.Random, o: Any, key: int, a: int, b: int, c: int, t: int) -> list[Event]:
    """KAFKA-6880: ``b`` stale, ``a`` leads, ``c`` leads (``a`` truncates), ``a`` leads again."""
    gap = rng.randrange(250, 400)  # how long c's fetches to a are dropped before c is elected
    lead_c = t + 300 + gap
    # c leads until it has dropped the stale b from its ISR (one lag window) and a fetched from it again
    lead_a = lead_c + o.replica_lag_time_max_ms + rng.randrange(200, 500)
    return [
        *_lead(t + 20, key, [a, c, b]),                        # a leads (epoch e)
        {"at": t + 250, "do": "isolate", "node": b},           # b stale from here on (healed by the final phase)
        # c's dropped fetches wait for their request timeout, so the cut heals just before c is elected
        *_cut(t + 300, c, a, heal=lead_c - 30),
        *_produce(t + 330, t + 300 + gap // 2, key=key),       # taken by a, fetched by b only
        *_lead(lead_c, key, [c, a, b]),                        # c leads (e+1); a truncates what c lacks
        *_produce(lead_c + 300, key=key),
        *_lead(lead_a, key, [a, c, b]),                        # a leads again (e+2); b still on epoch e
        *_produce(lead_a + 100, lead_a + 300, lead_a + 600, key=key),
    ]


def fast_failover(rng: random.Random, o: Any, key: int, a: int, b: int, c: int, t: int) -> list[Event]:
    """KAFKA-6361: ``a`` leads with writes ``b`` lacks, ``b`` leads unseen with writes of its own, ``a`` again."""
    gap = rng.randrange(200, 350)
    lead_b = t + 300 + gap
    lead_a = lead_b + rng.randrange(350, 500)  # well inside b's lag window: a and c stay in the ISR
    return [
        *_lead(t + 20, key, [a, b, c]),                        # a leads (epoch e)
        *_cut(t + 250, b, a, heal=lead_b - 40),                # b stops fetching from a
        *_produce(t + 280, t + 280 + gap // 3, t + 280 + 2 * gap // 3, key=key),  # on a and c, not b
        *_cut(lead_b - 50, a, b, heal=lead_a + 150),           # nobody fetches from b while it leads
        *_cut(lead_b - 50, c, b, heal=lead_a + 150),
        *_lead(lead_b, key, [b, a, c]),                        # b leads (e+1) with the shorter log
        *_produce(lead_b + 160, lead_b + 220, key=key),        # on b only
        *_lead(lead_a, key, [a, b, c]),                        # a leads (e+2); b must truncate its e+1 writes
        *_produce(lead_a + 250, lead_a + 450, key=key),
    ]
