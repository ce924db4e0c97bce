"""What every control manager hands back: the records to commit and the answer to send once they are.

Kafka's managers return a ``ControllerResult<T>`` (records plus a response) and never touch the state they
read; the ``Controller`` appends the records, replays them, and only then sends the response (C1). A result
without records is answered at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..records import PartitionState

TopicPartition = tuple[str, int]


@dataclass
class ControllerResult:
    """What a handler returns: records to commit (then replay) and the response to send after commit."""

    records: list[Any]
    response: Any = None
    # The partition-change builder's named intermediate states (seed 001's steps), for tests and traces.
    trace: list[tuple[str, PartitionState]] = field(default_factory=list)
