"""KIP-966 Eligible Leader Replicas: the pure upkeep of ELR and last-known ELR (K1, K2, K4, K5, K12).

The controller keeps two extra lists per partition when ``elr_enabled``:

- ``elr``: replicas that left the ISR while the ISR was below MinISR. L4 freezes the HWM in that state, so
  they still hold every committed record and stay electable (K3).
- ``last_known_elr`` (LKELR): replicas that left the ELR while the ISR was still below MinISR (elected,
  purged after an unclean shutdown, ...). They *may* be complete; they form the unclean-recovery quorum (K7,
  K8).

One function, ``next_elr``, maps (old ISR, old ELR, old LKELR, new ISR, new replicas) to the new ELR and
LKELR. The partition-change builder calls it for every change, so every ISR change (fence, AlterPartition,
reassignment, election) goes through the same rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def _dedupe(items: Iterable[int]) -> list[int]:
    seen: set[int] = set()
    out: list[int] = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def next_elr(
    old_isr: Sequence[int],
    old_elr: Sequence[int],
    old_last_known_elr: Sequence[int],
    new_isr: Sequence[int],
    new_replicas: Sequence[int],
    min_isr: int,
    unclean_shutdown: Iterable[int] = (),
) -> tuple[list[int], list[int]]:
    """Return ``(elr, last_known_elr)`` after the ISR changes from ``old_isr`` to ``new_isr``.

    - K1/K5: a new ISR of at least MinISR empties both lists.
    - K2 ([T] variant: *all* leavers, not just enough of them): members leaving the ISR while it is below
      MinISR join the ELR; existing ELR members stay.
    - K12: anything in the new ISR is removed from the ELR (the TLA+ comment says so; its code forgot).
    - K4: replicas that registered after an unclean shutdown are never in the ELR.
    - K5: a replica leaving the ELR while the ISR is below MinISR goes to the LKELR. Apache Kafka keeps
      ISR and ELR members out of the LKELR to keep records small; we do the same (the TLA+ quirk that also
      keeps an elected ELR member in the LKELR is not reproduced: it is in the ISR, which is stronger).
    - K1: both lists stay inside the replica set.
    """
    if len(new_isr) >= min_isr:
        # K1/K5: enough in-sync replicas again; every ELR guarantee is superseded by the ISR.
        return [], []
    unclean = set(unclean_shutdown)
    isr_set, replicas_set = set(new_isr), set(new_replicas)
    pool = _dedupe(list(old_elr) + list(old_isr))
    elr = [r for r in pool if r not in isr_set and r not in unclean and r in replicas_set]
    elr_set = set(elr)
    departed = [r for r in old_elr if r not in elr_set]
    last_known = [
        r for r in _dedupe(list(old_last_known_elr) + departed)
        if r not in elr_set and r not in isr_set and r in replicas_set
    ]
    return elr, last_known


def elr_invariant_violations(
    replicas: Sequence[int], isr: Sequence[int], elr: Sequence[int], last_known_elr: Sequence[int],
    min_isr: int,
) -> list[str]:
    """K1 as a list of human-readable violations (empty when the partition satisfies it)."""
    problems: list[str] = []
    if set(elr) & set(isr):
        problems.append(f"K1: ELR {list(elr)} intersects ISR {list(isr)}")
    if not set(isr) <= set(replicas) or not set(elr) <= set(replicas):
        problems.append(f"K1: ISR {list(isr)} / ELR {list(elr)} not inside replicas {list(replicas)}")
    if len(isr) >= min_isr and (elr or last_known_elr):
        problems.append(f"K1: ISR {list(isr)} >= MinISR {min_isr} but ELR {list(elr)} / "
                        f"LKELR {list(last_known_elr)} not empty")
    return problems


def balanced_recovery_leader(
    last_known_elr: Sequence[int], replies: dict[int, tuple[int, int]], acceptable: Iterable[int],
) -> int | None:
    """K7 ``balanced`` unclean recovery: once *every* LKELR member answered GetReplicaLogInfo with its
    ``(last epoch, end offset)``, a member with the highest pair leads, the earliest in LKELR among those
    that are live.

    Returns None while an answer is missing, or while no member with the highest pair is live: a member
    that answered but is still fenced (registered again, not caught up with the metadata yet) will be
    live shortly, and electing a less complete member instead would lose what only it holds. Lossless
    when at most MinISR - 1 LKELR members lost data (K8), yet always reported as possible data loss.
    """
    if not last_known_elr or any(r not in replies for r in last_known_elr):
        return None
    best = max(replies[r] for r in last_known_elr)
    live = set(acceptable)
    candidates = [r for r in last_known_elr if replies[r] == best and r in live]
    return candidates[0] if candidates else None


def proactive_recovery_leader(
    asked: Sequence[int], replies: dict[int, tuple[int, int]], acceptable: Iterable[int], window_closed: bool,
) -> int | None:
    """K7 ``proactive`` unclean recovery: every live replica was asked for its ``(last epoch, end offset)``;
    once all of ``asked`` answered, or the short answer window closed, the live replica with the highest
    pair leads (ties: the earlier in ``asked``, i.e. replica order).

    Returns None while answers are pending and the window is open, or when no live replica answered. It
    trades completeness for availability (a replica that did not answer in time may hold more), so the
    election is always reported as possible data loss.
    """
    if not window_closed and any(r not in replies for r in asked):
        return None
    live = set(acceptable)
    candidates = [r for r in asked if r in replies and r in live]
    if not candidates:
        return None
    order = list(asked)
    return max(candidates, key=lambda r: (replies[r], -order.index(r)))
