"""The queue workload: producers and consumers on one topic, then a final read of everything.

Main phase: every process draws ops from ``QueueOps`` (send / poll / assign, seeded), staggered to the
spec's ``rate`` and cut at ``time_limit_s``. Final phase (after the runner healed every fault and the
cluster recovered): one ``poll`` marked ``"final": true`` on a fresh consumer reads every partition from
offset 0 up to its high watermark (when recovery gave up, only the partitions that have a leader, listed
in the op's ``keys``); if it cannot finish (the cluster is still recovering) it completes
``info`` and is retried by a fresh process until ``final_read_timeout_s`` runs out. The checkers treat the
ops with ``"final": true`` as the final reads ("every ok send is readable at its acknowledged offset").
"""

from __future__ import annotations

from typing import Any

from harness.core.generator import Generator, Once, QueueOps, Stagger, TimeLimit
from harness.core.workload import Workload
from workloads.clients import QueueClient

FINAL_READ = {"f": "poll", "value": None, "final": True}


def main_generator(spec: dict[str, Any]) -> Generator:
    """Seeded send/poll/assign mix at ``rate`` ops/s for ``time_limit_s`` seconds."""
    ops = QueueOps(int(spec["keys"]), send_ratio=float(spec["send_ratio"]),
                   assign_ratio=float(spec["assign_ratio"]))
    return TimeLimit(Stagger(ops, float(spec["rate"])), float(spec["time_limit_s"]))


def final_read_op(keys: list[int] | None = None) -> dict[str, Any]:
    """The invocation of one final read: every partition from the beginning, or only ``keys``."""
    return dict(FINAL_READ) if keys is None else {**FINAL_READ, "keys": list(keys)}


def final_generator(spec: dict[str, Any]) -> Generator:
    """One attempt of the final phase: a single final read (of the spec's ``final_read_keys`` when the
    runner narrowed it to the partitions that have a leader)."""
    return Once(final_read_op(spec.get("final_read_keys")))


def client_factory(spec: dict[str, Any], cluster: Any, run: Any = None,
                   op_timeout_s: float | None = None):
    """A ``process -> opened QueueClient`` function; process ids are spread over the brokers."""
    brokers = cluster.bootstrap_servers()
    names = cluster.brokers()
    client_spec = dict(spec)
    if op_timeout_s is not None:
        client_spec["op_timeout_s"] = op_timeout_s

    def make(process: int) -> QueueClient:
        i = process % len(brokers)
        # The preferred broker first; the others stay as bootstrap fallbacks.
        client = QueueClient(client_spec, brokers[i:] + brokers[:i], names[i % len(names)])
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
