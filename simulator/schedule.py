"""Schedules: what happens to a simulated cluster from outside, as a list of timed events.

A schedule is a seed, the ``SimOptions`` and a list of external events, each ``{"at": ms, "do": kind,
...}`` with ``at`` counted from the moment the cluster is ready (every broker registered and unfenced, the
topic created). Everything else (message delays, which broker a client asks, incarnation ids) follows
from the seed and the events, so a schedule file replays exactly. Shrinking removes events; any sublist
of a schedule is itself a valid schedule.

Node ids: brokers are 1..N; the controller is 0 when there is one, the voters 1001..100K when there are
K > 1 (``controller_ids``). A controller event may name ``"active"``: the active controller at that moment;
the end of an episode begun on ``"active"`` carries the same ``episode`` number and acts on the node its
start resolved to. A broker event may name ``"leader"`` the same way: the leader of partition ``key``
(default 0) when the episode's first event happens (steered episodes, ``steer``).

Event kinds:

=====================  ==============================================================================
``produce {key}``      a client sends one record to partition ``key`` with acks=all
``poll {key}``         a client reads partition ``key`` from its leader (committed records only)
``offsets {key, timestamp}``  a consumer's ListOffsets of partition ``key`` (-1 latest, -2 earliest, -3 max
                       timestamp, or a timestamp) at the leader it knows, in the leader epoch it knows
``crash {node, lossy}`` kill -9 of a broker or a controller; ``lossy`` also drops every write not flushed
                       (power loss, B4; a controller flushes its quorum log before it counts, Q9)
``stop {node}``        SIGTERM of a broker: controlled shutdown (C8/C9), flush, clean-shutdown marker (K4)
``restart {node}``     start a stopped or crashed node again (no-op if it runs)
``isolate {node}``     a broker: cut off from every controller only; a controller: cut off from every
                       other node (both directions)
``rejoin {node}``      undo ``isolate``
``cut {a, b, oneway}``   drop every message from a to b (and b to a unless ``oneway``)
``uncut {a, b, oneway}`` undo ``cut``
``link {a, b, drop, dup, delay}``  from now on messages between a and b are dropped / duplicated with these
                       probabilities and delayed up to ``delay`` ms more (so they overtake each other);
                       with ``kinds`` (a list of request kinds) only those requests and their replies
                       (``raft`` covers every quorum RPC, ``vote`` its Vote requests alone)
``unlink {a, b}``      undo ``link``
``controller-restart {down_ms}``  the active controller's process dies and restarts ``down_ms`` later (its
                       metadata log is durable; its sessions and in-flight requests are not)
``reassign {key, replicas}``  AlterPartitionReassignments of partition ``key`` to ``replicas``
``cancel {key}``       cancel the reassignment of partition ``key``
``elect {key}``        preferred leader election of partition ``key``
=====================  ==============================================================================
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from simulator import steer
from simulator.historical_episodes import clear_of, historical_episode_events
from simulator.options import QUORUM_FAULT_KINDS, SimOptions

FORMAT = "kraftcheck-simulate-schedule"
VERSION = 1
CONTROLLER_ID = 0
FIRST_VOTER_ID = 1001
ACTIVE = "active"
LEADER = "leader"
# the request kinds of the simulated network (a steered link fault names some of them); ``vote``: the
# quorum's Vote requests, a part of ``raft`` (simulator.network.PART_OF)
MESSAGE_KINDS = ("fetch", "produce", "poll", "list_offsets", "register", "heartbeat", "alter_partition", "metadata",
                 "admin", "raft", "vote")

# How often each fault family is drawn: controller-only cuts and lossy crashes are what the known hard
# cases (Last Replica Standing, stale broker epochs) are made of, so they come up most. With a controller
# quorum, faults of its voters (fail-overs, zombies, lost votes) come up about as often as broker faults.
WEIGHTS = {"crash": 1.0, "crash-lossy": 2.0, "stop": 1.0, "isolate": 3.0, "partition": 2.0, "one-way": 1.0,
           "link": 1.0, "controller-restart": 0.5, "reassign": 1.0, "elect": 0.5, "controller-crash": 2.0,
           "controller-crash-lossy": 1.0, "controller-isolate": 2.0, "controller-partition": 1.5}


def controller_ids(options: SimOptions) -> list[int]:
    """The controllers' node ids: 0 for a single controller, else 1001..1000+K."""
    if options.controllers == 1:
        return [CONTROLLER_ID]
    return list(range(FIRST_VOTER_ID, FIRST_VOTER_ID + options.controllers))

Event = dict[str, Any]


@dataclass(frozen=True)
class Schedule:
    """A seed, the options and the external events, ordered by time (ties keep list order)."""

    seed: int
    options: SimOptions
    events: tuple[Event, ...] = ()
    found: dict[str, Any] | None = field(default=None, compare=False)

    def with_events(self, events: list[Event] | tuple[Event, ...]) -> Schedule:
        """The same schedule with another event list (what shrinking tries)."""
        return Schedule(self.seed, self.options, tuple(events))

    def to_json(self) -> str:
        """The schedule file's text: canonical JSON, one event per line (stable byte for byte)."""
        head = {"format": FORMAT, "version": VERSION, "seed": self.seed, "options": self.options.to_dict()}
        if self.found is not None:
            head["found"] = self.found
        lines = [json.dumps(head, sort_keys=True)[:-1] + ', "events": [']
        lines += ["  " + json.dumps(e, sort_keys=True) + ("," if i < len(self.events) - 1 else "")
                  for i, e in enumerate(self.events)]
        lines.append("]}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Schedule:
        """Parse a schedule file; ``ValueError`` names what is wrong."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} file")
        if data.get("version") != VERSION:
            raise ValueError(f"schedule version {data.get('version')!r}, this simulator reads {VERSION}")
        seed, events = data.get("seed"), data.get("events")
        if not isinstance(seed, int) or not isinstance(events, list):
            raise ValueError("'seed' must be an integer and 'events' a list")
        options = SimOptions.from_dict(data.get("options") or {})
        for i, e in enumerate(events):
            problem = _event_problem(e, options)
            if problem:
                raise ValueError(f"event {i}: {problem}")
        return cls(seed, options, tuple(events), data.get("found"))


KINDS = ("produce", "poll", "offsets", "crash", "stop", "restart", "isolate", "rejoin", "cut", "uncut", "link", "unlink",
         "controller-restart", "reassign", "cancel", "elect")


def _event_problem(e: Any, o: SimOptions) -> str | None:
    """Why ``e`` is not a valid event for a cluster with options ``o`` (None if it is)."""
    if not isinstance(e, dict) or not isinstance(e.get("at"), int) or e["at"] < 0 or e.get("do") not in KINDS:
        return f"expected {{'at': int >= 0, 'do': one of {', '.join(KINDS)}, ...}}"
    brokers = list(range(1, o.brokers + 1))
    controllers = controller_ids(o)
    nodes = brokers + controllers
    kind = e["do"]
    if kind == "stop" and e.get("node") not in brokers + [LEADER]:
        return f"{kind}: 'node' must be a broker id 1..{o.brokers} or {LEADER!r}"
    if kind in ("crash", "restart", "isolate", "rejoin") and e.get("node") not in nodes + [ACTIVE, LEADER]:
        return (f"{kind}: 'node' must be a broker id 1..{o.brokers}, a controller id {controllers}, {ACTIVE!r} "
                f"or {LEADER!r}")
    if kind == "link" and "kinds" in e and (not isinstance(e["kinds"], list)
                                            or any(k not in MESSAGE_KINDS for k in e["kinds"])):
        return f"link: 'kinds' must be a list of request kinds of {', '.join(MESSAGE_KINDS)}"
    if kind in ("cut", "uncut", "link", "unlink") and (e.get("a") not in nodes or e.get("b") not in nodes
                                                         or e.get("a") == e.get("b")):
        return f"{kind}: 'a' and 'b' must be two node ids of {nodes} (controllers: {controllers})"
    if kind in ("produce", "poll", "offsets", "reassign", "cancel", "elect") and e.get("key") not in range(o.partitions):
        return f"{kind}: 'key' must be a partition 0..{o.partitions - 1}"
    if kind == "offsets" and not isinstance(e.get("timestamp"), int):
        return "offsets: 'timestamp' must be an integer"
    if kind == "reassign" and (not isinstance(e.get("replicas"), list) or not e["replicas"]):
        return "reassign: 'replicas' must be a non-empty list of broker ids"
    return None


def generate(seed: int, options: SimOptions) -> Schedule:
    """The schedule of ``seed``: client writes and reads at random times and ``fault_windows`` fault
    episodes (a start event and, for most kinds, the matching end event later)."""
    rng = random.Random(f"{seed}:schedule")
    o = options
    brokers = list(range(1, o.brokers + 1))
    events: list[Event] = []
    for _ in range(o.produces):
        events.append({"at": rng.randrange(o.duration_ms), "do": "produce", "key": rng.randrange(o.partitions)})
    for _ in range(o.polls):
        events.append({"at": rng.randrange(o.duration_ms), "do": "poll", "key": rng.randrange(o.partitions)})
    kinds = [k for k in WEIGHTS if k in o.faults and (o.controllers > 1 or k not in QUORUM_FAULT_KINDS)]
    weights = [WEIGHTS[k] for k in kinds]
    historical = historical_episode_events(seed, o)  # its own random stream (simulator.historical_episodes)
    for episode in range(o.fault_windows if kinds else 0):
        kind = rng.choices(kinds, weights)[0]
        start = rng.randrange(o.duration_ms * 4 // 5)
        end = start + rng.randrange(o.session_timeout_ms // 2, o.session_timeout_ms * 5 // 2)
        drawn = _episode(rng, kind, start, end, brokers, o, episode)
        if clear_of(historical, start, end):
            events += drawn
    events += historical
    # steered episodes come from a random stream of their own, so the events above are the same with or
    # without them (a seed's random schedule does not change when steering is turned on or off)
    events += steer.steered_events(seed, o, brokers, controller_ids(o))
    events.sort(key=lambda e: e["at"])
    return Schedule(seed, options, tuple(events))


def _episode(rng: random.Random, kind: str, start: int, end: int, brokers: list[int],
             o: SimOptions, episode: int) -> list[Event]:
    if kind in QUORUM_FAULT_KINDS:
        return _quorum_episode(rng, kind, start, end, o, episode)
    b = rng.choice(brokers)
    if kind in ("crash", "crash-lossy"):
        return [{"at": start, "do": "crash", "node": b, "lossy": kind == "crash-lossy"},
                {"at": end, "do": "restart", "node": b}]
    if kind == "stop":
        return [{"at": start, "do": "stop", "node": b}, {"at": end, "do": "restart", "node": b}]
    if kind == "isolate":
        return [{"at": start, "do": "isolate", "node": b}, {"at": end, "do": "rejoin", "node": b}]
    if kind in ("partition", "one-way"):
        a, c = rng.sample(brokers + controller_ids(o), 2)
        oneway = kind == "one-way"
        return [{"at": start, "do": "cut", "a": a, "b": c, "oneway": oneway},
                {"at": end, "do": "uncut", "a": a, "b": c, "oneway": oneway}]
    if kind == "link":
        a, c = rng.sample(brokers + controller_ids(o), 2)
        return [{"at": start, "do": "link", "a": a, "b": c, "drop": rng.choice([0.0, 0.2, 0.5]),
                 "dup": rng.choice([0.0, 0.3]), "delay": rng.choice([0, 20, 200])},
                {"at": end, "do": "unlink", "a": a, "b": c}]
    if kind == "controller-restart":
        return [{"at": start, "do": "controller-restart", "down_ms": rng.randrange(50, o.session_timeout_ms)}]
    key = rng.randrange(o.partitions)
    if kind == "reassign":
        replicas = rng.sample(brokers, rng.choice([o.replication_factor, max(o.min_isr, o.replication_factor - 1)]))
        out = [{"at": start, "do": "reassign", "key": key, "replicas": replicas}]
        if rng.random() < 0.3:
            out.append({"at": end, "do": "cancel", "key": key})
        return out
    return [{"at": start, "do": "elect", "key": key}]


def _quorum_episode(rng: random.Random, kind: str, start: int, end: int, o: SimOptions,
                    episode: int) -> list[Event]:
    """A fault of the controller quorum: on the active controller half of the time (the one that matters
    most), else on a voter drawn at random."""
    voters = controller_ids(o)
    node: Any = ACTIVE if rng.random() < 0.5 else rng.choice(voters)
    tag = {"episode": episode} if node == ACTIVE else {}
    if kind in ("controller-crash", "controller-crash-lossy"):
        return [{"at": start, "do": "crash", "node": node, "lossy": kind == "controller-crash-lossy", **tag},
                {"at": end, "do": "restart", "node": node, **tag}]
    if kind == "controller-isolate":
        return [{"at": start, "do": "isolate", "node": node, **tag},
                {"at": end, "do": "rejoin", "node": node, **tag}]
    a, c = rng.sample(voters, 2)
    oneway = rng.random() < 0.3
    return [{"at": start, "do": "cut", "a": a, "b": c, "oneway": oneway},
            {"at": end, "do": "uncut", "a": a, "b": c, "oneway": oneway}]
