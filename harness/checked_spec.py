"""The spec keys the checkers read, said once: ``CheckedSpec``.

The checkers judge stored runs (``spec.json`` beside a history), hand-written partial specs given to
``kraftcheck check``, and specs of older kraftcheck versions, so they cannot assume every option is there.
This table is the one place that says which keys they read, what each means to them, and what they
assume when a key is missing. Every checker entry point turns what it is given (a stored mapping, a
``RunSpec``, or nothing) into a ``CheckedSpec`` with ``CheckedSpec.of`` and reads attributes from then on;
a key given with the wrong type is a ``SpecError`` naming it, never a silent default.

A missing key is not always the run option's default: a spec without ``min_isr`` says nothing about
MinISR (the guarantee profile then assumes no MinISR protection), and a spec without ``controllers``
predates the controller quorum (the quorum invariants do not apply to it). One field is not a spec key
at all (``OBSERVED_KEYS``): how many K7 unclean recoveries the run's trace shows, which the guarantee
profile reads as possible data loss; ``observed`` fills it in once the trace is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from harness.spec import _HINTS, OPTIONS, RunSpec, SpecError, _coerce

# Fields that are no option of the run but what its trace showed: never read from a stored spec, filled in
# from the trace by ``CheckedSpec.observed``.
OBSERVED_KEYS = ("unclean_recoveries",)


@dataclass(frozen=True)
class CheckedSpec:
    """What the checkers know of a run's options (module docstring). Field comments: who reads it."""

    acks: str = "all"                        # lost-write profile; I14 applies to acks=all only
    idempotence: bool | None = None          # duplicates are forbidden only when stated True
    min_isr: int | None = None               # None: not stated (no MinISR protection assumed)
    variant: str = "kip966"                  # the profile's loss rule; I8 does not apply to v3.5
    unclean_leader_election: bool = False    # an unclean election may lose acknowledged writes
    flush_messages: int | None = None        # flush.messages=1: a lossy crash loses nothing acknowledged
    replica_lag_time_max_ms: int | None = None  # the window a lossy crash may still lose writes in
    nemesis: tuple[str, ...] = ()            # the faults asked for (coverage, the guarantee profile)
    test_name: str | None = None             # with scenario: the profile recognises named reproductions
    scenario: str | None = None
    topic: str | None = None                 # maps history keys to traced partitions (I14)
    final_read_timeout_s: float | None = None  # with unseen_deadline_ns: when an unseen write is overdue
    unseen_deadline_ns: int | None = None
    linearizability: bool = True             # whether the linearizability engine runs
    txn: bool = False                        # transactions: G0/G1c by ww edges allowed (Jepsen's :ww-deps);
    #                                          I25/I26 apply
    sub_via: str | None = None               # consumer groups: I23/I24 apply when it names subscribe
    isolation_level: str = "read_committed"  # read_uncommitted: aborted and open transactions are visible
    controllers: int | None = None           # None: a spec from before the quorum (quorum checks n/a)
    sut_facts: Mapping[str, Any] | None = None  # what the system under test declares (environment fact)
    # An observation, not a spec key (``OBSERVED_KEYS``): K7 unclean recoveries the trace shows
    # (``check_run`` fills it in with ``observed``, the simulator as it goes); the profile reads it.
    unclean_recoveries: int = 0

    @classmethod
    def of(cls, spec: CheckedSpec | RunSpec | Mapping[str, Any] | None) -> CheckedSpec:
        """The checkers' view of ``spec``; ``SpecError`` for a key given with the wrong type."""
        if isinstance(spec, CheckedSpec):
            return spec
        if spec is None:
            return cls()
        if isinstance(spec, RunSpec):
            values = {f.name: getattr(spec, f.name) for f in fields(cls) if hasattr(spec, f.name)}
            return cls(**{**values, "acks": str(spec.acks)})
        if not isinstance(spec, Mapping):
            raise SpecError(f"a spec must be a mapping, got {type(spec).__name__}")
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in spec or spec[f.name] is None or f.name in OBSERVED_KEYS:
                continue
            value = spec[f.name]
            if f.name == "sut_facts":
                if not isinstance(value, Mapping):
                    raise SpecError(f"must be an object, got {type(value).__name__}", "sut_facts")
            elif f.name in OPTIONS:
                value = _coerce(f.name, _HINTS[f.name], value, OPTIONS[f.name])
            values[f.name] = str(value) if f.name == "acks" else value
        return cls(**values)

    def observed(self, traces: Any) -> CheckedSpec:
        """This spec with what the trace shows that the profile reads: the K7 recoveries the controller
        traced (``unclean_recovery`` events; a quorum's voters trace it once, the active one)."""
        count = sum(1 for ev in traces if ev.get("kind") == "unclean_recovery")
        return self if count == self.unclean_recoveries else replace(self, unclean_recoveries=count)

    @property
    def acks_all(self) -> bool:
        """Whether producers waited for the whole ISR (Kafka's ``all``, also written ``-1``)."""
        return self.acks in ("all", "-1")

    @property
    def run_name(self) -> str:
        """The scenario or test name, lower case (how the profile recognises named reproductions)."""
        return str(self.scenario or self.test_name or "").lower()
