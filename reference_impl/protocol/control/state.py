"""The shapes of the controller's replicated state: one broker's registration, one topic.

Only ``Controller.replay`` creates or changes these objects; the control managers read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import PartitionState


@dataclass
class BrokerRegistration:
    """The controller's view of one broker (docs/protocol-rules.md 1.2)."""

    broker_id: int
    incarnation_id: str
    epoch: int
    fenced: bool = True
    in_controlled_shutdown: bool = False
    host: str = ""
    port: int = 0
    previous_broker_epoch: int = -1
    controlled_shutdown_offset: int | None = None


@dataclass
class TopicInfo:
    """A topic: name, id and its partitions' controller state."""

    name: str
    topic_id: str
    partitions: dict[int, PartitionState] = field(default_factory=dict)
