"""Judging a scenario: named checks of what the seeds say against what the trace and the history show.

A judge builds ``Check`` values, each naming the rule or seed row it checks (``C18``, ``seed 000 ex. 1 row
2``), what was expected and what was observed, and hands them to ``verdict``, which returns the dict every
judge returns (``results.json["scenario"]`` minus the steps):

- ``expectation`` (one sentence per variant), ``expectation_met`` (every check passed and, for an
  expectation of ``valid``, the run's verdict is valid);
- ``label``: the known issue's explanation when the scenario reproduces one (Last Replica Standing on
  v3.5), else None;
- ``checks``: the checks as dicts (``name``, ``rule``, ``ok``, ``expected``, ``observed``);
- ``facts``: the decisive observations, for the report; ``lines``: what the command prints.

Sets from the seeds are compared as sets (``same_set``): the reference orders replicas as Kafka does
(target order, then the removing replicas ascending), which some seed examples print differently.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Check:
    """One expectation and what was observed."""

    name: str
    ok: bool
    expected: Any
    observed: Any
    rule: str = ""


def check(name: str, ok: Any, expected: Any, observed: Any, rule: str = "") -> Check:
    """A ``Check`` (``ok`` coerced to bool)."""
    return Check(name, bool(ok), expected, observed, rule)


def same_set(a: Any, b: Any) -> bool:
    """Whether two broker lists hold the same brokers (None never matches)."""
    return a is not None and b is not None and sorted(a) == sorted(b)


def first(states: list[dict[str, Any]], predicate: Any) -> dict[str, Any] | None:
    """The first state satisfying ``predicate`` (None if none does)."""
    return next((s for s in states if predicate(s)), None)


def verdict(scenario: str, variant: str, expectation: str, checks: list[Check], facts: dict[str, Any],
            results: dict[str, Any], expect_valid: bool = True, label: str | None = None) -> dict[str, Any]:
    """The judge's answer (module docstring). ``expect_valid``: the run's own verdict must be valid too."""
    failed = [c for c in checks if not c.ok]
    valid_ok = results.get("valid") is True or not expect_valid
    met = bool(checks) and not failed and valid_ok
    lines = [f"scenario {scenario} ({variant}): expectation {'met' if met else 'NOT met'}: {expectation}"]
    if label and met:
        lines.append(label)
    for c in checks:
        mark = "ok " if c.ok else "FAIL"
        rule = f" [{c.rule}]" if c.rule else ""
        lines.append(f"  {mark} {c.name}{rule}: observed {c.observed}" + ("" if c.ok else f"; expected {c.expected}"))
    if expect_valid and results.get("valid") is not True:
        lines.append(f"  FAIL run verdict: {results.get('valid')} (expected valid)")
    return {"expectation": expectation, "expectation_met": met, "label": label if met else None,
            "checks": [asdict(c) for c in checks], "failed_checks": [c.name for c in failed],
            "facts": facts, "lines": lines}


def final_read_values(ops: list[dict[str, Any]], partition: int = 0) -> tuple[bool, dict[int, Any]]:
    """(a final read completed ok, {offset: value} it returned for the partition)."""
    done, values = False, {}
    for op in ops:
        if op.get("final") is True and op.get("type") == "ok" and isinstance(op.get("value"), dict):
            done = True
            for offset, value in op["value"].get(str(partition)) or []:
                values[int(offset)] = value
    return done, values


def acked_values(ops: list[dict[str, Any]], partition: int | None = None) -> list[list[Any]]:
    """``[offset, value]`` of every acknowledged send (to ``partition`` if given), in history order."""
    return [op["value"][1] for op in ops if op.get("f") == "send" and op.get("type") == "ok"
            and isinstance(op.get("process"), int) and (partition is None or op["value"][0] == partition)]


def no_acked_loss(ops: list[dict[str, Any]], partition: int = 0) -> Check:
    """The check every scenario ends with: the final read completed and holds every acknowledged write of
    the partition at its acknowledged offset (I6, I15)."""
    done, read = final_read_values(ops, partition)
    acked = acked_values(ops, partition)
    lost = [[o, v] for o, v in acked if read.get(o) != v]
    return check(f"every acknowledged write of partition {partition} is in the final read", done and not lost,
                 "final read complete, nothing lost", {"final read": done, "acknowledged": len(acked), "lost": lost},
                 "I6")


def nemesis_invoke_time(ops: list[dict[str, Any]], f: str, default: int | None) -> int | None:
    """History time of the first nemesis invocation of ``f`` (``default`` when there is none)."""
    for op in ops:
        if op.get("process") == "nemesis" and op.get("type") == "invoke" and op.get("f") == f:
            return op.get("time")
    return default
