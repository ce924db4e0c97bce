"""Configuration control (Kafka's ConfigurationControlManager): dynamic config changes and the lookups.

``set_config`` validates a change and returns it as a ``ConfigRecord``; ``Controller.replay`` stores it in
``Controller.configs``. The lookups the other managers decide with (``min_isr``, ``unclean_enabled``,
``incremental_mode``, ``cluster_int``) resolve a key in Kafka's order: topic override, this controller's
dynamic per-broker value, the dynamic cluster default (resource ``("broker", "")``), then the static
``ControllerConfig``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import OK, Errors, error
from ..historical_bugs import check_historical_bug
from ..partition_change import CompletionRule
from ..records import ConfigRecord
from .result import ControllerResult

if TYPE_CHECKING:
    from ..controller import Controller

MIN_ISR = "min.insync.replicas"
UNCLEAN = "unclean.leader.election.enable"
PARALLEL_REPLICAS = "reassignment.parallel.replica.count"
PARALLEL_PARTITIONS = "reassignment.parallel.partition.count"
PARALLEL_LEADERS = "reassignment.parallel.leader.movements"
REASSIGNMENT_MODE = "reassignment.mode"
REASSIGNMENT_MODES = ("all-at-once", "incremental")
UNCLEAN_RECOVERY_STRATEGIES = ("balanced", "proactive", "manual")
INT_MAX = 2**31 - 1


@dataclass
class ControllerConfig:
    """Static controller configuration (dynamic overrides arrive as ``ConfigRecord``s)."""

    min_isr: int = 1                      # Kafka's default min.insync.replicas
    elr_enabled: bool = False             # protocol.variant = kip966 (K1-K12)
    unclean_election: bool = False        # unclean.leader.election.enable (C12)
    session_timeout_ms: int = 9000        # broker.session.timeout.ms (C6)
    completion_rule: CompletionRule = CompletionRule.MIN_ISR  # C17 / docs/protocol-rules.md 5.8(i)
    incremental_reassignment: bool = False  # KIP-435 mode instead of all-at-once
    parallel_replica_count: int = INT_MAX
    parallel_partition_count: int = INT_MAX
    parallel_leader_movements: int = INT_MAX
    reject_target_below_min_isr: bool = True  # C16 [T]: target RF >= MinISR
    unclean_recovery_strategy: str = "balanced"  # K7: balanced | proactive | manual (KIP-966 only)
    node_id: str | None = None  # this controller's id: a ("broker", node_id) config record overrides ("broker", "")
    historical_bug: str | None = None  # a replaced Kafka design to run instead (historical_bugs); None: off

    def __post_init__(self) -> None:
        check_historical_bug(self.historical_bug)
        if self.unclean_recovery_strategy not in UNCLEAN_RECOVERY_STRATEGIES:
            raise ValueError(f"unknown unclean.recovery.strategy {self.unclean_recovery_strategy!r}; "
                             f"expected one of {', '.join(UNCLEAN_RECOVERY_STRATEGIES)}")


def parse_bool(value: str) -> bool:
    """A Kafka boolean config value ("true" / "false", any case)."""
    if value.lower() not in ("true", "false"):
        raise ValueError(f"not a boolean: {value!r}")
    return value.lower() == "true"


class ConfigurationControl:
    """Dynamic configuration: validates changes into records and answers lookups (module docstring)."""

    def __init__(self, controller: Controller) -> None:
        self._ctl = controller

    def set_config(self, resource_type: str, resource_name: str, name: str, value: str | None) -> ControllerResult:
        """A dynamic config change (cluster: resource ("broker", "")) as a ConfigRecord; KIP-435's
        parallelism settings affect only steps planned after it (seed 002). ``reassignment.mode`` decides how
        reassignments submitted afterwards are driven; a running incremental one takes its next step under
        the mode then in force (all-at-once: the rest of the move in one step)."""
        if resource_type not in ("broker", "topic"):
            return ControllerResult([], error(Errors.INVALID_REQUEST, f"resource type {resource_type!r}"))
        try:
            if value is not None and name in (MIN_ISR, PARALLEL_REPLICAS, PARALLEL_PARTITIONS, PARALLEL_LEADERS):
                if int(value) < 1:
                    raise ValueError(f"{name} must be >= 1")
            if value is not None and name == UNCLEAN:
                parse_bool(value)
            if value is not None and name == REASSIGNMENT_MODE and value not in REASSIGNMENT_MODES:
                raise ValueError(f"{name} must be one of {', '.join(REASSIGNMENT_MODES)}, not {value!r}")
        except ValueError as exc:
            return ControllerResult([], error(Errors.INVALID_CONFIG, str(exc)))
        return ControllerResult([ConfigRecord(resource_type, resource_name, name, value)], OK)

    # -- lookups ---------------------------------------------------------------------------------------------
    def value(self, topic: str | None, key: str, default: str) -> str:
        """``key``'s value for ``topic`` (None: cluster-wide) in Kafka's precedence (module docstring)."""
        configs, node_id = self._ctl.configs, self._ctl.config.node_id
        if topic is not None and key in configs.get(("topic", topic), {}):
            return configs[("topic", topic)][key]
        if node_id is not None and key in configs.get(("broker", node_id), {}):
            return configs[("broker", node_id)][key]
        return configs.get(("broker", ""), {}).get(key, default)

    def cluster_int(self, key: str, default: int) -> int:
        """An integer setting without a topic override (the KIP-435 parallelism limits)."""
        return int(self.value(None, key, str(default)))

    def min_isr(self, topic: str | None = None) -> int:
        """min.insync.replicas for a topic (topic override, then cluster override, then static config)."""
        return int(self.value(topic, MIN_ISR, str(self._ctl.config.min_isr)))

    def unclean_enabled(self, topic: str | None = None) -> bool:
        """unclean.leader.election.enable for a topic (C12)."""
        return parse_bool(self.value(topic, UNCLEAN, str(self._ctl.config.unclean_election).lower()))

    def incremental_mode(self) -> bool:
        """Whether new reassignments are planned as KIP-435 incremental steps: the ``reassignment.mode``
        config record (per-controller, then cluster-wide) over the static setting."""
        static = "incremental" if self._ctl.config.incremental_reassignment else "all-at-once"
        return self.value(None, REASSIGNMENT_MODE, static) == "incremental"
