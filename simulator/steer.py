"""Steered episodes: faults aimed at the windows behind the guards of the protocol core.

A random schedule rarely makes the condition of some guards true (a stale fetch after a leader change, an
AlterPartition answered after newer metadata, a heartbeat of a broker the controller just fenced). As
FoundationDB's BUGGIFY and Antithesis do, a share of the seeds (``SimOptions.steer``) also gets a few
episodes aimed at one guard each: the messages the guard is about are duplicated, delayed (so copies
overtake each other and arrive stale) or dropped, and the node it is about (the partition leader, the
active controller) crashes, stops or is cut off in the middle of that window, so that epochs move while the
perturbed messages are still in flight.

The targets come from the guard table, not from a list: each guard is aimed at through the request kinds
it is about, which the calibration file ``guard_targets.json`` records (``python -m
simulator.steer_calibrate``, see there: the default schedules run with the guards counted; for each guard the kinds of message under
which it fired, and for each guarded function the kinds under which it ran). A guard that never fired is
aimed at through its function's kinds; a guard the file does not know (added later) through its function's
or its module's kinds, and failing those through every kind, so it is aimed at too. Guards that fired less
often in the calibration are drawn more often (weight ``1 / (1 + firings per schedule)``).

The quorum's Vote requests have a kind of their own (``vote``, a part of ``raft``), so the guards of the
elections (a voter that already voted, a candidate's stale answer) are aimed at through them: Vote
requests and their answers slowed, duplicated or dropped on every link between voters while the active
controller crashes and comes back, which makes the split votes behind them (two candidates of one epoch
asking the same voter, the restarted leader among them) instead of waiting for timeouts to coincide.

Steered episodes draw from a random stream of their own (``"<seed>:steer"``): the schedule's other events are
the same with or without steering, and the whole schedule, steered events included, is a list of events
in the schedule file, so it replays byte for byte. The kinds of fault a steered episode uses are limited
to ``SimOptions.faults`` like the random ones.
"""

from __future__ import annotations

import json
import os
import random
from functools import lru_cache
from typing import Any

from simulator.guard_report import quorum_guard
from simulator.guards import Guard, core_guards
from simulator.options import SimOptions

TARGETS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard_targets.json")
STEERED_EPISODES = 3
EPISODE_BASE = 100   # episode numbers of steered episodes (random ones count from 0)
BROKER_TO_CONTROLLER = ("register", "heartbeat", "alter_partition", "metadata")
ALL_KINDS = ("fetch", "produce", "poll", "list_offsets", "register", "heartbeat", "alter_partition", "metadata",
             "admin", "raft", "vote", "timer")
QUORUM_KINDS = ("raft", "vote")  # messages only a quorum of several controllers sends

Event = dict[str, Any]


@lru_cache(maxsize=1)
def calibration() -> dict[str, Any]:
    """The calibration file's content (empty tables if there is none)."""
    try:
        with open(TARGETS_FILE, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        return {"schedules": 0, "guards": {}, "functions": {}}


@lru_cache(maxsize=2)
def aims(quorum: bool) -> tuple[tuple[Guard, ...], tuple[tuple[str, ...], ...], tuple[float, ...]]:
    """The guards a schedule may aim at (quorum guards only with a quorum), the request kinds each is
    aimed at through, and its weight."""
    data = calibration()
    schedules = max(int(data.get("schedules", 0)), 1)
    known, functions = data.get("guards", {}), data.get("functions", {})
    by_module: dict[str, set[str]] = {}
    for name, kinds in functions.items():
        by_module.setdefault(name.rsplit(":", 1)[0], set()).update(kinds)
    guards, kinds_of, weights = [], [], []
    for guard in core_guards():
        if quorum_guard(guard) and not quorum:
            continue
        entry = known.get(guard.name, {})
        kinds = (entry.get("kinds") or functions.get(f"{guard.path}:{guard.function}")
                 or sorted(by_module.get(guard.path, ())) or ALL_KINDS)
        usable = tuple(k for k in kinds if k in ALL_KINDS and (quorum or k not in QUORUM_KINDS)) or ("timer",)
        guards.append(guard)
        kinds_of.append(usable)
        weights.append(1.0 / (1.0 + entry.get("fired", 0) / schedules))
    return tuple(guards), tuple(kinds_of), tuple(weights)


def steered_events(seed: int, o: SimOptions, brokers: list[int], controllers: list[int]) -> list[Event]:
    """The steered episodes of ``seed`` (none for the seeds the ``steer`` share leaves random)."""
    if o.steer <= 0 or not o.faults:
        return []
    rng = random.Random(f"{seed}:steer")
    if rng.random() >= o.steer:
        return []
    guards, kinds_of, weights = aims(o.controllers > 1)
    if not guards:
        return []
    events: list[Event] = []
    indexes = range(len(guards))
    for n in range(STEERED_EPISODES):
        index = rng.choices(indexes, weights)[0]
        kind = rng.choice(kinds_of[index])
        start = rng.randrange(o.duration_ms * 4 // 5)
        end = start + rng.randrange(o.heartbeat_interval_ms, o.session_timeout_ms * 2)
        events += _aim(rng, kind, start, end, o, brokers, controllers, EPISODE_BASE + n)
    return events


def _aim(rng: random.Random, kind: str, start: int, end: int, o: SimOptions, brokers: list[int],
         controllers: list[int], episode: int) -> list[Event]:
    """One episode aimed at messages of ``kind``: a fault of those messages on a link they travel (Vote
    requests: on every link between voters), and most of the time (always when no link carries them:
    client requests, timers) a fault of the node they are about in the middle of the window (its end, the
    leader, the active controller), for a moment or for longer."""
    allowed = set(o.faults)
    out: list[Event] = []
    links: list[tuple[Any, Any]] = []
    if kind == "fetch" and len(brokers) > 1:
        a, b = rng.sample(brokers, 2)
        links = [(a, b)]
    elif kind in BROKER_TO_CONTROLLER:
        links = [(rng.choice(brokers), rng.choice(controllers))]
    elif kind == "raft" and len(controllers) > 1:
        a, b = rng.sample(controllers, 2)
        links = [(a, b)]
    elif kind == "vote" and len(controllers) > 1:
        # a candidate asks every voter at once: only votes slowed on every link let two candidacies of one
        # epoch overlap and reach the same voter in either order (a split vote)
        links = [(a, b) for i, a in enumerate(controllers) for b in controllers[i + 1:]]
    if links and "link" in allowed:
        # votes slowed by a fraction of the election timeout still arrive within the candidate's round, out
        # of order; the delays of the other kinds are about the brokers' timers
        delays = [o.election_timeout_ms // 4, o.election_timeout_ms // 2, o.election_timeout_ms] if kind == "vote" \
            else [50, 300, 1000]
        fault = {"kinds": [kind], "drop": rng.choice([0.0, 0.0, 0.3]), "dup": rng.choice([0.5, 0.9]),
                 "delay": rng.choice(delays)}
        for a, b in links:
            out += [{"at": start, "do": "link", "a": a, "b": b, **fault}, {"at": end, "do": "unlink", "a": a, "b": b}]
    if kind in ("produce", "poll"):
        out += [{"at": rng.randrange(start, end), "do": kind, "key": rng.randrange(o.partitions)} for _ in range(3)]
    if kind in ("poll", "list_offsets"):
        # a consumer's ListOffsets (latest, earliest, max timestamp, a timestamp) while the leader changes
        out += [{"at": rng.randrange(start, end), "do": "offsets", "key": rng.randrange(o.partitions),
                 "timestamp": rng.choice([-1, -1, -2, -3, 0])} for _ in range(3)]
    elif kind == "admin":
        out += _admin(rng, start, end, o, brokers)
    if out and links and rng.random() < 0.3:
        return out
    middle = (start + end) // 2
    if kind == "vote":
        # the leader back within a fetch timeout, before its followers stand: a voter that both ask
        back = middle + rng.randrange(20, max(21, o.quorum_fetch_timeout_ms))
    else:
        # down briefly (a restart while copies of its old requests are still in flight) or for longer
        back = middle + rng.choice([rng.randrange(20, 200), rng.randrange(200, o.session_timeout_ms * 2)])
    broker = links[0][0] if links and links[0][0] in brokers else None
    return out + _node_fault(rng, kind, middle, back, o, allowed, episode, broker)


def _node_fault(rng: random.Random, kind: str, start: int, end: int, o: SimOptions, allowed: set[str],
                episode: int, broker: int | None) -> list[Event]:
    """A fault of a node the messages are about: the active controller for controller requests (a third of
    the time; always for votes, since elections follow its loss: restarted soon, it is the voter that two
    candidates of the next epoch both ask), else the broker at the perturbed link's end (half the time,
    when there is one), else the leader of a partition."""
    if kind == "vote" or (kind in BROKER_TO_CONTROLLER + ("admin", "raft") and rng.random() < 1 / 3):
        if o.controllers > 1 and "controller-crash" in allowed:
            return [{"at": start, "do": "crash", "node": "active", "lossy": False, "episode": episode},
                    {"at": end, "do": "restart", "node": "active", "episode": episode}]
        if o.controllers == 1 and "controller-restart" in allowed:
            return [{"at": start, "do": "controller-restart", "down_ms": rng.randrange(50, o.session_timeout_ms)}]
    choices = [f for f in ("crash", "crash-lossy", "stop", "isolate") if f in allowed]
    if not choices:
        return []
    fault = rng.choice(choices)
    if broker is not None and rng.random() < 0.5:
        target: Event = {"node": broker}
    else:
        target = {"node": "leader", "key": rng.randrange(o.partitions), "episode": episode}
    if fault == "isolate":
        return [{"at": start, "do": "isolate", **target}, {"at": end, "do": "rejoin", **target}]
    if fault == "stop":
        return [{"at": start, "do": "stop", **target}, {"at": end, "do": "restart", **target}]
    return [{"at": start, "do": "crash", "lossy": fault == "crash-lossy", **target},
            {"at": end, "do": "restart", **target}]


def _admin(rng: random.Random, start: int, end: int, o: SimOptions, brokers: list[int]) -> list[Event]:
    """Admin requests in the window: reassignments (some of them invalid: a replica listed twice, a broker
    that does not exist, fewer replicas than MinISR, which the controller must refuse), cancellations and
    elections, close together."""
    out: list[Event] = []
    key = rng.randrange(o.partitions)
    allowed = set(o.faults)
    if "reassign" in allowed:
        for _ in range(2):
            replicas = rng.sample(brokers, min(len(brokers), o.replication_factor))
            twist = rng.random()
            if twist < 0.15:
                replicas = replicas[:-1] + [replicas[0]]
            elif twist < 0.3:
                replicas = replicas[:-1] + [max(brokers) + 7]
            elif twist < 0.4:
                replicas = replicas[:1]
            out.append({"at": rng.randrange(start, end), "do": "reassign", "key": key, "replicas": replicas})
        out.append({"at": rng.randrange(start, end), "do": "cancel", "key": key})
    if "elect" in allowed:
        out.append({"at": rng.randrange(start, end), "do": "elect", "key": key})
    return out
