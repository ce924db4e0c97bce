"""The states of a classic consumer group and the transitions between them, as one table.

Kafka's ``GroupState`` (``GroupMetadata.scala``, ``ClassicGroupState`` in the new coordinator): a group
moves Empty -> PreparingRebalance -> CompletingRebalance -> Stable and back to PreparingRebalance on any
membership change; Dead is where a group ends when its coordinator unloads it. ``VALID_PREVIOUS`` lists,
for each state, the states it may be entered from; any other transition is a broken invariant.
"""

from __future__ import annotations

import enum


class GroupState(enum.Enum):
    """A classic group's state; the value is the name DescribeGroups and ListGroups report."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                                               GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalTransition(RuntimeError):
    """A group was asked to enter a state that the table does not allow from its current one."""


def check_transition(current: GroupState, target: GroupState) -> None:
    """Raise ``IllegalTransition`` unless ``current -> target`` is in ``VALID_PREVIOUS``."""
    if current not in VALID_PREVIOUS[target]:
        raise IllegalTransition(f"group cannot go from {current.value} to {target.value}")
