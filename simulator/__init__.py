"""A deterministic simulator of a whole cluster on the protocol core (``kraftcheck simulate``).

Theory of operation
===================
The controllers and the brokers are the very sans-IO objects the server processes run
(``reference_impl.protocol``: ``QuorumController`` over ``RaftNode`` and ``Controller``, ``BrokerLifecycle``,
``MetadataImage``, ``PartitionReplica`` over an ``InMemoryLog``; one controller, or a quorum of them with
``SimOptions.controllers``) driven by the same node loops (``controller_loop``, ``broker_session``,
``follower_fetch``, ``isr_loop``), in one process, on a simulated clock, with a simulated network between
them (``network``: delays, reordering, drops, duplicates, cuts). The simulator adds no protocol rule of its
own: a node here (``controller_node``, ``broker_node``) only moves messages and timers between core calls,
as the asyncio shells do with sockets and sleeps.

A run (``world``) follows a **schedule** (``schedule``): a seed plus external events at simulated times
(client writes and reads, crashes with or without loss of unflushed writes, clean stops, restarts,
controller-only and one-way partitions, lossy or duplicating links, controller restarts, reassignments,
elections; with a quorum also crashes, lossy crashes, isolation and cuts of the voters, the active
controller among the targets). Everything random is drawn from the seed, so a schedule replays byte for byte.
One schedule in five also carries a scripted episode (``historical_episodes``: a zombie follower, a double
fast fail-over) aimed at the windows of two bugs Kafka shipped; ``SimOptions.inject_bug`` runs such a
replaced design in every node's core (``reference_impl.protocol.historical_bugs``). With
``SimOptions.idempotent`` the clients write as idempotent producers (``producers``: producer ids, sequences,
retries of the same batch), which runs the partitions' producer state.

``quorum_watch`` demands fail-over while a connected majority of voters runs. After every step the nodes'
trace events (the same events the servers write, from the same code) go
through the checkers' own invariant sweep (``checkers.invariants.TraceSweep``); at the end the client
history goes through the history invariants (``monitor``). The first violation ends the run; ``shrink``
then removes events (delta debugging) while the same rule still breaks, and the CLI (``cli``) writes the
short schedule to a file that ``kraftcheck simulate --replay FILE`` runs again.

Entry points: ``simulate(seed, options) -> Result`` (in process, cheap to call many times, e.g. against
patched protocol code), ``run_schedule``, ``search`` (many seeds, on several processes), ``shrink``.
"""

from simulator.options import SimOptions
from simulator.runner import Result, run_schedule, search, simulate
from simulator.schedule import Schedule, generate
from simulator.shrink import shrink

__all__ = ["Result", "Schedule", "SimOptions", "generate", "run_schedule", "search", "shrink", "simulate"]
