"""A subscribing consumer for the queue workload: one kafka-python ``KafkaConsumer`` in a consumer group.

``GroupConsumer`` serves the ops of a process that consumes through the group (``sub_via`` subscribe):

- ``subscribe`` ``[key, ...]``: (re)joins the group with a fresh consumer, subscribed to the topic (all its
  keys); a consumer the process had leaves the group first (LeaveGroup, a clean close), so every
  ``subscribe`` after the first is a member leaving and another joining: a rebalance.
- ``poll``: polls; the completion carries the records per key and ``rebalance_log``, the rebalances the
  consumer went through during the poll, in Jepsen's form with the generation and member added:
  ``[{"type": "revoked"|"assigned", "keys": [...], "generation": g, "member": id}, ...]``.
- ``commit``: commits the consumer's positions (the offsets of the next records it will read); the
  completion's value is ``{key: offset}`` and it carries ``generation`` and ``member`` (the generation
  the commit was sent in, null when it changed while the commit ran). A commit the coordinator refused
  (a rebalance, an unknown member, a stale generation) is ``fail``: nothing was written.
  With ``"stall_ms"`` on the invocation, the consumer first stops heartbeating for that long, as a paused
  process would (its session expires and the group rebalances without it), and then commits from its old
  generation, as a zombie does; afterwards the consumer is abandoned like a crashed one.
- ``crash``: the consumer disappears without closing: its heartbeats stop and its connections are cut,
  no LeaveGroup is sent, so the coordinator finds out only when its session times out. Completes ``info``
  (as Jepsen records a crash): the process is retired and the slot continues with a fresh member.

Every completion carries ``group`` and ``client`` (the library that ran it: kafka-python supports the
classic group protocol, so it runs all of these). The eager range assignor is used, so a rebalance
revokes every partition and assigns the whole new share (the assignment of a generation is complete in
one ``assigned`` event); at the revocation the consumer drops its partitions and their positions as
Java's eager consumer does (``give_up_partitions``), so every assignment starts from the group's
committed offsets.
"""

from __future__ import annotations

import time
from typing import Any

import kafka.errors as errors
from kafka import KafkaConsumer
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.coordinator.assignors.range import RangePartitionAssignor

from harness.spec import RunSpec

CLIENT = "kafka-python"
READ_POLL_MS = 200
HEARTBEAT_INTERVAL_MS = 1000
MAX_POLL_INTERVAL_MS = 15000
# Refusals by the coordinator: the commit was not written.
REFUSED_COMMIT = tuple(getattr(errors, name) for name in (
    "CommitFailedError", "IllegalGenerationError", "UnknownMemberIdError", "RebalanceInProgressError",
    "FencedInstanceIdError") if hasattr(errors, name))


def group_id_for(spec: RunSpec) -> str:
    """The consumer group of the run's subscribing consumers."""
    return f"{spec.topic}-group"


class _Log(ConsumerRebalanceListener):
    """Collects rebalance events as the consumer reports them."""

    def __init__(self, owner: GroupConsumer) -> None:
        self.owner = owner

    def on_partitions_revoked(self, revoked) -> None:
        self.owner.record("revoked", revoked)
        self.owner.give_up_partitions()

    def on_partitions_assigned(self, assigned) -> None:
        self.owner.record("assigned", assigned)


class GroupConsumer:
    """The group side of one process's client (module docstring)."""

    def __init__(self, spec: RunSpec, bootstrap: list[str], op_timeout_s: float | None = None) -> None:
        self.spec = spec
        self.topic = spec.topic
        self.bootstrap = bootstrap
        self.group = group_id_for(spec)
        self.session_timeout_ms = int(spec.group_session_timeout_ms)
        self.op_timeout_s = float(spec.op_timeout_s if op_timeout_s is None else op_timeout_s)
        self.consumer: Any = None
        self.events: list[dict] = []

    # -- identity ------------------------------------------------------------------------------------

    def generation(self) -> tuple[int | None, str | None]:
        """The consumer's current generation and member id (None before it joined)."""
        if self.consumer is None:
            return None, None
        g = self.consumer._coordinator._generation
        if g is None or g.generation_id < 0:
            return None, g.member_id if g is not None and g.member_id else None
        return g.generation_id, g.member_id

    def record(self, kind: str, partitions) -> None:
        generation, member = self.generation()
        self.events.append({"type": kind, "keys": sorted(tp.partition for tp in partitions),
                            "generation": generation, "member": member})

    def give_up_partitions(self) -> None:
        """An eager rebalance begins: drop every partition with its position, as Java's consumer does
        (``ConsumerCoordinator.onJoinPrepare`` clears the assignment after the revocation listener), so a
        partition handed back in the next generation starts from the group's committed offset.
        kafka-python 3.0 keeps a partition's position when it is in both the old and the new assignment
        (``SubscriptionState.assign_from_subscribed``): a member that lost a partition while it could not
        rejoin, and got it back later, would resume from its own stale position below what the group
        committed meanwhile, and the history would blame the broker for the client's choice."""
        consumer = self.consumer
        if consumer is not None:
            consumer._subscription.assign_from_subscribed([])

    def _fields(self, **extra: Any) -> dict:
        return {"group": self.group, "client": CLIENT, **extra}

    # -- consumer lifecycle --------------------------------------------------------------------------

    def _new_consumer(self) -> Any:
        budget_ms = int(self.op_timeout_s * 1000)
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            enable_auto_commit=False,
            # a transactional run's consumers read at its isolation level (KIP-98), the group's included
            isolation_level=self.spec.isolation_level if self.spec.txn else "read_uncommitted",
            auto_offset_reset="earliest",
            partition_assignment_strategy=(RangePartitionAssignor,),
            session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            # The rebalance timeout: how long a rebalance waits for members that do not rejoin (Kafka's
            # 300 s default would let one slow member hold the whole group for most of a run).
            max_poll_interval_ms=MAX_POLL_INTERVAL_MS,
            fetch_max_wait_ms=READ_POLL_MS,
            request_timeout_ms=max(2000, budget_ms // 2),
            retry_backoff_ms=100,
            reconnect_backoff_max_ms=1000,
            metadata_max_age_ms=5000,
            bootstrap_timeout_ms=max(1000, budget_ms // 2),
        )
        consumer.subscribe([self.topic], listener=_Log(self))
        return consumer

    def handle(self) -> Any:
        """The process's consumer, joining the group on first use."""
        if self.consumer is None:
            self.consumer = self._new_consumer()
        return self.consumer

    def abandon(self) -> None:
        """Drop the consumer without leaving the group (a crashed process)."""
        consumer, self.consumer = self.consumer, None
        if consumer is None:
            return
        try:
            consumer._coordinator._close_heartbeat()
            consumer._closed = True
            consumer._client.close()
        except Exception:
            pass

    def close(self) -> None:
        """Leave the group cleanly (never raises)."""
        consumer, self.consumer = self.consumer, None
        if consumer is not None:
            try:
                consumer.close(autocommit=False, timeout_ms=2000)
            except Exception:
                pass

    # -- ops -----------------------------------------------------------------------------------------

    def subscribe(self, op: dict) -> dict:
        """Leave (if a member) and join again with a fresh consumer."""
        self.close()
        self.events.clear()
        self.handle()
        return dict(op, type="ok", error=None, **self._fields())

    def poll(self, op: dict, records_by_key) -> dict:
        """Poll; the completion carries the rebalances the poll went through."""
        consumer = self.handle()
        self.events.clear()
        batches = consumer.poll(timeout_ms=READ_POLL_MS * 2, max_records=500)
        generation, member = self.generation()
        log, self.events = self.events, []
        return dict(op, type="ok", value=records_by_key(batches), error=None, rebalance_log=log,
                    **self._fields(generation=generation, member=member))

    def commit(self, op: dict) -> dict:
        """Commit the positions; with ``stall_ms``, as a zombie after a pause (module docstring)."""
        consumer = self.handle()
        stall_ms = op.get("stall_ms")
        if stall_ms:
            consumer._coordinator._disable_heartbeat()
            time.sleep(stall_ms / 1000)
        offsets = consumer._subscription.all_consumed_offsets()
        value = {str(tp.partition): om.offset for tp, om in sorted(offsets.items(), key=lambda i: i[0].partition)}
        before = self.generation()
        try:
            if not offsets:
                return dict(op, type="fail", value={}, error="nothing to commit",
                            **self._fields(generation=before[0], member=before[1]))
            consumer.commit(offsets)
            outcome: dict = {"type": "ok", "error": None}
        except REFUSED_COMMIT as exc:
            outcome = {"type": "fail", "error": f"{type(exc).__name__}: {exc}"}
        except Exception as exc:
            outcome = {"type": "info", "error": f"{type(exc).__name__}: {exc}"}
        finally:
            if stall_ms:
                self.abandon()
        after = before if stall_ms else self.generation()
        generation = before[0] if before == after else None
        return dict(op, value=value, **outcome, **self._fields(generation=generation, member=before[1]))

    def crash(self, op: dict) -> dict:
        """Disappear without closing (module docstring)."""
        self.abandon()
        return dict(op, type="info", value=None, error="crashed: the consumer stopped without leaving the group",
                    **self._fields())
