"""The ``Cluster`` adapter for the reference implementation: one controller plus N brokers on a ``Host``.

Node names are ``controller`` (node.id 0) and ``b1`` .. ``bN`` (node.id = the number), so broker ids match
the examples of docs/protocol-rules.md (brokers {1,2,3}). For each node the adapter writes
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

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import kafka.errors as errors
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.protocol.metadata import MetadataRequest

BROKER_PORT = 9092
CONTROLLER_PORT = 9093
CONTROLLER = "controller"
CONTROLLER_ID = 0
CONFIG_NAME = "server.properties"


# A stopping broker closes its fetchers, its server and its controller link, each close bounded by the wire
# layer's grace; this covers them on a loaded machine.
STOP_CLOSE_MARGIN_S = 5.0


class ClusterError(RuntimeError):
    """The cluster could not be brought to the requested state (the message says which node and why)."""


def broker_name(broker_id: int) -> str:
    """Node name of broker ``broker_id``."""
    return f"b{broker_id}"


def render_properties(props: dict[str, Any]) -> str:
    """Java-properties text, one ``key=value`` per line, booleans as true/false, None values omitted."""
    lines = ["# written by kraftcheck (harness/core/cluster.py)"]
    for key, value in props.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def node_properties(spec: dict[str, Any], role: str, node_id: int, listen: str,
                    controller_address: str | None, log_dir: str, trace_file: str) -> dict[str, Any]:
    """The configuration keys of one node for ``spec`` (pure: unit-testable without a host)."""
    props: dict[str, Any] = {
        "node.id": node_id,
        "process.roles": role,
        "listeners": listen,
        "advertised.listeners": listen,
        "log.dirs": log_dir,
        "trace.file": trace_file,
        "protocol.variant": spec["variant"],
        "unclean.leader.election.enable": bool(spec["unclean_leader_election"]),
        "min.insync.replicas": spec["min_isr"],
        "default.replication.factor": spec["replication_factor"],
        "num.partitions": spec["keys"],
        "replica.lag.time.max.ms": spec["replica_lag_time_max_ms"],
        "broker.session.timeout.ms": spec["broker_session_timeout_ms"],
        "broker.heartbeat.interval.ms": spec["broker_heartbeat_interval_ms"],
        "reassignment.mode": spec["reassignment_mode"],
        "flush.messages": spec.get("flush_messages"),
        "flush.ms": spec.get("flush_ms"),
        "inject.bug": spec.get("inject_bug"),
    }
    if role == "broker":
        props["controller.quorum.bootstrap.servers"] = controller_address
    return props


class RefCluster:
    """The reference implementation as a ``harness.core.interfaces.Cluster`` (see the module docstring)."""

    def __init__(self, host: Any, run: Any = None, ready_timeout_s: float = 60.0):
        self.host = host
        self.run = run
        self.ready_timeout_s = ready_timeout_s
        self.spec: dict[str, Any] = {}
        self._broker_ids: list[int] = []
        self._lock = threading.RLock()
        self._torn_down = False

    # -- names and addresses ---------------------------------------------------------------------

    def brokers(self) -> list[str]:
        """Node names of the brokers, in id order."""
        return [broker_name(i) for i in self._broker_ids]

    def nodes(self) -> list[str]:
        """Every node: the controller first, then the brokers."""
        return [CONTROLLER, *self.brokers()]

    def broker_node(self, broker_id: int) -> str | None:
        """Node name of broker ``broker_id`` (None if there is no such broker)."""
        return broker_name(broker_id) if int(broker_id) in self._broker_ids else None

    def node_id(self, node: str) -> int:
        """Kafka node id of ``node``."""
        return CONTROLLER_ID if node == CONTROLLER else int(node.lstrip("b"))

    def address(self, node: str) -> str:
        """``host:port`` the node listens on (and advertises)."""
        port = CONTROLLER_PORT if node == CONTROLLER else BROKER_PORT
        return f"{self.host.ip(node)}:{port}"

    def bootstrap_servers(self) -> list[str]:
        """Every broker's ``host:port``."""
        return [self.address(n) for n in self.brokers()]

    def active_controller(self) -> str:
        """The single controller (a quorum comes later)."""
        return CONTROLLER

    # -- files -----------------------------------------------------------------------------------

    def _paths(self, node: str) -> tuple[Path, Path, Path]:
        """(config file, data dir, trace file) on the host side."""
        base = Path(self.host.node_dir(node))
        return base / CONFIG_NAME, base / "data", base / "trace.jsonl"

    def write_config(self, node: str) -> Path:
        """Write the node's ``server.properties`` and return its host-side path."""
        config, data, trace = self._paths(node)
        data.mkdir(parents=True, exist_ok=True)
        role = "controller" if node == CONTROLLER else "broker"
        props = node_properties(
            self.spec, role, self.node_id(node), self.address(node),
            self.address(CONTROLLER) if role == "broker" else None,
            self.host.node_path(node, str(data)), self.host.node_path(node, str(trace)))
        config.write_text(render_properties(props), encoding="utf-8")
        return config

    def argv(self, node: str) -> list[str]:
        """The command that starts ``node`` (as the node sees its config path)."""
        config, _, _ = self._paths(node)
        module = "reference_impl.server.controller" if node == CONTROLLER else "reference_impl.server.broker"
        return ["python", "-m", module, "--config", self.host.node_path(node, str(config))]

    def env(self, node: str) -> dict[str, str]:
        """Environment for the node: unbuffered output plus whatever nemeses put in ``run.node_env``."""
        env = {"PYTHONUNBUFFERED": "1"}
        if self.run is not None:
            env.update(self.run.node_env.get(node, {}))
        return env

    # -- lifecycle -------------------------------------------------------------------------------

    def setup(self, spec: dict[str, Any]) -> None:
        """Write configs, start the controller and the brokers, wait until all brokers are unfenced."""
        self.spec = spec
        self._broker_ids = list(range(1, int(spec["brokers"]) + 1))
        for node in self.nodes():
            self.write_config(node)
        self.start_node(CONTROLLER)
        for node in self.brokers():
            self.start_node(node)
        self.wait_ready(self.ready_timeout_s)

    def start_node(self, node: str) -> int:
        """Start ``node`` (its config must exist); return its pid."""
        with self._lock:
            if self._torn_down:
                raise ClusterError("cluster is torn down")
            return self.host.start(node, self.argv(node), self.env(node))

    def kill_node(self, node: str) -> int | None:
        """kill -9 ``node``; return the killed pid (None if it was not running)."""
        pid = self.host.pid(node)
        if pid is None:
            return None
        self.host.kill(node, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.host.is_running(node) and time.monotonic() < deadline:
            time.sleep(0.05)
        return pid

    def restart_node(self, node: str) -> int:
        """Start a killed or stopped node again with the same config and environment; return its pid."""
        if self.host.is_running(node):
            pid = self.host.pid(node)
            if pid is not None:
                return pid
        return self.start_node(node)

    def stop_node(self, node: str, timeout_s: float = 10.0) -> None:
        """Graceful stop (SIGTERM: controlled shutdown, C8/C9), SIGKILL after ``timeout_s``."""
        self.host.stop(node, timeout_s=timeout_s)

    def _dead_nodes(self) -> dict[str, str]:
        """Nodes that should run but exited, with the tail of their log (explains config errors, exit 2)."""
        dead = {}
        for node in self.nodes():
            if not self.host.is_running(node):
                tail = "\n".join(self.host.logs(node).splitlines()[-15:])
                dead[node] = tail
        return dead

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

    def wait_recovered(self, timeout_s: float, topic: str | None = None) -> bool:
        """After healing: every node running, every broker unfenced, every partition of ``topic`` led, and
        every broker's metadata showing the same leader and leader epoch for each partition.

        The last condition matters to the final read: a broker that was cut off from the controller still
        believes it leads at its old epoch until its metadata catches up, and a fresh consumer that
        bootstraps from it reads that partition up to the stale high watermark, missing what the real
        leader acknowledged meanwhile."""
        deadline = time.monotonic() + timeout_s
        for node in self.nodes():
            if not self.host.is_running(node):
                self.restart_node(node)
        while time.monotonic() < deadline:
            try:
                if set(self._broker_ids) <= self.metadata_brokers():
                    if topic is None:
                        return True
                    view = self.agreed_leadership(topic)
                    if view and all(leader >= 0 for leader, _ in view.values()):
                        return True
            except Exception:
                pass
            time.sleep(0.5)
        return False

    def agreed_leadership(self, topic: str) -> dict[int, tuple[int, Any]] | None:
        """Partition -> (leader, leader epoch) of ``topic`` when every broker's Metadata says the same, else
        None (a broker disagrees, or does not answer)."""
        views = []
        for node in self.brokers():
            admin = self._admin([self.address(node)], 5.0)
            try:
                topics = self._metadata_from(admin, self.node_id(node), [topic])["topics"]
            finally:
                admin.close()
            views.append({int(p["partition_index"]): (int(p.get("leader_id", -1)), p.get("leader_epoch"))
                          for t in topics if t.get("name") == topic for p in t.get("partitions", [])})
        if not views or any(v != views[0] for v in views[1:]):
            return None
        return views[0]

    def teardown(self) -> None:
        """Stop every node (SIGTERM to all at once, SIGKILL after a grace period); idempotent, never raises.

        The runner calls it before collecting traces and logs (a clean stop traces each replica's log
        contents); the grace period bounds how long a controlled shutdown may take, and signalling every
        broker at once keeps teardown short. A broker SIGKILLed after the grace period traces no summary.
        """
        with self._lock:
            if self._torn_down:
                return
            self._torn_down = True
        for node in self.brokers():
            try:
                self.host.kill(node, signal.SIGTERM)
            except Exception:
                pass
        deadline = time.monotonic() + self.stop_grace_s()
        while time.monotonic() < deadline and any(self._running_quietly(n) for n in self.brokers()):
            time.sleep(0.1)
        for node in [*self.brokers(), CONTROLLER]:
            self._stop_quietly(node)

    def stop_grace_s(self) -> float:
        """How long a SIGTERMed broker may take: its controlled shutdown waits for the controller's
        confirmation for up to one broker session, then closes its logs and connections (bounded too)."""
        session_ms = self.spec.get("broker_session_timeout_ms") or 6000
        return session_ms / 1000 + STOP_CLOSE_MARGIN_S

    def _running_quietly(self, node: str) -> bool:
        try:
            return bool(self.host.is_running(node))
        except Exception:
            return False

    def _stop_quietly(self, node: str) -> None:
        try:
            self.host.stop(node, timeout_s=3.0)
        except Exception:
            pass

    # -- Kafka admin -----------------------------------------------------------------------------

    def _admin(self, servers: list[str], timeout_s: float = 5.0) -> Any:
        ms = int(timeout_s * 1000)
        return KafkaAdminClient(bootstrap_servers=servers, request_timeout_ms=ms,
                                bootstrap_timeout_ms=min(ms, 3000), reconnect_backoff_max_ms=500,
                                client_id="kraftcheck-admin")

    def admin_call(self, fn: Any, timeout_s: float = 5.0) -> Any:
        """Run ``fn(admin, broker_id)`` on an admin client bootstrapped from one broker at a time.

        kafka-python sends an admin request to a random known broker; with a broker down (still listed
        until its session times out) that request may go to the dead one and fail. Asking the brokers one
        by one, each about itself (``broker_id``), keeps Metadata readable whenever any broker answers.
        Raises the last error when none does.
        """
        nodes = sorted(self.brokers(), key=lambda n: not self._running_quietly(n))  # running ones first
        last: BaseException | None = None
        for node in nodes:
            try:
                admin = self._admin([self.address(node)], timeout_s)
            except Exception as exc:
                last = exc
                continue
            try:
                return fn(admin, self.node_id(node))
            except Exception as exc:
                last = exc
            finally:
                try:
                    admin.close()
                except Exception:
                    pass
        raise last if last is not None else ClusterError("no brokers")

    def metadata(self, topics: list[str] | None = None) -> dict[str, Any]:
        """A Metadata response (as a dict) from the first broker that answers, about ``topics`` ([] = none)."""
        return self.admin_call(lambda admin, broker_id: self._metadata_from(admin, broker_id, topics))

    @staticmethod
    def _metadata_from(admin: Any, broker_id: int, topics: list[str] | None) -> dict[str, Any]:
        """The Metadata response of broker ``broker_id`` itself (not of whichever broker answers first)."""
        topic = MetadataRequest.MetadataRequestTopic
        request = MetadataRequest(topics=[topic(name=t) for t in (topics or [])], allow_auto_topic_creation=False)

        async def send() -> Any:
            return await admin._manager.send(request, node_id=broker_id)

        return admin._manager.run(send).to_dict()

    def metadata_brokers(self) -> set[int]:
        """Broker ids in a Metadata response (registered and unfenced, as KRaft reports them).

        (kafka-python's ``describe_cluster`` asks DescribeCluster with include_fenced_brokers=True;
        readiness needs Metadata's view, which lists unfenced brokers only.)
        """
        return {int(b["node_id"]) for b in self.metadata([])["brokers"]}

    def create_topic(self, topic: str, partitions: int, replication_factor: int,
                     timeout_s: float = 30.0, assignment: dict[int, list[int]] | None = None) -> None:
        """CreateTopics through the admin API, then wait until every partition has a leader.

        ``assignment`` (partition -> broker ids, the first being the preferred leader) places the replicas
        explicitly, as ``kafka-topics --replica-assignment`` does; then ``partitions`` and
        ``replication_factor`` are taken from it."""

        deadline = time.monotonic() + timeout_s
        if assignment:
            partitions = len(assignment)
            new_topic = NewTopic(topic, -1, -1, replica_assignments={int(p): [int(b) for b in r]
                                                                    for p, r in assignment.items()})
        else:
            new_topic = NewTopic(topic, partitions, replication_factor)

        def create(admin: Any, broker_id: int) -> None:
            try:
                admin.create_topics([new_topic])
            except errors.TopicAlreadyExistsError:
                pass

        self.admin_call(create)
        while time.monotonic() < deadline:
            try:
                leaders = self.leaders(topic)
                if len(leaders) == partitions and all(v >= 0 for v in leaders.values()):
                    return
            except Exception:
                pass
            time.sleep(0.3)
        raise ClusterError(f"topic {topic}: not every partition has a leader after {timeout_s:g} s")

    def leaders(self, topic: str) -> dict[int, int]:
        """Partition -> leader broker id (-1 when leaderless), from Metadata."""
        return {p: info["leader"] for p, info in self.partitions(topic).items()}

    def partitions(self, topic: str) -> dict[int, dict[str, Any]]:
        """Partition -> ``{"leader", "replicas", "isr", "leader_epoch"}`` from Metadata."""
        topics = self.metadata([topic])["topics"]
        out: dict[int, dict[str, Any]] = {}
        for t in topics:
            if t.get("name") != topic:
                continue
            for p in t.get("partitions", []):
                out[int(p["partition_index"])] = {
                    "leader": int(p.get("leader_id", -1)),
                    "replicas": list(p.get("replica_nodes", [])),
                    "isr": list(p.get("isr_nodes", [])),
                    "leader_epoch": p.get("leader_epoch"),
                }
        return out

    # -- evidence collection ---------------------------------------------------------------------

    def collect_logs(self, dest_dir: str | os.PathLike) -> None:
        """Copy each node's log, config and a listing of its data directory to ``dest_dir/<node>/``."""
        for node in self.nodes():
            out = Path(dest_dir) / node
            out.mkdir(parents=True, exist_ok=True)
            try:
                (out / "node.log").write_text(self.host.logs(node), encoding="utf-8")
            except Exception as exc:
                (out / "node.log").write_text(f"[kraftcheck] could not read logs: {exc}\n", encoding="utf-8")
            config, data, _ = self._paths(node)
            if config.is_file():
                (out / CONFIG_NAME).write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
            (out / "data-listing.txt").write_text(data_listing(data), encoding="utf-8")

    def collect_traces(self) -> list[dict]:
        """Every node's trace events (raw monotonic ns), skipping torn or malformed lines."""
        events: list[dict] = []
        for node in self.nodes():
            _, _, trace = self._paths(node)
            events.extend(read_trace_file(trace, node))
        return events

    def write_trace(self, path: str | os.PathLike, start_ns: int) -> int:
        """Write the merged, time-ordered ``trace.jsonl`` with times relative to ``start_ns``; return count."""
        events = self.collect_traces()
        return write_merged_trace(path, events, start_ns)


def read_trace_file(path: str | os.PathLike, node: str) -> list[dict]:
    """Parse one node's JSONL trace; lines that are not JSON objects with an integer time are skipped."""
    events = []
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return events
    with fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a node killed mid-write leaves a torn last line
            if not isinstance(event, dict) or not isinstance(event.get("time"), int):
                continue
            event.setdefault("node", node)
            event["node_name"] = node
            events.append(event)
    return events


def write_merged_trace(path: str | os.PathLike, events: list[dict], start_ns: int) -> int:
    """Rebase event times onto the run's clock, sort them stably by time and write JSONL."""
    rebased = []
    for event in events:
        event = dict(event)
        event["time"] = int(event["time"]) - start_ns
        rebased.append(event)
    rebased.sort(key=lambda e: e["time"])
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for event in rebased:
            fh.write(json.dumps(event, separators=(",", ":"), default=str) + "\n")
    os.replace(tmp, path)
    return len(rebased)


def data_listing(root: str | os.PathLike) -> str:
    """``size path`` for every file under ``root`` (relative paths, sorted), or a note when absent."""
    root = Path(root)
    if not root.is_dir():
        return f"(no data directory at {root})\n"
    lines = []
    for dirpath, _, filenames in os.walk(root):
        for name in sorted(filenames):
            full = Path(dirpath) / name
            try:
                size = full.stat().st_size
            except OSError:
                size = -1
            lines.append(f"{size:>12} {full.relative_to(root)}")
    return "\n".join(sorted(lines, key=lambda s: s[13:])) + "\n"
