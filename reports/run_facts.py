"""What a run report computes from a history before drawing it (pure functions, no I/O, no plotting).

- ``throughput``: completions per second by op type and outcome (ok / fail / info).
- ``latency_quantiles``: p50 / p90 / p99 / max latency of the ok ops of each op type.
- ``labelled_faults``: the fault intervals of ``harness.faults`` with what was done to which node,
  read from the nemesis ops' values (``kill b3``, ``start-partition b1,b2 | controller``).
- ``fault_impact``: for each fault, how long the cluster was unavailable (the longest stretch without an
  ok client completion while the fault was in place) and how long it took to recover (from the end of
  the fault to the completion of the first ok client op invoked at or after it, the measure Spark's
  recovery table uses).
- ``client_errors``: failed and indeterminate client ops grouped by Kafka error code.
- ``shorten_records``: a long poll result cut to the records around the ones an anomaly names.

Final-phase ops (``final: true``) are left out of throughput and latency: they run after every fault
was healed and measure the final read, not the system under faults. They count for recovery: a final
read that completes ok is the first proof that the cluster is back after the final heal.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.faults import end_of, fault_timeline, nemesis_ops
from harness.history import complete_op, completed_ops

OUTCOMES = ("ok", "fail", "info")
QUANTILES = (0.5, 0.9, 0.99)

_BRACKET_CODE = re.compile(r"\[Error (-?\d+)\] (\w+)")
_CONFLUENT_CODE = re.compile(r"code=(\w+),val=(-?\d+)")
_EXCEPTION_NAME = re.compile(r"^(\w+)")


@dataclass(frozen=True)
class ClientPair:
    """A completed (or never completed) client op: invocation time, completion time or None, outcome."""

    f: str
    invoke_ns: int
    complete_ns: int | None
    type: str
    error: str | None


@dataclass(frozen=True)
class LabelledFault:
    """A fault interval with what was done (``label``) and the nemesis op's completion value."""

    start: int
    end: int
    f: str
    label: str
    healed: bool


@dataclass(frozen=True)
class FaultImpact:
    """A fault and its effect on the clients (seconds; recovery None when no ok op followed)."""

    fault: LabelledFault
    ok_during: int
    unavailable_s: float
    recovery_s: float | None


def client_pairs(ops: list[dict], final: bool = False) -> list[ClientPair]:
    """Client ops, each completed by ``harness.history.complete_op`` (an invocation never completed counts
    as ``info``): those of the main phase, and with ``final`` those of the final phase too."""
    out = []
    for op in completed_ops(ops):
        if op["process"] == "nemesis" or (op.get("final") is True and not final):
            continue
        out.append(ClientPair(op["f"], op["invoke_time"], op["complete_time"], op["type"], op.get("error")))
    return out


def throughput(pairs: list[ClientPair], bucket_s: float = 1.0) -> tuple[list[float], dict[tuple[str, str], list[int]]]:
    """(bucket start times in s, {(f, outcome): completions per bucket}); never-completed ops are left out."""
    done = [p for p in pairs if p.complete_ns is not None]
    if not done:
        return [], {}
    width = int(bucket_s * 1e9)
    last = max(p.complete_ns for p in done) // width
    series: dict[tuple[str, str], list[int]] = {}
    for p in done:
        series.setdefault((p.f, p.type), [0] * (last + 1))[p.complete_ns // width] += 1
    return [i * bucket_s for i in range(last + 1)], dict(sorted(series.items()))


def latency_quantiles(pairs: list[ClientPair]) -> list[dict[str, Any]]:
    """Per op type: completions by outcome and the latency quantiles of its ok ops (ms)."""
    rows = []
    for f in sorted({p.f for p in pairs}):
        mine = [p for p in pairs if p.f == f]
        lat = sorted((p.complete_ns - p.invoke_ns) / 1e6 for p in mine if p.type == "ok" and p.complete_ns)
        row: dict[str, Any] = {"f": f, **{t: sum(p.type == t for p in mine) for t in OUTCOMES}}
        for q in QUANTILES:
            row[f"p{round(q * 100)}"] = _quantile(lat, q)
        row["max"] = lat[-1] if lat else None
        rows.append(row)
    return rows


def fault_label(f: str, value: Any) -> str:
    """What a nemesis op did, in a few words: the op and the nodes (or partition sides) it touched."""
    if not isinstance(value, dict):
        return f
    grudge = value.get("grudge")
    if isinstance(grudge, dict) and grudge:
        sides = _partition_sides(grudge)
        return f"{f} {value.get('topology') or ''} {sides}".replace("  ", " ").strip()
    nodes = value.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        nodes = sorted({n for key in ("killed", "stopped", "paused", "per_node", "requested_s") for n in
                        (value.get(key) or {}) if isinstance(value.get(key), dict)})
    label = f + (" " + ",".join(str(n) for n in nodes) if nodes else "")
    offsets = value.get("requested_s")
    if isinstance(offsets, dict) and offsets:
        label += " (" + ", ".join(f"{n} {s:+.1f}s" for n, s in sorted(offsets.items())
                                  if isinstance(s, int | float)) + ")"
    coordinator = value.get("coordinator")
    if isinstance(coordinator, dict):
        # A fault aimed at a coordinator (nemesis.targets): which one, and the state-topic partition it led.
        where = f"{coordinator.get('topic')}-{coordinator['partition']}" if "partition" in coordinator else \
            "no state topic yet"
        # Without a coordinator to find, the op hit a broker drawn at random (its evidence says why).
        on = f"fallback {coordinator.get('node')}" if coordinator.get("fallback") else f"on {coordinator.get('node')}"
        label += f" ({coordinator.get('target')} {where} {on})"
        if value.get("node_after"):
            label += f" -> {value['node_after']}"
        return label
    for key in ("partition", "target", "replicas"):
        if key in value and f in ("reassign", "cancel-reassignment", "elect-preferred", "elect-unclean"):
            label += f" {key} {value[key]}"
    return label


def labelled_faults(ops: list[dict]) -> list[LabelledFault]:
    """The run's fault intervals (``harness.faults``), each labelled from its op's completion value."""
    nem = list(nemesis_ops(ops))
    end = end_of(ops)
    timeline = fault_timeline(nem, end)
    completions: dict[tuple[str, int], Any] = {}
    open_invokes: dict[str, list[dict]] = {}
    for op in nem:
        if op["type"] == "invoke":
            open_invokes.setdefault(op["f"], []).append(op)
        else:
            # Nemesis ops pair by f, the latest invocation first (harness.faults); a completion without
            # one stands for both.
            pending = open_invokes.get(op["f"])
            done = complete_op(pending.pop() if pending else op, op)
            completions[(op["f"], done["invoke_time"])] = _evidence(done)
    for f, pending in open_invokes.items():
        for invoke in pending:
            done = complete_op(invoke, None)
            completions.setdefault((f, done["invoke_time"]), _evidence(done))
    heals = set(timeline.recoveries)
    return [LabelledFault(iv.start, iv.end, iv.f, fault_label(iv.f, completions.get((iv.f, iv.start))),
                          iv.end in heals) for iv in timeline.intervals]


def _evidence(op: dict) -> Any:
    """What a completed nemesis op says it did: the completion's value when it is a dict (the evidence a
    nemesis returns), else what was asked."""
    value = op.get("value")
    return value if isinstance(value, dict) else op.get("invoke_value")


def fault_impact(faults: list[LabelledFault], pairs: list[ClientPair]) -> list[FaultImpact]:
    """Unavailability during and recovery after each fault (see the module docstring)."""
    ok_done = sorted(p.complete_ns for p in pairs if p.type == "ok" and p.complete_ns is not None)
    oks = sorted((p.invoke_ns, p.complete_ns) for p in pairs if p.type == "ok" and p.complete_ns is not None)
    out = []
    for fault in faults:
        inside = [t for t in ok_done if fault.start <= t < fault.end]
        edges = [fault.start, *inside, fault.end]
        longest = max((b - a for a, b in zip(edges, edges[1:], strict=False)), default=0)
        after = [done for invoked, done in oks if invoked >= fault.end]
        recovery = (min(after) - fault.end) / 1e9 if after else None
        out.append(FaultImpact(fault, len(inside), longest / 1e9, recovery))
    return out


def error_code(error: str | None) -> tuple[str, str]:
    """(code, name) of a client error string: the Kafka error code when the message carries one (kafka-python's
    ``[Error 6] NotLeaderForPartitionError``, confluent-kafka's ``code=NOT_LEADER...,val=6``), else ``-``
    and the exception's name (a client-side condition such as a timeout has no protocol code)."""
    if not error:
        return "-", "(no error given)"
    match = _BRACKET_CODE.search(error)
    if match:
        return match.group(1), match.group(2)
    match = _CONFLUENT_CODE.search(error)
    if match:
        return match.group(2), match.group(1)
    match = _EXCEPTION_NAME.match(error)
    return "-", match.group(1) if match else error[:60]


def client_errors(ops: list[dict]) -> list[dict[str, Any]]:
    """Failed and indeterminate client completions grouped by (code, name): counts by op type and
    outcome, and one example message; most frequent first."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for op in ops:
        if op.get("process") == "nemesis" or op.get("type") not in ("fail", "info"):
            continue
        code, name = error_code(op.get("error"))
        group = groups.setdefault((code, name), {"code": code, "name": name, "count": 0, "by": Counter(),
                                                 "example": op.get("error")})
        group["count"] += 1
        group["by"][f"{op.get('f')} {op['type']}"] += 1
    return sorted(groups.values(), key=lambda g: (-g["count"], g["code"], g["name"]))


def shorten_records(records: list[Any], focus_values: set[Any], focus_offsets: set[Any], context: int = 2,
                    limit: int = 12) -> list[tuple[str, Any]]:
    """A record list (``[[offset, value], ...]``) cut for display: ``("hit", record)`` for the records an
    anomaly names (by value or offset), ``("rec", record)`` for their neighbours and the ends, ``("gap",
    n)`` for n records left out. Lists up to ``limit`` records are kept whole."""
    def hit(rec: Any) -> bool:
        return (isinstance(rec, list | tuple) and len(rec) == 2
                and (rec[1] in focus_values or rec[0] in focus_offsets))

    if len(records) <= limit:
        return [("hit" if hit(r) else "rec", r) for r in records]
    keep = {0, len(records) - 1}
    for i, rec in enumerate(records):
        if hit(rec):
            keep.update(range(max(0, i - context), min(len(records), i + context + 1)))
    out: list[tuple[str, Any]] = []
    previous = -1
    for i in sorted(keep):
        if i - previous > 1:
            out.append(("gap", i - previous - 1))
        out.append(("hit" if hit(records[i]) else "rec", records[i]))
        previous = i
    return out


def _partition_sides(grudge: dict[str, Iterable[str]]) -> str:
    """``b1,b2 | controller``: the nodes cut off, grouped by whom they are cut from."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for node, cut_from in sorted(grudge.items()):
        groups.setdefault(tuple(sorted(cut_from)), []).append(node)
    smallest = sorted(groups.items(), key=lambda kv: (len(kv[1]), kv[1]))
    others, nodes = smallest[0]
    return f"{','.join(nodes)} | {','.join(others)}"


def _quantile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))]
