"""Which trace events trigger a strike, and whom they point at (pure functions over trace events).

A trigger kind names a protocol moment; ``match`` turns an event into a ``Moment`` naming the broker ids
involved, or None when the event is not that moment:

- ``isr-expand``: a leader's ``isr_proposed`` whose proposal adds a replica (``joining`` is the replica
  added; the leader's own ISR change is in flight until the controller answers);
- ``leader-epoch``: ``leader_epoch_start``: a replica just became leader (no follower has fetched yet);
- ``reassignment``: a committed partition state (``metadata_applied``) with replicas being added or
  removed: a reassignment step (``joining`` is the first replica being added);
- ``truncate``: a follower cut its log after a divergence (``joining`` is that follower, catching up).

``Leaders`` keeps the last leader each partition's events named, for moments whose event does not say
(a truncation is reported by the follower).
"""

from __future__ import annotations

from typing import Any, NamedTuple

TRIGGERS = ("isr-expand", "leader-epoch", "reassignment", "truncate")
# Kinds the tail must read: the triggers' own, plus those that tell who leads.
KINDS = ("isr_proposed", "leader_epoch_start", "metadata_applied", "truncate", "role")


class Moment(NamedTuple):
    """A matched trigger: the event, the partition key, and the broker ids it involves (None: unknown)."""

    trigger: str
    event: dict
    partition: tuple[Any, Any]
    leader: int | None
    joining: int | None


def partition_key(event: dict) -> tuple[Any, Any]:
    """The partition an event is about (topic name or id, partition index)."""
    return event.get("topic", event.get("topic_id")), event.get("partition")


def _int(x: Any) -> int | None:
    try:
        return None if x is None or int(x) < 0 else int(x)
    except (TypeError, ValueError):
        return None


class Leaders:
    """The last leader named per partition by the events seen so far."""

    def __init__(self) -> None:
        self.by_partition: dict[tuple[Any, Any], int | None] = {}

    def see(self, event: dict) -> None:
        """Learn from one event (``role``, ``leader_epoch_start``, ``metadata_applied``)."""
        kind = event.get("kind")
        if kind == "leader_epoch_start":
            self.by_partition[partition_key(event)] = _int(event.get("replica"))
        elif kind in ("role", "metadata_applied") and "leader" in event:
            self.by_partition[partition_key(event)] = _int(event.get("leader"))

    def leader(self, key: tuple[Any, Any]) -> int | None:
        """The partition's last known leader id."""
        return self.by_partition.get(key)


def match(trigger: str, event: dict, leaders: Leaders) -> Moment | None:
    """The ``Moment`` if ``event`` is the ``trigger`` moment, else None."""
    kind, key = event.get("kind"), partition_key(event)
    if trigger == "isr-expand" and kind == "isr_proposed":
        isr = set(event.get("isr") or [])
        added = [r for r in event.get("proposed") or [] if r not in isr]
        if added:
            return Moment(trigger, event, key, _int(event.get("replica")), _int(added[0]))
    elif trigger == "leader-epoch" and kind == "leader_epoch_start":
        return Moment(trigger, event, key, _int(event.get("replica")), None)
    elif trigger == "reassignment" and kind == "metadata_applied":
        adding, removing = event.get("adding") or [], event.get("removing") or []
        if adding or removing:
            return Moment(trigger, event, key, _int(event.get("leader")), _int(adding[0]) if adding else None)
    elif trigger == "truncate" and kind == "truncate":
        return Moment(trigger, event, key, leaders.leader(key), _int(event.get("replica")))
    elif trigger not in TRIGGERS:
        raise ValueError(f"unknown trigger {trigger!r}; known: {', '.join(TRIGGERS)}")
    return None
