"""The queue workload: producers and consumers on one topic, then a final read of everything.

Main phase: every process draws ops from ``QueueOps`` (send / poll / assign, seeded), staggered to the
spec's ``rate`` and cut at ``time_limit_s``. Final phase (after the runner healed every fault and the
cluster recovered): one ``poll`` marked ``"final": true`` on a fresh consumer reads every partition from
offset 0 up to its high watermark (when recovery gave up, only the partitions that have a leader, listed
in the op's ``keys``); if it cannot finish (the cluster is still recovering) it completes
``info`` and is retried by a fresh process until ``final_read_timeout_s`` runs out. The checkers treat the
ops with ``"final": true`` as the final reads ("every ok send is readable at its acknowledged offset").

With transactions (spec ``txn``) the ops are ``txn`` (send and poll micro-ops, committed or aborted) and
``assign`` (``queue_ops.TxnOps``), run by ``txn_client.TxnQueueClient`` with consumers at the spec's
``isolation_level``.
"""

from __future__ import annotations

from typing import Any

from harness.generator import Generator, Once, Stagger, TimeLimit
from harness.spec import RunSpec
from harness.workload import Workload
from workloads.clients import QueueClient
from workloads.group_ops import subscribes
from workloads.queue_ops import QueueOps, TxnOps
from workloads.txn_client import TxnQueueClient

FINAL_READ = {"f": "poll", "value": None, "final": True}


def main_generator(spec: RunSpec) -> Generator:
    """Seeded send/poll/assign mix (with ``txn``: txn/assign) at ``rate`` ops/s for ``time_limit_s`` seconds."""
    kind = TxnOps if spec.txn else QueueOps
    ops = kind(int(spec.keys), send_ratio=float(spec.send_ratio),
               assign_ratio=float(spec.assign_ratio), sub_via=spec.sub_via,
               concurrency=int(spec.concurrency),
               session_timeout_ms=int(spec.group_session_timeout_ms or 6000))
    return TimeLimit(Stagger(ops, float(spec.rate)), float(spec.time_limit_s))


def final_read_op(keys: list[int] | None = None) -> dict[str, Any]:
    """The invocation of one final read: every partition from the beginning, or only ``keys``."""
    return dict(FINAL_READ) if keys is None else {**FINAL_READ, "keys": list(keys)}


def final_generator(spec: RunSpec, keys: list[int] | None = None) -> Generator:
    """One attempt of the final phase: a single final read (of ``keys`` when the runner narrowed it to the
    partitions that have a leader)."""
    return Once(final_read_op(keys))


def client_factory(spec: RunSpec, cluster: Any, run: Any = None,
                   op_timeout_s: float | None = None):
    """A ``process -> opened QueueClient`` function; process ids are spread over the brokers."""
    brokers = cluster.bootstrap_servers()
    names = cluster.brokers()
    final_reads: dict = {}  # the transactional final readers' shared clock (txn_client)

    def make(process: int) -> QueueClient:
        i = process % len(brokers)
        # The preferred broker first; the others stay as bootstrap fallbacks.
        subscriber = subscribes(spec.sub_via, process, int(spec.concurrency))
        if spec.txn:
            client: QueueClient = TxnQueueClient(spec, brokers[i:] + brokers[:i], names[i % len(names)],
                                                 process, final_reads, op_timeout_s, subscriber=subscriber)
        else:
            client = QueueClient(spec, brokers[i:] + brokers[:i], names[i % len(names)], op_timeout_s,
                                 subscriber=subscriber)
        client.open(run, names[i % len(names)])
        return client

    return make


def node_for(cluster: Any):
    """``process -> node name`` matching ``client_factory``'s choice (recorded in ops' ``node``)."""
    names = cluster.brokers()
    return lambda process: names[process % len(names)] if isinstance(process, int) else None


WORKLOAD = Workload(name="queue", client_factory=client_factory, generator=main_generator,
                    final_generator=final_generator, node_for=node_for)
"""The queue workload as the runner sees it (``workloads.registry``)."""
