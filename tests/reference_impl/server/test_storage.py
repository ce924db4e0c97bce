"""SegmentLog: segment roll, index lookups, torn-tail recovery, checkpoints, flush policy (B4, B5, K4)."""

from __future__ import annotations

import os

import pytest

from reference_impl.protocol.errors import InvariantViolation
from reference_impl.protocol.log import InMemoryLog, LogBatch
from reference_impl.server.storage import checkpoints
from reference_impl.server.storage.segment import Segment
from reference_impl.server.storage.segment_log import SegmentLog


def batch(base: int, count: int = 1, epoch: int = 1, size: int = 100, pid: int = -1, seq: int = -1) -> LogBatch:
    """A batch with a recognisable payload (offset-stamped so reads can be checked byte for byte)."""
    payload = (f"{base}:{count}:{epoch}|".encode() * size)[:size]
    return LogBatch(base, count, epoch, pid, 0 if pid >= 0 else -1, seq, 1000 + base, payload)


def fill(log, n: int, count: int = 2, epoch_of=lambda i: 1, size: int = 100) -> list[LogBatch]:
    out = []
    for i in range(n):
        b = batch(log.log_end_offset, count, epoch_of(i), size)
        log.append(b)
        out.append(b)
    return out


@pytest.fixture
def pdir(tmp_path):
    return str(tmp_path / "t-0")


def test_append_read_roundtrip_matches_in_memory_log(pdir):
    seg_log, mem = SegmentLog(pdir, segment_bytes=1000), InMemoryLog()
    for i in range(40):
        b = batch(mem.log_end_offset, 1 + i % 3, 1 + i // 10, 50 + i)
        seg_log.append(b)
        mem.append(b)
    assert seg_log.log_end_offset == mem.log_end_offset
    assert seg_log.epoch_start_offsets() == mem.epoch_start_offsets()
    for off in range(0, mem.log_end_offset + 2):
        for max_bytes in (1, 120, 500, 10_000):
            assert seg_log.read(off, max_bytes) == mem.read(off, max_bytes), (off, max_bytes)
    for e in range(0, 7):
        assert seg_log.end_offset_for_epoch(e) == mem.end_offset_for_epoch(e)
        assert seg_log.end_offset_for_epoch(e, 9) == mem.end_offset_for_epoch(e, 9)
    assert seg_log.batches() == mem.batches()


def test_segment_roll_creates_kafka_named_files(pdir):
    log = SegmentLog(pdir, segment_bytes=1000)
    fill(log, 30, count=2, size=100)
    names = sorted(n for n in os.listdir(pdir) if n.endswith(".log"))
    assert len(names) >= 3
    assert names[0] == "00000000000000000000.log"
    bases = [int(n[:-4]) for n in names]
    assert bases == [s.base_offset for s in log.segments]
    # Every segment but the last stays within the configured size.
    for seg in log.segments[:-1]:
        assert seg.size <= 1000
    # Each segment starts where the previous ended.
    for a, b in zip(log.segments, log.segments[1:], strict=False):
        assert a.next_offset == b.base_offset


def test_sparse_index_lookup_points_at_or_before_the_batch(pdir):
    log = SegmentLog(pdir, segment_bytes=1 << 20, index_interval_bytes=300)
    fill(log, 50, count=3, size=100)
    seg = log.segments[0]
    entries = seg.load_index()
    assert entries[0] == (0, 0)
    assert 5 < len(entries) < 50  # sparse: fewer entries than batches, more than one
    assert entries == list(zip(seg.index_offsets, seg.index_positions, strict=True))
    for off in range(0, 150):
        pos = seg.lookup(off)
        exact = seg.position_of(off - off % 3)
        assert pos <= exact
        assert log.read(off, 1)[0].base_offset == off - off % 3


def test_torn_tail_is_truncated_and_reported(pdir):
    log = SegmentLog(pdir)
    written = fill(log, 10, count=2, size=64)
    log.close()
    path = os.path.join(pdir, "00000000000000000000.log")
    size = os.path.getsize(path)
    with open(path, "r+b") as fh:  # tear the last frame: keep only half of it
        fh.truncate(size - 40)
    log2 = SegmentLog(pdir)
    assert log2.log_end_offset == 18
    assert log2.batches() == written[:9]
    assert len(log2.recovery_notes) == 1 and "truncated" in log2.recovery_notes[0]
    # The log is appendable again at the recovered end.
    log2.append(batch(18, 2, 1, 64))
    assert log2.log_end_offset == 20


def test_corrupt_byte_mid_log_cuts_there_and_drops_later_segments(pdir):
    log = SegmentLog(pdir, segment_bytes=700)
    written = fill(log, 20, count=1, size=100)
    assert len(log.segments) >= 3
    first = log.segments[0]
    victim_pos = first.index_positions[0] + 0  # first frame of segment 0...
    pos = first.position_of(2)  # ...no: corrupt the third batch
    assert pos is not None and pos > victim_pos
    log.close()
    with open(first.log_path, "r+b") as fh:
        fh.seek(pos + 30)
        byte = fh.read(1)
        fh.seek(pos + 30)
        fh.write(bytes([byte[0] ^ 0xFF]))
    log2 = SegmentLog(pdir, segment_bytes=700)
    assert log2.log_end_offset == 2
    assert log2.batches() == written[:2]
    assert len(log2.segments) == 1
    assert sorted(os.listdir(pdir)) == sorted(["00000000000000000000.log", "00000000000000000000.index",
                                               "leader-epoch-checkpoint"])
    assert any("CRC mismatch" in n for n in log2.recovery_notes)


def test_truncate_to_mid_batch_rounds_down_across_segments(pdir):
    log = SegmentLog(pdir, segment_bytes=600)
    fill(log, 20, count=3, size=100, epoch_of=lambda i: 1 if i < 10 else 2)
    assert log.epoch_start_offsets() == [(1, 0), (2, 30)]
    assert log.truncate_to(31) == 30
    assert log.epoch_start_offsets() == [(1, 0)]
    assert log.truncate_to(7) == 6
    assert log.log_end_offset == 6 and log.last_epoch == 1
    assert [s.base_offset for s in log.segments] == [0]
    log.close()
    again = SegmentLog(pdir, segment_bytes=600)
    assert again.log_end_offset == 6
    assert checkpoints.read_epoch_checkpoint(os.path.join(pdir, "leader-epoch-checkpoint")) == [(1, 0)]
    assert again.truncate_to(0) == 0 and again.last_epoch == -1


def test_append_rejects_gaps_and_epoch_regressions(pdir):
    log = SegmentLog(pdir)
    log.append(batch(0, 1, 3))
    with pytest.raises(InvariantViolation):
        log.append(batch(5, 1, 3))
    with pytest.raises(InvariantViolation):
        log.append(batch(1, 1, 2))


def test_epoch_checkpoint_rewritten_when_stale(pdir):
    log = SegmentLog(pdir)
    fill(log, 4, epoch_of=lambda i: i + 1)
    log.close()
    path = os.path.join(pdir, "leader-epoch-checkpoint")
    checkpoints.write_epoch_checkpoint(path, [(9, 0)])
    log2 = SegmentLog(pdir)
    assert log2.epoch_start_offsets() == [(1, 0), (2, 2), (3, 4), (4, 6)]
    assert checkpoints.read_epoch_checkpoint(path) == log2.epoch_start_offsets()
    assert any("rebuilt" in n for n in log2.recovery_notes)


def test_hwm_checkpoint_persisted_and_clamped_to_recovered_leo(pdir):
    log = SegmentLog(pdir)
    fill(log, 5, count=2)
    log.checkpoint_high_watermark(8)
    assert log.persist_high_watermark() is True
    assert log.persist_high_watermark() is False
    log.close()
    assert SegmentLog(pdir).checkpointed_high_watermark() == 8
    seg_path = os.path.join(pdir, "00000000000000000000.log")
    with open(seg_path, "r+b") as fh:
        fh.truncate(os.path.getsize(seg_path) - 10)
    recovered = SegmentLog(pdir)
    assert recovered.log_end_offset == 8 and recovered.checkpointed_high_watermark() == 8
    recovered.truncate_to(4)
    recovered.close()
    # Truncation does not rewrite the checkpoint, but reopening clamps it to the LEO.
    assert SegmentLog(pdir).checkpointed_high_watermark() == 4


def test_flush_messages_policy_fsyncs_every_n_records(pdir, monkeypatch):
    calls = []
    real = Segment.flush
    monkeypatch.setattr(Segment, "flush", lambda self: (calls.append(self.next_offset), real(self)))
    log = SegmentLog(pdir, flush_messages=5)
    fill(log, 6, count=2)  # 12 records: flushes after records 6 and 12 (counter reset on each flush)
    assert calls == [6, 12]


def test_flush_ms_policy_and_default_leaves_it_to_the_os(pdir, monkeypatch):
    calls = []
    real = Segment.flush
    monkeypatch.setattr(Segment, "flush", lambda self: (calls.append(self.next_offset), real(self)))
    default = SegmentLog(pdir + "a")
    fill(default, 3)
    assert not default.maybe_flush(0) and not default.maybe_flush(10**12)
    assert calls == []
    timed = SegmentLog(pdir + "b", flush_ms=100)
    timed.maybe_flush(1000)
    fill(timed, 2)
    assert timed.maybe_flush(1050) is False
    assert timed.maybe_flush(1100) is True
    assert timed.maybe_flush(1300) is False  # nothing new to flush
    assert calls == [4]


def test_clean_shutdown_marker_is_consumed_at_start(tmp_path):
    d = str(tmp_path)
    assert checkpoints.consume_clean_shutdown_marker(d) == -1
    checkpoints.write_clean_shutdown_marker(d, 42)
    assert checkpoints.consume_clean_shutdown_marker(d, keep=True) == 42
    assert checkpoints.consume_clean_shutdown_marker(d) == 42
    # K4 [D]: the marker describes only the latest shutdown; a crash after this start is unclean.
    assert checkpoints.consume_clean_shutdown_marker(d) == -1
    with open(os.path.join(d, checkpoints.CLEAN_SHUTDOWN_FILE), "w") as fh:
        fh.write("{garbage")
    assert checkpoints.consume_clean_shutdown_marker(d) == -1


def test_malformed_checkpoints_read_as_missing(tmp_path):
    p = str(tmp_path / "cp")
    for text in ("", "1\n0\n", "0\n2\n1 0\n", "0\n1\nx y\n"):
        with open(p, "w") as fh:
            fh.write(text)
        assert checkpoints.read_epoch_checkpoint(p) is None
        assert checkpoints.read_hwm_checkpoint(p) == {}
    checkpoints.write_hwm_checkpoint(p, {("a", 1): 5, ("b", 0): 7})
    assert checkpoints.read_hwm_checkpoint(p) == {("a", 1): 5, ("b", 0): 7}


def test_delete_removes_directory(pdir):
    log = SegmentLog(pdir, segment_bytes=500)
    fill(log, 10)
    log.delete()
    assert not os.path.exists(pdir)
