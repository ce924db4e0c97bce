"""A workload as one object: its clients, its generator and its final generator (Jepsen's workload map).

The runner drives any ``Workload`` the same way: ``generator(spec)`` feeds the main phase's processes
(beside the nemesis schedule), each process gets a client from ``client_factory``; after the faults are
healed and the cluster recovered, ``final_generator(spec, keys)`` runs on a fresh process until one of its
ops completes ``ok`` (``keys``: the partitions it may read, None for all; the runner narrows them to the
partitions with a leader when recovery gave up) (a fresh generator, process and client per attempt, within ``final_read_timeout_s``).
A workload without a final phase leaves ``final_generator`` None.

Workloads are looked up by ``spec.workload`` in ``workloads.registry``; the runner knows none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.generator import Generator
from harness.interfaces import Client
from harness.spec import RunSpec

ClientFactory = Callable[[int], Client]
"""``process -> opened client`` (the interpreter calls it lazily, on the worker's thread)."""


def no_preferred_node(cluster: Any) -> Callable[[Any], str | None]:
    """``node_for`` of a workload whose clients prefer no node (ops record ``node`` None)."""
    return lambda process: None


@dataclass(frozen=True)
class Workload:
    """Everything the runner needs to run one kind of client traffic (see the module docstring).

    - ``client_factory(spec, cluster, run, op_timeout_s)``: the ``ClientFactory`` of a phase;
      ``op_timeout_s`` (None: the spec's) is the final phase's shorter client budget;
    - ``generator(spec)``: the main phase's invocations (seeded, time-limited by the spec);
    - ``final_generator(spec, keys)``: one attempt of the final phase (None: no final phase);
    - ``node_for(cluster)``: ``process -> node`` the client of that process prefers (recorded in ops);
    - ``required_apis``: the Kafka APIs (by Kafka's names, e.g. ``EndTxn``) the workload cannot run without:
      a system under test whose build lacks one is refused at setup.
    """

    name: str
    client_factory: Callable[[RunSpec, Any, Any, float | None], ClientFactory]
    generator: Callable[[RunSpec], Generator]
    final_generator: Callable[[RunSpec, list[int] | None], Generator] | None = None
    node_for: Callable[[Any], Callable[[Any], str | None]] = no_preferred_node
    required_apis: tuple[str, ...] = ("Produce", "Fetch", "ListOffsets", "Metadata")
