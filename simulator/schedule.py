"""Schedules: what happens to a simulated cluster from outside, as a list of timed events.

A schedule is a seed, the ``SimOptions`` and a list of external events, each ``{"at": ms, "do": kind,
...}`` with ``at`` counted from the moment the cluster is ready (every broker registered and unfenced, the
topic created). Everything else (message delays, which broker a client asks, incarnation ids) follows
from the seed and the events, so a schedule file replays exactly. Shrinking removes events; any sublist
of a schedule is itself a valid schedule.

Event kinds (``node`` 0 is the controller, brokers are 1..N):

=====================  ==============================================================================
``produce {key}``      a client sends one record to partition ``key`` with acks=all
``poll {key}``         a client reads partition ``key`` from its leader (committed records only)
``crash {node, lossy}`` kill -9; ``lossy`` also drops every write not flushed (power loss, B4)
``stop {node}``        SIGTERM: controlled shutdown (C8/C9), flush, clean-shutdown marker (K4)
``restart {node}``     start a stopped or crashed broker again (no-op if it runs)
``isolate {node}``     cut the broker off from the controller only (both directions)
``rejoin {node}``      undo ``isolate``
``cut {a, b, oneway}``   drop every message from a to b (and b to a unless ``oneway``)
``uncut {a, b, oneway}`` undo ``cut``
``link {a, b, drop, dup, delay}``  from now on messages between a and b are dropped / duplicated with these
                       probabilities and delayed up to ``delay`` ms more (so they overtake each other)
``unlink {a, b}``      undo ``link``
``controller-restart {down_ms}``  the controller process dies and restarts ``down_ms`` later (its
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

from simulator.options import SimOptions

FORMAT = "kraftcheck-simulate-schedule"
VERSION = 1
CONTROLLER_ID = 0

# How often each fault family is drawn: controller-only cuts and lossy crashes are what the known hard
# cases (Last Replica Standing, stale broker epochs) are made of, so they come up most.
WEIGHTS = {"crash": 1.0, "crash-lossy": 2.0, "stop": 1.0, "isolate": 3.0, "partition": 2.0, "one-way": 1.0,
           "link": 1.0, "controller-restart": 0.5, "reassign": 1.0, "elect": 0.5}

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


KINDS = ("produce", "poll", "crash", "stop", "restart", "isolate", "rejoin", "cut", "uncut", "link", "unlink",
         "controller-restart", "reassign", "cancel", "elect")


def _event_problem(e: Any, o: SimOptions) -> str | None:
    """Why ``e`` is not a valid event for a cluster with options ``o`` (None if it is)."""
    if not isinstance(e, dict) or not isinstance(e.get("at"), int) or e["at"] < 0 or e.get("do") not in KINDS:
        return f"expected {{'at': int >= 0, 'do': one of {', '.join(KINDS)}, ...}}"
    brokers, nodes = range(1, o.brokers + 1), range(0, o.brokers + 1)
    kind = e["do"]
    if kind in ("crash", "stop", "restart", "isolate", "rejoin") and e.get("node") not in brokers:
        return f"{kind}: 'node' must be a broker id 1..{o.brokers}"
    if kind in ("cut", "uncut", "link", "unlink") and (e.get("a") not in nodes or e.get("b") not in nodes
                                                         or e.get("a") == e.get("b")):
        return f"{kind}: 'a' and 'b' must be two node ids 0..{o.brokers} (0 is the controller)"
    if kind in ("produce", "poll", "reassign", "cancel", "elect") and e.get("key") not in range(o.partitions):
        return f"{kind}: 'key' must be a partition 0..{o.partitions - 1}"
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
    kinds = [k for k in WEIGHTS if k in o.faults]
    weights = [WEIGHTS[k] for k in kinds]
    for _ in range(o.fault_windows if kinds else 0):
        kind = rng.choices(kinds, weights)[0]
        start = rng.randrange(o.duration_ms * 4 // 5)
        end = start + rng.randrange(o.session_timeout_ms // 2, o.session_timeout_ms * 5 // 2)
        events += _episode(rng, kind, start, end, brokers, o)
    events.sort(key=lambda e: e["at"])
    return Schedule(seed, options, tuple(events))


def _episode(rng: random.Random, kind: str, start: int, end: int, brokers: list[int],
             o: SimOptions) -> list[Event]:
    b = rng.choice(brokers)
    if kind in ("crash", "crash-lossy"):
        return [{"at": start, "do": "crash", "node": b, "lossy": kind == "crash-lossy"},
                {"at": end, "do": "restart", "node": b}]
    if kind == "stop":
        return [{"at": start, "do": "stop", "node": b}, {"at": end, "do": "restart", "node": b}]
    if kind == "isolate":
        return [{"at": start, "do": "isolate", "node": b}, {"at": end, "do": "rejoin", "node": b}]
    if kind in ("partition", "one-way"):
        a, c = rng.sample(brokers + [CONTROLLER_ID], 2)
        oneway = kind == "one-way"
        return [{"at": start, "do": "cut", "a": a, "b": c, "oneway": oneway},
                {"at": end, "do": "uncut", "a": a, "b": c, "oneway": oneway}]
    if kind == "link":
        a, c = rng.sample(brokers + [CONTROLLER_ID], 2)
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
