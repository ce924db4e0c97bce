"""What every Kafka-speaking cluster adapter shares: node processes through a ``Host``, and the cluster's
state as Kafka clients observe it.

A ``KafkaCluster`` subclass says what its nodes are (``nodes``, ``brokers``, ``address``, ``node_id``), how
each starts (``argv``, ``env``) and where its files are (``config_paths``, ``data_path``, ``trace_path``),
and when its brokers count as ready (``brokers_ready``). The rest is common: starting, killing, restarting
and stopping nodes through the host (with the environment nemeses put in ``run.node_env`` applied on every
start, so LD_PRELOAD survives a kill -9 + restart); Metadata, CreateTopics and the leaders and ISRs of a
topic through kafka-python's admin client, asking one broker at a time so a dead broker never hides the
others; waiting for recovery after a heal; a teardown that stops the brokers first, all at once, within a
grace period; and the evidence a run keeps (node logs, configuration files, data listings, traces).

Adapters: ``harness.cluster.RefCluster`` (the reference implementation) and ``harness.sut_cluster.SutCluster``
(any system a ``harness.sut`` description names).
"""

from __future__ import annotations

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

from harness.node_evidence import data_listing, read_trace_file, write_merged_trace

# A stopping node closes its connections and files, each close bounded; this covers them on a loaded machine.
STOP_CLOSE_MARGIN_S = 5.0


class ClusterError(RuntimeError):
    """The cluster could not be brought to the requested state (the message says which node and why)."""


class KafkaCluster:
    """The shared part of the cluster adapters (see the module docstring)."""

    def __init__(self, host: Any, run: Any = None, ready_timeout_s: float = 60.0):
        self.host = host
        self.run = run
        self.ready_timeout_s = ready_timeout_s
        self.spec: Any = None  # harness.spec.RunSpec, given by plan()
        self._lock = threading.RLock()
        self._torn_down = False

    # -- what a subclass says ----------------------------------------------------------------------

    def nodes(self) -> list[str]:
        """Every node of the cluster."""
        raise NotImplementedError

    def brokers(self) -> list[str]:
        """The nodes clients send records to and read them from."""
        raise NotImplementedError

    def node_id(self, node: str) -> int:
        """The Kafka node id ``node`` answers as."""
        raise NotImplementedError

    def address(self, node: str) -> str:
        """``host:port`` the node listens on (and advertises)."""
        raise NotImplementedError

    def argv(self, node: str) -> list[str]:
        """The command that starts ``node``."""
        raise NotImplementedError

    def env(self, node: str) -> dict[str, str]:
        """The node's environment: whatever nemeses put in ``run.node_env`` (libfaketime, ...)."""
        return dict(self.run.node_env.get(node, {})) if self.run is not None else {}

    def config_paths(self, node: str) -> list[Path]:
        """The node's configuration files on the host side (kept with the run's evidence)."""
        return []

    def data_path(self, node: str) -> Path:
        """The node's data directory on the host side."""
        return Path(self.host.node_dir(node)) / "data"

    def trace_path(self, node: str) -> Path | None:
        """The node's kraftcheck trace file, None for a system that emits none."""
        return None

    def brokers_ready(self) -> bool:
        """Whether every broker serves clients (registered and unfenced, where the system fences)."""
        raise NotImplementedError

    def bootstrap_servers(self) -> list[str]:
        """Every broker's ``host:port``."""
        return [self.address(n) for n in self.brokers()]

    # -- lifecycle -------------------------------------------------------------------------------

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
        """Graceful stop (SIGTERM; the reference brokers' controlled shutdown, C8/C9), SIGKILL after
        ``timeout_s``."""
        self.host.stop(node, timeout_s=timeout_s)

    def _dead_nodes(self) -> dict[str, str]:
        """Nodes that should run but exited, with the tail of their log (explains config errors, exit 2)."""
        dead = {}
        for node in self.nodes():
            if not self.host.is_running(node):
                tail = "\n".join(self.host.logs(node).splitlines()[-15:])
                dead[node] = tail
        return dead

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
                if self.brokers_ready():
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
        for node in [*self.brokers(), *(n for n in self.nodes() if n not in self.brokers())]:
            self._stop_quietly(node)

    def stop_grace_s(self) -> float:
        """How long a SIGTERMed broker may take to stop before it is killed."""
        return STOP_CLOSE_MARGIN_S

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
            for config in self.config_paths(node):
                if config.is_file():
                    (out / config.name).write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
            (out / "data-listing.txt").write_text(data_listing(self.data_path(node)), encoding="utf-8")

    def collect_traces(self) -> list[dict]:
        """Every node's trace events (raw monotonic ns), skipping torn or malformed lines."""
        events: list[dict] = []
        for node in self.nodes():
            trace = self.trace_path(node)
            if trace is not None:
                events.extend(read_trace_file(trace, node))
        return events

    def write_trace(self, path: str | os.PathLike, start_ns: int) -> int:
        """Write the merged, time-ordered ``trace.jsonl`` with times relative to ``start_ns``; return count
        (no file at all for a system whose nodes emit no trace)."""
        if all(self.trace_path(node) is None for node in self.nodes()):
            return 0  # a system that emits no trace leaves no trace file: nothing was traced, not "no events"
        events = self.collect_traces()
        return write_merged_trace(path, events, start_ns)
