"""The scenario record: what a named reproduction is, which seed text it reproduces, and what each protocol
variant is expected to show (see the package docstring)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# What a scenario expects of a variant: ``valid`` (the protocol keeps its guarantees and the run checks
# valid) or ``expected-failure`` (the variant has the documented weakness the scenario reproduces; the
# run shows it and explains it, e.g. Last Replica Standing on v3.5).
OUTCOMES = ("valid", "expected-failure")

# Spec options most scenarios share: one partition, MinISR 2, acks=all, one client, short sessions (so
# fencing, C6, takes seconds), budgets that keep a run within a minute.
COMMON: dict[str, Any] = {
    "keys": 1,
    "min_isr": 2,
    "acks": "all",
    "idempotence": True,
    "nemesis": ["admin", "partition"],
    "concurrency": 1,
    "op_timeout_s": 10.0,
    "recovery_timeout_s": 40.0,
    "final_read_timeout_s": 20.0,
    "broker_session_timeout_ms": 3000,
    "broker_heartbeat_interval_ms": 500,
    "time_limit_s": 60.0,
}


@dataclass(frozen=True)
class Scenario:
    """One named, scripted reproduction.

    ``reproduces`` names the seed (or PROTOCOL.md) section whose text the checks come from; ``expected``
    maps each of ``variants`` to one of ``OUTCOMES``; ``assignment`` places the topic's replicas as the
    seed's example does (partition -> broker ids, preferred leader first), None leaves it to the
    controller.
    """

    name: str
    summary: str
    reproduces: str
    recipe: str
    variants: tuple[str, ...]
    expected: dict[str, str]
    spec_options: dict[str, Any] = field(default_factory=dict)
    script: Callable[..., None] | None = None
    judge: Callable[..., dict[str, Any]] | None = None
    assignment: dict[int, list[int]] | None = None
    needs_root_locally: bool = True
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        missing = [v for v in self.variants if self.expected.get(v) not in OUTCOMES]
        if missing:
            raise ValueError(f"scenario {self.name}: no expected outcome ({'/'.join(OUTCOMES)}) for {missing}")


class UnknownScenario(KeyError):
    """No scenario has that name (the message lists the known ones)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown scenario"
