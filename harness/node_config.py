"""The reference implementation's node configuration: ``server.properties`` from a run spec.

The node-process contract is Java-properties text with Kafka's key names where Kafka has one
(``node.id``, ``process.roles``, ``listeners``, ``log.dirs``, ``min.insync.replicas``,
``replica.lag.time.max.ms``, ...) and a few of kraftcheck's own (``protocol.variant``, ``trace.file``,
``inject.bug``, ``reassignment.mode``). Pure functions: unit-testable without a host.
"""

from __future__ import annotations

from typing import Any

from harness.spec import RunSpec

CONTROLLER = "controller"


def controller_names(count: int) -> list[str]:
    """Node names of ``count`` controllers: ``controller`` alone, else ``c1`` .. ``cK`` (the quorum)."""
    return [CONTROLLER] if count == 1 else [f"c{i}" for i in range(1, count + 1)]


def render_properties(props: dict[str, Any]) -> str:
    """Java-properties text, one ``key=value`` per line, booleans as true/false, None values omitted."""
    lines = ["# written by kraftcheck (harness/node_config.py)"]
    for key, value in props.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def node_properties(spec: RunSpec, role: str, node_id: int, listen: str,
                    controller_address: str | None, log_dir: str, trace_file: str,
                    voters: str | None = None) -> dict[str, Any]:
    """The configuration keys of one node for ``spec`` (pure: unit-testable without a host); ``voters`` is
    the controller quorum as ``ID@HOST:PORT,...`` when there are several controllers."""
    props: dict[str, Any] = {
        "node.id": node_id,
        "process.roles": role,
        "listeners": listen,
        "advertised.listeners": listen,
        "log.dirs": log_dir,
        "trace.file": trace_file,
        "protocol.variant": spec.variant,
        "unclean.leader.election.enable": bool(spec.unclean_leader_election),
        "min.insync.replicas": spec.min_isr,
        "default.replication.factor": spec.replication_factor,
        "num.partitions": spec.keys,
        "replica.lag.time.max.ms": spec.replica_lag_time_max_ms,
        "broker.session.timeout.ms": spec.broker_session_timeout_ms,
        "broker.heartbeat.interval.ms": spec.broker_heartbeat_interval_ms,
        "reassignment.mode": spec.reassignment_mode,
        "flush.messages": spec.flush_messages,
        "flush.ms": spec.flush_ms,
        "inject.bug": spec.inject_bug,
    }
    if role == "broker":
        props["controller.quorum.bootstrap.servers"] = controller_address
    if voters:
        props["controller.quorum.voters"] = voters
    return props
