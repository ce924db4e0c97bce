"""The workloads a run can name in ``spec.workload``, each a ``harness.workload.Workload``.

``workload_for(name)`` is the only way the runner (and the scenarios) reach a workload; ``register`` adds
one (a test's, or a project's own), after which a spec naming it runs without any change to the runner.
"""

from __future__ import annotations

from harness.workload import Workload
from workloads import queue

WORKLOADS: dict[str, Workload] = {queue.WORKLOAD.name: queue.WORKLOAD}


class UnknownWorkload(ValueError):
    """``spec.workload`` names no registered workload (the message lists the known ones)."""


def register(workload: Workload) -> None:
    """Make ``workload`` available under its name; a different workload under a taken name is an error."""
    known = WORKLOADS.get(workload.name)
    if known is not None and known is not workload:
        raise ValueError(f"a workload named {workload.name!r} is already registered")
    WORKLOADS[workload.name] = workload


def workload_for(name: str) -> Workload:
    """The workload registered as ``name``; ``UnknownWorkload`` naming the known ones otherwise."""
    try:
        return WORKLOADS[name]
    except (KeyError, TypeError):
        raise UnknownWorkload(f"unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}") from None


def names() -> list[str]:
    """Every registered workload name, sorted."""
    return sorted(WORKLOADS)
