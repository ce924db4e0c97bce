"""The settings of a simulated cluster and of the schedules generated for it.

Protocol timeouts are scaled down from the servers' defaults (a session of 1.5 s instead of 9 s, a lag
window of 1 s instead of 30 s) so that a schedule of a few simulated seconds goes through several
fence/unfence and shrink/expand cycles; the relations between them are kept (heartbeats well inside a
session, the request timeout above the fetch wait).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from reference_impl.protocol.historical_bugs import HISTORICAL_BUGS
from reference_impl.protocol.replica_messages import VARIANTS

REASSIGNMENT_MODES = ("all-at-once", "incremental")
FAULT_KINDS = ("crash", "crash-lossy", "stop", "isolate", "partition", "one-way", "link", "controller-restart",
               "reassign", "elect", "controller-crash", "controller-crash-lossy", "controller-isolate",
               "controller-partition")
# Faults of the controller quorum: drawn only when there is one (``controllers`` > 1).
QUORUM_FAULT_KINDS = ("controller-crash", "controller-crash-lossy", "controller-isolate", "controller-partition")


@dataclass(frozen=True)
class SimOptions:
    """Everything a schedule depends on besides its seed and events (stored in the schedule file)."""

    variant: str = "v3.5"
    reassignment_mode: str = "all-at-once"  # incremental: KIP-435 steps, one replica at a time
    brokers: int = 3
    controllers: int = 1             # voters of the metadata quorum (1: a quorum of one, no fail-over)
    pre_vote: bool = True            # KIP-996 (Q4)
    election_timeout_ms: int = 150   # the quorum's timers, scaled down like the others (Kafka: 1000, 2000)
    quorum_fetch_timeout_ms: int = 300
    quorum_retry_backoff_ms: int = 50
    partitions: int = 1
    replication_factor: int = 3
    min_isr: int = 2
    duration_ms: int = 6000          # the fault phase: external events happen in [0, duration_ms)
    settle_ms: int = 2500            # the final phase: everything healed and restarted, then read back
    converge_ms: int = 15000         # after settling, the time the cluster has to converge (0: no liveness check)
    max_steps: int = 20000           # a schedule stops here (the final phase is then skipped)
    session_timeout_ms: int = 1500
    heartbeat_interval_ms: int = 300
    replica_lag_time_max_ms: int = 1000
    fetch_backoff_ms: int = 200
    request_timeout_ms: int = 1000
    flush_ms: int | None = None      # None: logs are flushed only by a clean shutdown (the servers' default)
    produces: int = 24               # client writes per schedule (acks=all)
    polls: int = 8                   # client reads per schedule (besides the final reads)
    faults: tuple[str, ...] = FAULT_KINDS
    fault_windows: int = 8           # fault episodes per schedule
    trace_log_summaries: bool = True  # replicas trace log_summary events (I4, I16); off to measure the cost
    steer: float = 0.5               # share of seeds that also get episodes aimed at guards (simulator.steer)
    inject_bug: str | None = None    # a design Kafka replaced (protocol.historical_bugs), run by every node's core
    idempotent: bool = False         # the clients write as idempotent producers (simulator.producers)

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown variant {self.variant!r} (expected one of {', '.join(VARIANTS)})")
        if self.reassignment_mode not in REASSIGNMENT_MODES:
            raise ValueError(f"unknown reassignment mode {self.reassignment_mode!r} "
                             f"(expected one of {', '.join(REASSIGNMENT_MODES)})")
        if not 0.0 <= self.steer <= 1.0:
            raise ValueError(f"steer {self.steer}: a share between 0 and 1")
        if self.controllers < 1:
            raise ValueError(f"controllers {self.controllers}: at least one")
        if not 1 <= self.replication_factor <= self.brokers:
            raise ValueError(f"replication factor {self.replication_factor} with {self.brokers} brokers")
        if not 1 <= self.min_isr <= self.replication_factor:
            raise ValueError(f"min.insync.replicas {self.min_isr} with replication factor {self.replication_factor}")
        if self.inject_bug is not None and self.inject_bug not in HISTORICAL_BUGS:
            raise ValueError(f"unknown bug {self.inject_bug!r} (known: {', '.join(HISTORICAL_BUGS)})")
        unknown = [f for f in self.faults if f not in FAULT_KINDS]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown} (known: {', '.join(FAULT_KINDS)})")
        for name in ("partitions", "duration_ms", "max_steps", "session_timeout_ms", "heartbeat_interval_ms",
                     "replica_lag_time_max_ms", "request_timeout_ms", "election_timeout_ms",
                     "quorum_fetch_timeout_ms", "quorum_retry_backoff_ms"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.idempotent and self.settle_ms <= self.request_timeout_ms:
            # a send's last attempt must end before the final phase reads (simulator.producers)
            raise ValueError(f"idempotent producers need settle_ms ({self.settle_ms}) above request_timeout_ms "
                             f"({self.request_timeout_ms})")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (tuples as lists). ``idempotent`` is written only when on, so a schedule file of
        the default settings is the same bytes as before the option existed."""
        out = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}
        if not self.idempotent:
            del out["idempotent"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimOptions:
        """Inverse of ``to_dict``; unknown keys are an error (a schedule file from another version)."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"unknown options {sorted(unknown)}")
        values = dict(data)
        values.setdefault("controllers", 1)  # schedule files from before the quorum ran one controller
        if "faults" in values:
            values["faults"] = tuple(values["faults"])
        return cls(**values)

    def with_(self, **changes: Any) -> SimOptions:
        """A copy with some settings changed."""
        return dataclasses.replace(self, **changes)
