"""What a script does while the cluster runs: wait for controller states, read the admin view, send single
records with exact outcomes.

A scenario waits on what the controller *committed* (its ``metadata_applied`` trace events), never on
sleeps: ``PartitionWatch.until`` polls the nodes' traces until a predicate over the latest committed state
holds, and fails with what it waited for and what it saw last. The admin view (Metadata and
ListPartitionReassignments) is what any Kafka client can see; scenarios record it next to the trace so a
report shows both. ``SingleShotProducer`` is a Kafka producer that sends each record exactly once
(``retries=0``, not idempotent), so the answer a script records is the broker's answer to that one
attempt (NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND, ...), not what a retry loop made of it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kafka import KafkaAdminClient, KafkaProducer

from kraftcheck.scenarios import observe
from kraftcheck.scenarios.script import ScenarioError
from workloads import queue

# Answers that prove the one attempt appended nothing (L1: the leader refuses before appending).
NOT_APPENDED = ("NotEnoughReplicasError", "MessageSizeTooLargeError", "InvalidTopicError",
                "UnknownTopicOrPartitionError")


class PartitionWatch:
    """The controller's committed state of one partition, read live from the nodes' traces."""

    def __init__(self, runner: Any, run: Any, topic: str, partition: int = 0):
        self.runner = runner
        self.run = run
        self.topic = topic
        self.partition = partition

    def events(self) -> list[dict[str, Any]]:
        """Every node's trace so far (raw monotonic times)."""
        return self.runner.traces()

    def state(self) -> dict[str, Any] | None:
        """The latest committed state."""
        return observe.controller_state(self.events(), self.topic, self.partition)

    def until(self, what: str, predicate: Callable[[dict[str, Any], list[dict[str, Any]]], bool],
              timeout_s: float) -> dict[str, Any]:
        """Wait until ``predicate(state, events)`` holds for the latest committed state; return that state.
        A timeout is a ``ScenarioError`` naming ``what`` and the last state seen."""

        def probe() -> tuple[bool, Any]:
            events = self.events()
            state = observe.controller_state(events, self.topic, self.partition)
            done = state is not None and bool(predicate(state, events))
            return done, state if done else observe.describe_state(state)

        return self.runner.wait_for(self.run, what, probe, timeout_s)

    def until_event(self, what: str, kind: str, timeout_s: float, after_ns: int | None = None,
                    **match: Any) -> dict[str, Any]:
        """Wait for the first trace event of ``kind`` matching ``match`` (at or after raw time ``after_ns``)."""

        def probe() -> tuple[bool, Any]:
            found = observe.events_of(self.events(), kind, after=after_ns, **match)
            return bool(found), found[0] if found else None

        return self.runner.wait_for(self.run, what, probe, timeout_s)


def fenced(runner: Any) -> set[int]:
    """Brokers the controller has fenced and not unfenced since."""
    return observe.fenced_brokers(runner.traces())


def now_ns() -> int:
    """The clock raw trace times use (CLOCK_MONOTONIC, as the nodes stamp their events)."""
    return time.monotonic_ns()


def admin_view(cluster: Any, topic: str, via: list[str] | None = None) -> dict[int, dict[str, Any]]:
    """What a Kafka client sees of the topic: per partition the Metadata replicas, ISR and leader, and the
    ongoing reassignment from ListPartitionReassignments (``None`` when none is listed). ``via`` asks
    those brokers only (a broker cut from the controller answers from a stale image and cannot forward)."""
    admin = KafkaAdminClient(bootstrap_servers=[cluster.address(n) for n in (via or cluster.brokers())],
                             request_timeout_ms=10_000, client_id="kraftcheck-scenario-view")
    try:
        described: dict[int, dict[str, Any]] = {}
        for t in admin.describe_topics([topic]):
            for p in t.get("partitions", []):
                described[int(p["partition_index"])] = {
                    "metadata_replicas": list(p.get("replica_nodes", [])), "metadata_isr": list(p.get("isr_nodes", [])),
                    "metadata_leader": p.get("leader_id")}
        answer = admin.list_partition_reassignments({topic: sorted(described)})
    finally:
        admin.close()
    for tp, v in answer.items():
        if tp.topic == topic and tp.partition in described:
            described[tp.partition]["listed"] = {"replicas": list(v.get("replicas", [])),
                                                 "adding": list(v.get("adding_replicas", [])),
                                                 "removing": list(v.get("removing_replicas", []))}
    for entry in described.values():
        entry.setdefault("listed", None)
    return dict(sorted(described.items()))


class SingleShotProducer:
    """A Kafka producer that sends each record once (no retries, no idempotence), as a history client.

    ``invoke`` takes ``{"f": "send", "value": [partition, value]}`` and completes ``ok`` with
    ``[partition, [offset, value]]``, ``fail`` when the answer proves nothing was appended (``NOT_APPENDED``)
    and ``info`` otherwise (appended or maybe: AFTER_APPEND, timeouts, a lost leadership). The Kafka error
    class name is in ``error`` and ``kafka_error``.
    """

    def __init__(self, cluster: Any, topic: str, acks: Any = "all", timeout_s: float = 10.0):
        self.topic = topic
        self.timeout_s = timeout_s
        ms = int(timeout_s * 1000)
        self._producer = KafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers(), acks=acks, enable_idempotence=False, retries=0,
            linger_ms=0, max_in_flight_requests_per_connection=1, request_timeout_ms=ms,
            delivery_timeout_ms=ms + 1000, max_block_ms=5000, metadata_max_age_ms=1000)
        self._lock = threading.Lock()

    def invoke(self, run: Any, op: dict[str, Any]) -> dict[str, Any]:
        """Send one record; return the completion (see the class docstring)."""
        partition, value = op["value"]
        with self._lock:
            future = self._producer.send(self.topic, value=str(value).encode(), key=str(partition).encode(),
                                         partition=partition)
        try:
            meta = future.get(timeout=self.timeout_s + 5)
        except Exception as exc:
            name = type(exc).__name__
            kind = "fail" if name in NOT_APPENDED else "info"
            return dict(op, type=kind, value=[partition, [None, value]], error=f"{name}: {exc}",
                        kafka_error=name)
        return dict(op, type="ok", value=[partition, [meta.offset, value]], error=None, kafka_error=None)

    def close(self) -> None:
        """Close without waiting long."""
        try:
            self._producer.close(timeout=1)
        except Exception:
            pass


def produce(runner: Any, run: Any, cluster: Any, values: list[int], partition: int = 0, process: int = 0) -> list:
    """Send ``values`` to ``partition`` one by one with the workload's idempotent acks=all client (as any run
    does), each recorded in the history; return the acknowledged ``[offset, value]`` pairs. A send that is
    not acknowledged stops the script: the scenario needs the data in place."""
    client = queue.client_factory(runner.spec, cluster, run)(process)
    acked = []
    try:
        for value in values:
            done = runner.client_op(run, client, process, {"f": "send", "value": [partition, value]}, None)
            if done["type"] != "ok":
                raise ScenarioError(f"send of {value} to partition {partition} was not acknowledged: "
                                    f"{done.get('error')}")
            acked.append(done["value"][1])
    finally:
        client.close()
    return acked


# How long a ListingRecorder waits for its admin client's first answer before the scenario goes on anyway.
READY_TIMEOUT_S = 10.0


class ListingRecorder:
    """Polls ListPartitionReassignments for one partition in a background thread and keeps every distinct
    answer with the raw time it was first seen: the batches an admin client could observe while a
    controller-driven (KIP-435) reassignment runs. ``via`` as in ``admin_view``."""

    def __init__(self, cluster: Any, topic: str, partition: int = 0, interval_s: float = 0.1,
                 via: list[str] | None = None):
        self.topic, self.partition, self.interval_s = topic, partition, interval_s
        self.servers = [cluster.address(n) for n in (via or cluster.brokers())]
        self.seen: list[dict[str, Any]] = []
        self.errors = 0
        self._stop = threading.Event()
        self._polling = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kraftcheck-listing", daemon=True)

    def __enter__(self) -> ListingRecorder:
        """Start polling and return once the first answer is in: the admin client takes a moment to
        connect, and a reassignment started before that could run its first batches unseen."""
        self._thread.start()
        self._polling.wait(READY_TIMEOUT_S)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(10)

    def _loop(self) -> None:
        admin = KafkaAdminClient(bootstrap_servers=self.servers, request_timeout_ms=5000,
                                 client_id="kraftcheck-scenario-listing")
        try:
            while not self._stop.is_set():
                try:
                    answer = admin.list_partition_reassignments({self.topic: [self.partition]})
                except Exception:
                    self.errors += 1
                    answer = None
                if answer is not None:
                    entry = next(({"replicas": list(v.get("replicas", [])), "adding": list(v.get("adding_replicas", [])),
                                   "removing": list(v.get("removing_replicas", []))}
                                  for tp, v in answer.items() if tp.topic == self.topic and tp.partition == self.partition),
                                 None)
                    if not self.seen or self.seen[-1]["listed"] != entry:
                        self.seen.append({"time": now_ns(), "listed": entry})
                self._polling.set()
                self._stop.wait(self.interval_s)
        finally:
            admin.close()


def b3_out_of_isr_after_writes(runner: Any, run: Any, cluster: Any, watch: PartitionWatch) -> tuple[list, dict]:
    """The opening the fencing scenarios share: ISR [1, 2, 3] under leader 1, three acknowledged writes, then
    broker 3 cut off from the leader (both ways) until the leader shrinks it out of the ISR (L14). Returns
    the acknowledged ``[offset, value]`` pairs and the controller's state once 3 is out."""
    watch.until("ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == [1, 2, 3] and s["leader"] == 1, 30)
    acked = produce(runner, run, cluster, [1, 2, 3])
    runner.step(run, "produce", f"acknowledged [offset, value] {acked}", acked=acked)
    runner.fault(run, "start-partition", {"topology": "b3-from-leader", "edges": both_ways("b1", "b3")})
    shrunk = watch.until("the leader to shrink 3 out of the ISR (L14)", lambda s, e: s["isr"] == [1, 2], 20)
    return acked, shrunk


def controllers(cluster: Any) -> list[str]:
    """Every controller node of the cluster (one, or the voters of its quorum)."""
    listed = getattr(cluster, "controllers", None)
    return list(listed()) if callable(listed) else [cluster.active_controller()]


def to_controllers(cluster: Any, node: str) -> list[list[str]]:
    """``node`` cut from every controller, both ways (a broker cut from "the controller": all of them)."""
    return [edge for c in controllers(cluster) for edge in both_ways(node, c)]


def from_controllers_oneway(cluster: Any, node: str) -> list[list[str]]:
    """``node`` cannot reach any controller (it still hears them)."""
    return [[node, c] for c in controllers(cluster)]


def both_ways(a: str, b: str) -> list[list[str]]:
    """The two directed edges between nodes ``a`` and ``b``."""
    return [[a, b], [b, a]]


def expect_effective(completion: dict[str, Any], what: str) -> dict[str, Any]:
    """The completion's evidence; a ``ScenarioError`` when the controller did not answer as the script needs."""
    value = completion.get("value") or {}
    if value.get("effective") is not True:
        raise ScenarioError(f"{what}: {value.get('errors') or value.get('error') or value}")
    return value
