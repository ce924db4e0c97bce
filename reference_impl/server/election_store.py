"""The quorum's election state on disk (Kafka's ``quorum-state`` file), for ``RaftNode`` (Q1).

``<log.dirs>/quorum-state`` holds one JSON object ``{"epoch", "voted_for", "leader_id"}``. A write goes to
a temporary file that is fsynced, renamed over the old one and the directory fsynced, so a crash leaves
either the old state or the new one, never a torn file. The ``metadata-no-fsync`` bug skips the fsyncs:
after a power loss the node may then come back with an older epoch or without its vote (I18, I17).
"""

from __future__ import annotations

import json
import os

from reference_impl.protocol.raft.election_state import ElectionState

FILE_NAME = "quorum-state"


class FileElectionStore:
    """An ``ElectionStateStore`` over ``<directory>/quorum-state``."""

    def __init__(self, directory: str, fsync: bool = True) -> None:
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self.path = os.path.join(directory, FILE_NAME)
        self.fsync = fsync
        self.notes: list[str] = []

    def read(self) -> ElectionState | None:
        """The stored state; None when there is none (a fresh node) or it cannot be read (noted)."""
        try:
            with open(self.path, encoding="utf-8") as fh:
                return ElectionState.from_dict(json.load(fh))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            self.notes.append(f"{self.path}: unreadable election state ({exc}); starting from epoch 0")
            return None

    def write(self, state: ElectionState) -> None:
        """Replace the stored state atomically and durably (Q1)."""
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(state.to_dict(), fh)
            fh.flush()
            if self.fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        if self.fsync:
            fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
