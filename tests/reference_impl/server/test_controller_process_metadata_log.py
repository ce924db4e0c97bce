"""The controller's durable metadata log (C1): append/fsync, replay at start, torn-line recovery, pulls."""

from __future__ import annotations

import os

import pytest

from reference_impl.protocol.records import (
    FenceBrokerRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    to_dict,
)
from reference_impl.server.metadata_log import MetadataLog


def sample():
    return [RegisterBrokerRecord(1, "inc-1", 0, "127.0.0.2", 9092), TopicRecord("t", "id-t"),
            PartitionRecord("id-t", 0, (1, 2, 3), (1, 2, 3), 1)]


def test_append_assigns_offsets_and_survives_reopen(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    log = MetadataLog(str(tmp_path))
    assert log.append(sample()) == [0, 1, 2]
    assert synced, "C1: the batch must be fsynced before append returns"
    assert log.append([FenceBrokerRecord(1, 0)]) == [3]
    assert log.append([]) == []
    log.close()
    again = MetadataLog(str(tmp_path))
    assert again.end_offset == 4
    assert [(type(r).__name__, o) for r, o in again.replay_items()] == [
        ("RegisterBrokerRecord", 0), ("TopicRecord", 1), ("PartitionRecord", 2), ("FenceBrokerRecord", 3)]
    assert again.replay_items()[2][0] == sample()[2]


def test_torn_last_line_is_cut_and_reported(tmp_path):
    log = MetadataLog(str(tmp_path))
    log.append(sample())
    log.append([FenceBrokerRecord(1, 0)])
    log.close()
    path = os.path.join(str(tmp_path), "metadata.log")
    with open(path, "r+b") as fh:
        fh.truncate(os.path.getsize(path) - 5)
    again = MetadataLog(str(tmp_path))
    assert again.end_offset == 3 and len(again.recovery_notes) == 1
    assert again.append([FenceBrokerRecord(1, 0)]) == [3]
    again.close()
    assert MetadataLog(str(tmp_path)).end_offset == 4


def test_read_from_batch_boundaries(tmp_path):
    log = MetadataLog(str(tmp_path), fsync=False)
    log.append(sample())
    log.append([FenceBrokerRecord(1, 0)])
    log.append([FenceBrokerRecord(1, 0), FenceBrokerRecord(1, 0)])
    assert [b for b, _ in log.read_from(0)] == [0, 3, 4]
    assert [b for b, _ in log.read_from(0, max_records=3)] == [0]
    assert [b for b, _ in log.read_from(0, max_records=1)] == [0]  # at least one whole batch
    assert log.read_from(3)[0][1] == [to_dict(FenceBrokerRecord(1, 0))]
    assert log.read_from(6) == []
    for bad in (1, 5, 7):
        with pytest.raises(ValueError):
            log.read_from(bad)
