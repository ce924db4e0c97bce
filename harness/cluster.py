"""The ``Cluster`` adapter for the reference implementation: a controller quorum plus N brokers on a ``Host``.

Node names are ``b1`` .. ``bN`` for the brokers (node.id = the number), so broker ids match the examples of
docs/protocol-rules.md (brokers {1,2,3}), and ``controller`` (node.id 0) for a single controller, or
``c1`` .. ``cK`` (node.id 1001 .. 1000+K) for a quorum of K (``spec.controllers``; every node's
configuration then lists the voters, ``controller.quorum.voters``). ``active_controller`` asks the
controllers with DescribeQuorum (Kafka's API 55, ``quorum_probe``) which of them leads. For each node the
adapter writes
``server.properties`` in the node's directory (the shared node-process contract: Java-properties keys such as
``protocol.variant``, ``min.insync.replicas``, ``log.dirs``, ``trace.file``) and starts
``python -m reference_impl.server.{controller,broker} --config FILE`` through the host, with the node's
extra environment from ``run.node_env`` applied on every start and restart (the clock nemesis's
LD_PRELOAD must survive a kill -9 + restart).

Readiness is what Kafka clients can observe: the Metadata response lists only registered, unfenced brokers
(as in KRaft), so ``setup`` waits until it lists all N. ``create_topic`` goes through kafka-python's admin
client (CreateTopics) and waits until every partition has a leader.

The harness knows nothing of the implementation's internals: besides the config contract it uses only the
Kafka protocol, the host's process control and the files the nodes leave in their directories (logs and
the JSONL trace). ``write_trace`` merges every node's trace into the run's ``trace.jsonl``, rebasing the
raw CLOCK_MONOTONIC times onto the history's clock (the same clock, so events and ops interleave).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.kafka_cluster import STOP_CLOSE_MARGIN_S, ClusterError, KafkaCluster
from harness.node_config import CONTROLLER, controller_names, node_properties, render_properties
from harness.quorum_probe import describe_quorum
from harness.spec import RunSpec

BROKER_PORT = 9092
CONTROLLER_PORT = 9093
CONTROLLER_ID = 0
FIRST_VOTER_ID = 1001
CONFIG_NAME = "server.properties"


def broker_name(broker_id: int) -> str:
    """Node name of broker ``broker_id``."""
    return f"b{broker_id}"


class RefCluster(KafkaCluster):
    """The reference implementation as a ``harness.interfaces.Cluster`` (see the module docstring)."""

    def __init__(self, host: Any, run: Any = None, ready_timeout_s: float = 60.0):
        super().__init__(host, run, ready_timeout_s)
        self._broker_ids: list[int] = []
        self._controllers: list[str] = [CONTROLLER]

    # -- names and addresses ---------------------------------------------------------------------

    def brokers(self) -> list[str]:
        """Node names of the brokers, in id order."""
        return [broker_name(i) for i in self._broker_ids]

    def controllers(self) -> list[str]:
        """Node names of the controllers (the voters of the metadata quorum)."""
        return list(self._controllers)

    def nodes(self) -> list[str]:
        """Every node: the controllers first, then the brokers."""
        return [*self._controllers, *self.brokers()]

    def broker_node(self, broker_id: int) -> str | None:
        """Node name of broker ``broker_id`` (None if there is no such broker)."""
        return broker_name(broker_id) if int(broker_id) in self._broker_ids else None

    def node_id(self, node: str) -> int:
        """Kafka node id of ``node``."""
        if node == CONTROLLER:
            return CONTROLLER_ID
        if node in self._controllers:
            return FIRST_VOTER_ID + int(node[1:]) - 1
        return int(node.lstrip("b"))

    def address(self, node: str) -> str:
        """``host:port`` the node listens on (and advertises)."""
        port = CONTROLLER_PORT if node in self._controllers else BROKER_PORT
        return f"{self.host.ip(node)}:{port}"

    def voters(self) -> str | None:
        """``controller.quorum.voters`` for a quorum of several controllers (None for one)."""
        if len(self._controllers) == 1:
            return None
        return ",".join(f"{self.node_id(c)}@{self.address(c)}" for c in self._controllers)

    def active_controller(self) -> str:
        """The node name of the active controller: the single one, or the quorum leader DescribeQuorum
        names (asked of each running controller in turn; the first controller when none answers)."""
        if len(self._controllers) == 1:
            return self._controllers[0]
        by_id = {self.node_id(c): c for c in self._controllers}
        for node in self._controllers:
            if not self._running_quietly(node):
                continue
            answer = describe_quorum(self.address(node), timeout_s=2.0)
            if answer is not None and answer.get("leader_id") in by_id and answer.get("error_code") in (0, None):
                return by_id[answer["leader_id"]]
            if answer is not None and answer.get("leader_id") in by_id:
                leader = by_id[answer["leader_id"]]
                if self._running_quietly(leader):
                    return leader
        return self._controllers[0]

    # -- files -----------------------------------------------------------------------------------

    def _paths(self, node: str) -> tuple[Path, Path, Path]:
        """(config file, data dir, trace file) on the host side."""
        base = Path(self.host.node_dir(node))
        return base / CONFIG_NAME, base / "data", base / "trace.jsonl"

    def config_paths(self, node: str) -> list[Path]:
        """``server.properties``."""
        return [self._paths(node)[0]]

    def data_path(self, node: str) -> Path:
        """``data/`` in the node directory (``log.dirs``)."""
        return self._paths(node)[1]

    def trace_path(self, node: str) -> Path | None:
        """``trace.jsonl`` in the node directory (``trace.file``)."""
        return self._paths(node)[2]

    def write_config(self, node: str) -> Path:
        """Write the node's ``server.properties`` and return its host-side path."""
        config, data, trace = self._paths(node)
        data.mkdir(parents=True, exist_ok=True)
        role = "controller" if node in self._controllers else "broker"
        props = node_properties(
            self.spec, role, self.node_id(node), self.address(node),
            self.address(self._controllers[0]) if role == "broker" else None,
            self.host.node_path(node, str(data)), self.host.node_path(node, str(trace)), voters=self.voters())
        config.write_text(render_properties(props), encoding="utf-8")
        return config

    def argv(self, node: str) -> list[str]:
        """The command that starts ``node`` (as the node sees its config path)."""
        config, _, _ = self._paths(node)
        module = "reference_impl.server.controller" if node in self._controllers else "reference_impl.server.broker"
        return ["python", "-m", module, "--config", self.host.node_path(node, str(config))]

    def env(self, node: str) -> dict[str, str]:
        """Environment for the node: unbuffered output plus whatever nemeses put in ``run.node_env``."""
        return {"PYTHONUNBUFFERED": "1", **super().env(node)}

    # -- lifecycle -------------------------------------------------------------------------------

    def plan(self, spec: RunSpec) -> None:
        """Name the nodes for ``spec`` (nothing starts)."""
        self.spec = spec
        self._broker_ids = list(range(1, int(spec.brokers) + 1))
        self._controllers = controller_names(int(spec.controllers or 1))

    def setup(self, spec: RunSpec) -> None:
        """Write configs, start the controller and the brokers, wait until all brokers are unfenced."""
        self.plan(spec)
        for node in self.nodes():
            self.write_config(node)
        for node in self._controllers:
            self.start_node(node)
        for node in self.brokers():
            self.start_node(node)
        self.wait_ready(self.ready_timeout_s)

    def wait_ready(self, timeout_s: float) -> set[int]:
        """Wait until Metadata lists every broker; raise ``ClusterError`` on timeout or a dead node."""
        deadline = time.monotonic() + timeout_s
        expected = set(self._broker_ids)
        seen: set[int] = set()
        last_error = None
        while time.monotonic() < deadline:
            dead = self._dead_nodes()
            if dead and not self._torn_down:
                node, tail = next(iter(dead.items()))
                raise ClusterError(f"node {node} exited during startup; last log lines:\n{tail}")
            try:
                seen = self.metadata_brokers()
                if expected <= seen:
                    return seen
            except Exception as exc:  # not up yet: connection refused, no brokers available, ...
                last_error = f"{type(exc).__name__}: {exc}"
            time.sleep(0.3)
        raise ClusterError(f"brokers not all registered and unfenced after {timeout_s:g} s: Metadata "
                           f"lists {sorted(seen)}, want {sorted(expected)}; last error: {last_error}")

    def brokers_ready(self) -> bool:
        """Metadata lists every broker (registered and unfenced, as KRaft reports them)."""
        return set(self._broker_ids) <= self.metadata_brokers()

    def stop_grace_s(self) -> float:
        """How long a SIGTERMed broker may take: its controlled shutdown waits for the controller's
        confirmation for up to one broker session, then closes its logs and connections (bounded too)."""
        session_ms = self.spec.broker_session_timeout_ms or 6000
        return session_ms / 1000 + STOP_CLOSE_MARGIN_S

