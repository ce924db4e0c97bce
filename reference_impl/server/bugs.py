"""Deliberate single-rule breaks (``inject.bug``), used to prove that the checkers catch real bugs.

Each entry breaks exactly one rule of docs/protocol-rules.md and is implemented in the server shell (never in
the protocol core, which stays correct): the shell either lies to the core about a configuration value or
answers a client differently from what the core decided. All are off by default; a node config names at
most one. The list is the documentation: ``describe()`` prints it.

Where a switch acts (process / rule / what a checker should see):

- ``ack-before-replication`` (broker, L5): acks=all produce requests are answered right after the local
  append, as if acks=1. A leader crash before the followers fetch loses acknowledged records (I6, I1).
- ``hwm-ignores-isr`` (broker, L3): the leader's HWM follows its own LEO, ignoring what the (Maximal) ISR
  followers have fetched, so acks=all is answered and consumers read before anything is replicated
  (I1, I6, I7 under a leader crash).
- ``fetch-beyond-hwm`` (broker, L10 / I15): consumer fetches are served up to the log end offset instead of
  the HWM, so consumers read records that may later be truncated (I15, I7).
- ``ignore-min-isr`` (broker, L1): the replica core is given ``min.insync.replicas = 1`` whatever the
  configuration says, so acks=all is accepted and acknowledged with an ISR below MinISR (I14).
- ``skip-unclean-exclusion`` (broker, K4 / B3): the clean-shutdown marker is left in place while the broker
  runs, so a broker killed with -9 still presents its old epoch at registration and is treated as clean
  (I13 in K966 runs).
- ``metadata-no-fsync`` (controller, C1): metadata records take effect before they are fsynced, so a
  controller crash can forget changes brokers have already acted on (I5, I11).
- ``unclean-without-opt-in`` (controller, C12): the controller core runs with unclean leader election
  enabled whatever ``unclean.leader.election.enable`` says (I1, I6 under crash faults).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bug:
    """One deliberate rule break: its name, the process it lives in, the rule it breaks, what it does."""

    name: str
    process: str  # "broker" | "controller"
    rule: str
    effect: str


BUGS: dict[str, Bug] = {
    b.name: b
    for b in (
        Bug("ack-before-replication", "broker", "L5",
            "acks=all answered after the local append, before the HWM passes the batch"),
        Bug("hwm-ignores-isr", "broker", "L3",
            "leader HWM = its LEO, whatever the ISR followers have fetched"),
        Bug("fetch-beyond-hwm", "broker", "L10",
            "consumer fetches served up to the log end offset instead of the HWM"),
        Bug("ignore-min-isr", "broker", "L1",
            "replica core told min.insync.replicas=1 regardless of configuration"),
        Bug("skip-unclean-exclusion", "broker", "K4",
            "clean-shutdown marker kept while running, so a crash looks like a clean shutdown"),
        Bug("metadata-no-fsync", "controller", "C1",
            "metadata records applied before they are fsynced"),
        Bug("unclean-without-opt-in", "controller", "C12",
            "unclean leader election enabled regardless of configuration"),
    )
}


def is_active(configured: str | None, name: str) -> bool:
    """True iff the node's ``inject.bug`` setting is ``name`` (raises for a name not in ``BUGS``)."""
    if name not in BUGS:
        raise KeyError(f"unknown bug {name!r}")
    return configured == name


def describe() -> str:
    """The documented list as text, one bug per line."""
    return "\n".join(f"{b.name:24} {b.process:10} {b.rule:4} {b.effect}" for b in BUGS.values())
