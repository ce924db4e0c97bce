"""Designs Apache Kafka shipped and later replaced because they lost or diverged data, as switches of the core.

Theory of operation
===================
Each entry names one earlier design of the replication protocol that Kafka's history shows to be unsafe,
with the KIP or JIRA ticket that replaced it. The core carries the switch as a configuration field
(``ReplicaConfig.historical_bug`` on the replica side, ``ControllerConfig.historical_bug`` on the controller
side), off by default; the servers set it from ``inject.bug`` and the simulator from
``SimOptions.inject_bug``, so a real run and a simulated schedule run the very same branch. Each switch is
one small branch at the place the old design differed, named after the entry, so reading the core for the
name shows exactly what the old design did:

- ``truncate-to-hwm`` (replica): a replica becoming a follower truncates its log to its own high watermark,
  and its fetches carry no last-fetched epoch, so the leader never answers with a diverging epoch (the
  design before KIP-101's leader epochs). A follower's HWM lags the leader's, so the cut can remove
  committed records from a replica that stays in the ISR and may be elected next; and records above the
  HWM that differ from the leader's are never found.
- ``fetch-without-leader-epoch`` (replica): fetches carry no current leader epoch, so a leader answers a
  fetch of any epoch (a follower or consumer with stale metadata is served), and a follower checks its log
  against the leader's only once per transition to follower, not on every fetch (the design before
  KIP-320; KAFKA-6880 is the zombie follower it let through: a follower that missed two leader changes
  fetches from the re-elected leader and keeps its uncommitted suffix of the old epoch).
- ``kip279-fast-failover-divergence`` (replica): the leader's epoch lookup answers only an end offset, which
  the follower takes as the end of its own last epoch; when the leader never had that epoch (two fast
  fail-overs), the answer is the start of the leader's next epoch, possibly beyond the follower's log, and
  the follower keeps records the leader does not have (KAFKA-6361, fixed by KIP-279, whose answer carries
  the epoch it describes).
- ``elr-switch-forgotten`` (controller): the partition changes of an unclean broker registration (K4) are
  built with ELR off although the cluster runs KIP-966, so that path follows v3.5's rules: a broker that
  lost its unflushed log stays the last ISR member and is elected again (Last Replica Standing), and the
  ELR is wiped. Kafka closed the door on this kind of slip by making the ELR setting a constructor argument
  of its ``PartitionChangeBuilder`` (KIP-966 follow-ups).

Last Replica Standing itself (KIP-966's motivation) needs no switch: it is the ``v3.5`` variant.
"""

from __future__ import annotations

from dataclasses import dataclass

TRUNCATE_TO_HWM = "truncate-to-hwm"
FETCH_WITHOUT_LEADER_EPOCH = "fetch-without-leader-epoch"
KIP279_FAST_FAILOVER_DIVERGENCE = "kip279-fast-failover-divergence"
ELR_SWITCH_FORGOTTEN = "elr-switch-forgotten"


@dataclass(frozen=True)
class HistoricalBug:
    """One replaced design: its name, the side of the core it lives in, what fixed it, what it did."""

    name: str
    side: str  # "replica" | "controller"
    reference: str
    summary: str


HISTORICAL_BUGS: dict[str, HistoricalBug] = {
    b.name: b
    for b in (
        HistoricalBug(TRUNCATE_TO_HWM, "replica", "KIP-101 (KAFKA-1211)",
                      "a new follower truncates to its high watermark; no epoch-based divergence check"),
        HistoricalBug(FETCH_WITHOUT_LEADER_EPOCH, "replica", "KIP-320 (KAFKA-6880)",
                      "fetches carry no current leader epoch: a leader serves stale followers and consumers"),
        HistoricalBug(KIP279_FAST_FAILOVER_DIVERGENCE, "replica", "KIP-279 (KAFKA-6361)",
                      "the epoch lookup answers the requested epoch with the start of the next known one"),
        HistoricalBug(ELR_SWITCH_FORGOTTEN, "controller", "KIP-966 (PartitionChangeBuilder ELR argument)",
                      "an unclean registration's partition changes are built with ELR off"),
    )
}


def check_historical_bug(name: str | None) -> None:
    """Raise ValueError unless ``name`` is None or a historical bug (of either side: a node names at most
    one, and the other side's switches simply never test it)."""
    if name is not None and name not in HISTORICAL_BUGS:
        raise ValueError(f"unknown historical bug {name!r} (known: {', '.join(HISTORICAL_BUGS)})")


def reference(name: str) -> str:
    """The KIP / ticket that replaced the design ``name`` ("" for a name that is not a historical bug)."""
    bug = HISTORICAL_BUGS.get(name)
    return bug.reference if bug is not None else ""
