"""Deliberate single-rule breaks (``inject.bug``), used to prove that the checkers catch real bugs.

Each entry breaks exactly one rule of docs/protocol-rules.md and is implemented in the server shell (never in
the protocol core, which stays correct): the shell either lies to the core about a configuration value or
answers a client differently from what the core decided. All are off by default; a node config names at
most one. The list is the documentation: ``describe()`` prints it.

Where a switch acts (process / rule / what a checker should see; a historical bug names its KIP as its rule):

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
- ``offsets-commit-stale-generation`` (broker, G-commit): the group coordinator accepts an OffsetCommit
  that carries an older generation than the group's (from a member that was replaced), instead of
  ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID, so a zombie consumer moves the group's position back
  (``commit-regression``, then ``poll-below-commit``; in the trace, I23).
- ``group-double-assign`` (broker, G-assign): SyncGroup hands every member the leader's own assignment,
  so two members of one generation own the same partitions (``double-assignment``; in the trace, I24).
- ``txn-markers-not-written`` (broker, TX1, KIP-98 markers): EndTxn(commit) is answered and the transaction
  completed without writing its COMMIT markers, so the committed records stay in an open transaction:
  never readable at read_committed (the queue checker's ``txn-marker-missing``; in the trace, I25).
- ``aborted-read-committed`` (broker, TX2, KIP-98 isolation): read_committed fetches are answered without the
  aborted-transaction list, so consumers return aborted records (G1a, aborted read).
- ``fenced-producer-accepted`` (broker, TX3, KIP-98 fencing): the partition accepts transactional batches from
  a producer epoch older than the one a marker fenced (a zombie producer's writes land; in the trace, I26).

Historical bugs: designs Apache Kafka shipped and replaced because they lost or diverged data. Unlike the
rule breaks above they live in the protocol core, as switches of its configuration
(``reference_impl.protocol.historical_bugs``: the core's ``historical_bug`` field, which the shell sets from
``inject.bug``), so the simulator runs them too (``kraftcheck simulate --inject-bug NAME``). Each names the
KIP or ticket that replaced it (``Bug.reference``; docs/historical-bugs.md tells each story):

- ``truncate-to-hwm`` (broker; KIP-101, KAFKA-1211): a new follower truncates to its HWM, no epochs.
- ``fetch-without-leader-epoch`` (broker; KIP-320, KAFKA-6880): no current leader epoch in fetches.
- ``kip279-fast-failover-divergence`` (broker; KIP-279, KAFKA-6361): the epoch lookup's answer stands for
  the requested epoch even when the leader never had it.
- ``elr-switch-forgotten`` (controller; KIP-966): an unclean registration's changes built with ELR off.
- Last Replica Standing (KIP-966's motivation) needs no switch: it is ``protocol.variant = v3.5``
  (``kraftcheck scenario last-replica-standing --variant v3.5``, ``kraftcheck simulate --variant v3.5``).
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_impl.protocol.historical_bugs import HISTORICAL_BUGS


@dataclass(frozen=True)
class Bug:
    """One deliberate rule break: its name, the process it lives in, the rule it breaks, what it does."""

    name: str
    process: str  # "broker" | "controller"
    rule: str
    effect: str
    reference: str = ""  # the KIP or ticket that replaced the design (historical bugs only)


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
        Bug("offsets-commit-stale-generation", "broker", "G-commit",
            "OffsetCommit of an older generation accepted instead of ILLEGAL_GENERATION"),
        Bug("group-double-assign", "broker", "G-assign",
            "SyncGroup hands every member the leader's assignment"),
        Bug("txn-markers-not-written", "broker", "TX1",
            "EndTxn(commit) answered and completed without writing the COMMIT markers"),
        Bug("aborted-read-committed", "broker", "TX2",
            "read_committed fetches answered without their aborted-transaction list"),
        Bug("fenced-producer-accepted", "broker", "TX3",
            "transactional batches of a fenced (older) producer epoch appended"),
        *(Bug(h.name, "broker" if h.side == "replica" else "controller", h.reference.split()[0], h.summary,
              h.reference) for h in HISTORICAL_BUGS.values()),
    )
}
LAST_REPLICA_STANDING = Bug("last-replica-standing", "controller", "KIP-966",
                            "v3.5 without ELR: the last ISR member is re-elected after losing its log",
                            "KIP-966 (protocol.variant = v3.5, no switch)")
"""Listed with the historical bugs (``describe``); it is a variant, not an ``inject.bug`` value."""


def historical_bug(configured: str | None) -> str | None:
    """The core's ``historical_bug`` setting for a node's ``inject.bug`` (None unless it names one)."""
    return configured if configured in HISTORICAL_BUGS else None


def is_active(configured: str | None, name: str) -> bool:
    """True iff the node's ``inject.bug`` setting is ``name`` (raises for a name not in ``BUGS``)."""
    if name not in BUGS:
        raise KeyError(f"unknown bug {name!r}")
    return configured == name


def describe() -> str:
    """The documented list as text, one bug per line."""
    rows = [*BUGS.values(), LAST_REPLICA_STANDING]
    return "\n".join(f"{b.name:32} {b.process:10} {b.rule:7} {b.effect}"
                     + (f" [{b.reference}]" if b.reference else "") for b in rows)
