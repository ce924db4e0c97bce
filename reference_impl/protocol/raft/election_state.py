"""The quorum's durable election state (Kafka's ``quorum-state`` file): epoch, vote and known leader.

Q1: a voter writes its election state durably before it acts on it (before answering a granted vote,
before sending its own Vote requests as a candidate, before following or leading an epoch). A voter that
forgot a vote after a restart could vote twice in one epoch and elect two leaders (I17); one that forgot
its epoch would go back in time (I18). The store is the caller's: the controller process keeps a file it
fsyncs, the simulator a value that survives its crashes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class ElectionState:
    """What a voter must not forget: its epoch, whom it voted for in it, the leader it knows in it."""

    epoch: int = 0
    voted_for: int | None = None
    leader_id: int | None = None

    def to_dict(self) -> dict:
        """JSON-ready (the process's quorum-state file)."""
        return {"epoch": self.epoch, "voted_for": self.voted_for, "leader_id": self.leader_id}

    @classmethod
    def from_dict(cls, data: dict) -> ElectionState:
        """Inverse of ``to_dict``; ``ValueError`` for a malformed state."""
        try:
            epoch = int(data["epoch"])
            voted = data.get("voted_for")
            leader = data.get("leader_id")
            return cls(epoch, None if voted is None else int(voted), None if leader is None else int(leader))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed election state {data!r}: {exc}") from None


@runtime_checkable
class ElectionStateStore(Protocol):
    """Durable storage of one ``ElectionState``."""

    def read(self) -> ElectionState | None:
        """The state last written (None on a fresh node)."""
        ...

    def write(self, state: ElectionState) -> None:
        """Store ``state`` durably before returning (Q1)."""
        ...


class InMemoryElectionStore:
    """An ``ElectionStateStore`` kept in memory (tests; the simulator's controller disk)."""

    def __init__(self, state: ElectionState | None = None) -> None:
        self.state = state
        self.writes = 0

    def read(self) -> ElectionState | None:
        """The stored state."""
        return self.state

    def write(self, state: ElectionState) -> None:
        """Replace the stored state."""
        self.state = state
        self.writes += 1
