"""``GroupChecker``: the group checks of ``checks`` as one checker result, judged by the queue profile's
loss family (package docstring).

The result is assembled by ``group_result`` from the anomalies, the tally and the statuses, so the Spark
engine, which finds the same anomalies key by key on its workers, builds its result with the same code."""

from __future__ import annotations

from typing import Any

from checkers.groups.checks import CHECKS, find_anomalies
from checkers.groups.extract import Tally, by_key, extract, is_group_op
from checkers.queue.profiles import derive_profile
from harness.checked_spec import CheckedSpec

GROUP_KINDS = tuple(CHECKS)
SHOWN = 20  # anomalies listed per kind (all are counted)


def has_group_ops(ops: list[dict]) -> bool:
    """Whether the history holds consumer-group ops (only then does ``check_run`` add this checker)."""
    return any(is_group_op(op) for op in ops)


def statuses_of(profile: dict) -> tuple[dict[str, str], str]:
    """Each group kind's status and why, from the queue profile (``derive_profile``, before any override):
    its status for lost writes (package docstring)."""
    status = profile["statuses"].get("lost-write", "forbidden")
    if status in ("unknown", "forbidden"):
        return dict.fromkeys(GROUP_KINDS, "forbidden"), (
            "committed offsets and generations are records of a replicated log that may not lose what it "
            "acknowledged in this configuration")
    return dict.fromkeys(GROUP_KINDS, status), (
        f"the queue profile's lost writes are {status} here ({profile['reasons'].get('lost-write', '')}); "
        "committed offsets and generations live in such a log too")


def group_statuses(spec: CheckedSpec, ops: list[dict]) -> tuple[dict[str, str], str]:
    """Each group kind's status and why, for the history ``ops`` (``statuses_of``)."""
    return statuses_of(derive_profile(spec, ops, has_final=any(op.get("final") for op in ops)))


def coordinator_loads(traces: list[dict]) -> int:
    """How often a broker became a group coordinator (its loads in the trace)."""
    return sum(1 for ev in traces if ev.get("kind") == "group_coordinator" and ev.get("action") == "load")


def group_result(found: dict[str, list[dict]], tally: Tally, statuses: dict[str, str], reason: str,
                 loads: int | None) -> dict[str, Any]:
    """The checker's result from every anomaly by kind (``checks.find_anomalies``' order), the tally, the
    statuses and the coordinator loads of the trace (None when no trace was read)."""
    forbidden = [kind for kind, items in found.items() if items and statuses[kind] == "forbidden"]
    counts = tally.counts()
    # "Sometimes" facts: the rare states the run reached (a check that held proves little if the state it
    # guards never arose).
    counts["coordinator_loads"] = loads
    return {
        "valid": False if forbidden else (True if tally.checked else "unknown"),
        "checked": tally.checked,
        "anomaly_types": sorted(kind for kind, items in found.items() if items),
        "forbidden_found": forbidden,
        "anomalies": {kind: items[:SHOWN] for kind, items in found.items() if items},
        "anomaly_counts": {kind: len(items) for kind, items in found.items()},
        "statuses": statuses,
        "reason": reason,
        "counts": counts,
    }


class GroupChecker:
    """The consumer-group checks (``checkers.groups``)."""

    name = "groups"

    def check(self, spec: CheckedSpec, history: list[dict], traces: list[dict]) -> dict[str, Any]:
        """``{"valid", "checked", "anomalies", "anomaly_counts", "statuses", "reason", "counts"}``."""
        steps, tally = extract(history)
        found = find_anomalies(by_key(steps))
        statuses, reason = group_statuses(spec, history)
        return group_result(found, tally, statuses, reason, coordinator_loads(traces))
