"""What the checkers found in one run, read from its ``results.json`` in one shape.

The checkers state their findings in their own shapes: the queue checker as ``anomalies: {kind: {count,
examples, reason, status}}`` (older results: ``{kind: [entries]}``), the invariant checker as
``invariants: {I1: {valid: false, count, violations, status}}``, the linearizability checker as
``keys: {key: {valid: false, stuck_ops, linearized, ...}}``, the recovery checker as one ``no-recovery``
finding naming the final reads that never completed, the consumer-group checker as ``anomalies: {kind:
[examples]}`` beside ``anomaly_counts`` and ``statuses``. ``findings`` turns each into a ``Finding``
(checker, kind, how many, the guarantee profile's status for it, the stored examples), so the run report
and the published site count and show them the same way. Nothing is judged again: the status is the one
the checker stored (or the run's profile says), the examples are those it kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

OP_REF_KEYS = ("op", "ops", "writer", "reader", "earlier", "later", "cycle", "max_read", "stuck_ops")
"""Keys of a finding's example whose integers are history op indices."""

NON_LINEARIZABLE = "non-linearizable"
NO_RECOVERY = "no-recovery"
FINDING_CHECKERS = ("queue", "groups", "invariants", "linear", "recovery")
"""Checkers whose results ``findings`` reads; a report shows other checkers' lists of findings as found."""
KNOWN_STATUSES = ("known-issue", "expected")
"""Profile statuses of a documented protocol weakness (``checkers.queue.profiles``)."""


@dataclass(frozen=True)
class Finding:
    """One kind of anomaly or one violated invariant in one run."""

    checker: str
    kind: str
    count: int
    status: str
    examples: tuple[dict[str, Any], ...]
    reason: str = ""

    @property
    def known(self) -> bool:
        """Whether the profile classes it as a documented weakness (known issue, or expected in a
        reproduction) rather than a violation or an allowed anomaly."""
        return self.status in KNOWN_STATUSES


def findings(results: dict[str, Any]) -> list[Finding]:
    """Every finding of a run's results (queue anomalies, violated invariants, non-linearizable keys)."""
    checkers = results.get("checkers") or {}
    profile = results.get("profile") or {}
    out = list(_queue(checkers.get("queue"), profile))
    out.extend(_groups(checkers.get("groups")))
    out.extend(_invariants(checkers.get("invariants")))
    out.extend(_linear(checkers.get("linear")))
    out.extend(_recovery(checkers.get("recovery")))
    return out


def op_refs(example: Any) -> list[int]:
    """The history op indices an example names (``OP_REF_KEYS``), in order."""
    refs: list[int] = []
    if not isinstance(example, dict):
        return refs
    for key in OP_REF_KEYS:
        value = example.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            refs.append(value)
        elif isinstance(value, list):
            refs.extend(v for v in value if isinstance(v, int) and not isinstance(v, bool))
    return refs


def _queue(result: Any, profile: dict[str, Any]) -> Iterator[Finding]:
    if not isinstance(result, dict):
        return
    statuses = (result.get("profile") or profile).get("statuses") or {}
    reasons = (result.get("profile") or profile).get("reasons") or {}
    for kind, found in sorted((result.get("anomalies") or {}).items()):
        if isinstance(found, dict):
            examples = [e for e in found.get("examples") or [] if isinstance(e, dict)]
            count = int(found.get("count") or len(examples))
            status = found.get("status") or statuses.get(kind, "forbidden")
            reason = found.get("reason") or reasons.get(kind, "")
        elif isinstance(found, list):
            examples = [e for e in found if isinstance(e, dict)]
            count, status, reason = len(found), statuses.get(kind, "forbidden"), reasons.get(kind, "")
        else:
            continue
        if count:
            yield Finding("queue", kind, count, status, tuple(examples), reason)


def _groups(result: Any) -> Iterator[Finding]:
    if not isinstance(result, dict):
        return
    counts = result.get("anomaly_counts") or {}
    statuses = result.get("statuses") or {}
    for kind, found in sorted((result.get("anomalies") or {}).items()):
        examples = tuple(e for e in found if isinstance(e, dict)) if isinstance(found, list) else ()
        count = int(counts.get(kind) or len(examples))
        status = statuses.get(kind, "forbidden")
        if count:
            yield Finding("groups", kind, count, status, examples, result.get("reason", "") if status != "forbidden"
                          else "")


def _invariants(result: Any) -> Iterator[Finding]:
    if not isinstance(result, dict):
        return
    for name, entry in sorted((result.get("invariants") or {}).items(), key=lambda kv: _inv_order(kv[0])):
        if not isinstance(entry, dict) or entry.get("valid") is not False:
            continue
        violations = tuple(v for v in entry.get("violations") or [] if isinstance(v, dict))
        yield Finding("invariants", name, int(entry.get("count") or len(violations)),
                      entry.get("status") or "forbidden", violations, entry.get("needs", ""))


def _linear(result: Any) -> Iterator[Finding]:
    if not isinstance(result, dict) or result.get("valid") is not False:
        return
    bad = [{"key": key, **info} for key, info in sorted((result.get("keys") or {}).items())
           if isinstance(info, dict) and info.get("valid") is False]
    yield Finding("linear", NON_LINEARIZABLE, len(bad) or 1, result.get("status") or "forbidden", tuple(bad),
                  result.get("reason", ""))


def _recovery(result: Any) -> Iterator[Finding]:
    if not isinstance(result, dict) or result.get("valid") is not False:
        return
    example = {"ops": list(result.get("ops") or []), "errors": list(result.get("errors") or [])}
    yield Finding("recovery", NO_RECOVERY, 1, "forbidden", (example,), result.get("reason", ""))


def _inv_order(name: str) -> tuple[int, str]:
    digits = "".join(c for c in name if c.isdigit())
    return (int(digits) if digits else 0, name)
