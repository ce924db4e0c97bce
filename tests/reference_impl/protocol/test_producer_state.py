"""Idempotent producer state: duplicates, out-of-order, epoch bumps, unknown producers, rebuild."""

from __future__ import annotations

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.log import InMemoryLog, LogBatch
from reference_impl.protocol.producer_state import MAX_CACHED_BATCHES, ProducerStateManager, last_sequence
from reference_impl.protocol.records import PartitionState
from reference_impl.protocol.replica import PartitionReplica
from reference_impl.protocol.replica_messages import ProduceBatch, ReplicaConfig

PID = 4000


def appended(psm: ProducerStateManager, log: InMemoryLog, epoch: int, seq: int, count: int = 1) -> LogBatch:
    """Check and append one batch; fails the test if the check refuses it."""
    check = psm.check(PID, epoch, seq, count)
    assert check.should_append, check
    b = LogBatch(log.log_end_offset, count, 1, PID, epoch, seq)
    log.append(b)
    psm.update(b)
    return b


def test_in_sequence_batches_are_accepted_and_tracked():
    psm, log = ProducerStateManager(), InMemoryLog()
    appended(psm, log, 0, 0, 3)
    appended(psm, log, 0, 3, 2)
    entry = psm.entry(PID)
    assert entry.producer_epoch == 0 and entry.last_seq == 4
    assert [(m.first_seq, m.last_seq, m.first_offset, m.last_offset) for m in entry.batches] == [(0, 2, 0, 2),
                                                                                                  (3, 4, 3, 4)]


def test_duplicate_of_a_cached_batch_answers_the_original_offsets():
    psm, log = ProducerStateManager(), InMemoryLog()
    appended(psm, log, 0, 0, 2)
    appended(psm, log, 0, 2, 2)
    check = psm.check(PID, 0, 0, 2)
    assert check.error.ok and not check.should_append
    assert (check.duplicate_of.first_offset, check.duplicate_of.last_offset) == (0, 1)


def test_only_the_last_five_batches_are_cached():
    psm, log = ProducerStateManager(), InMemoryLog()
    for seq in range(MAX_CACHED_BATCHES + 1):
        appended(psm, log, 0, seq)
    assert len(psm.entry(PID).batches) == MAX_CACHED_BATCHES
    assert psm.check(PID, 0, 1, 1).duplicate_of is not None
    # the oldest batch fell out of the cache: its retry is now out of order
    assert psm.check(PID, 0, 0, 1).error.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_out_of_order_sequence():
    psm, log = ProducerStateManager(), InMemoryLog()
    appended(psm, log, 0, 0, 2)
    assert psm.check(PID, 0, 3, 1).error.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert psm.check(PID, 0, 1, 1).error.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER  # overlaps, not cached


def test_old_epoch_is_invalid_and_new_epoch_restarts_at_zero():
    psm, log = ProducerStateManager(), InMemoryLog()
    appended(psm, log, 1, 0, 2)
    assert psm.check(PID, 0, 2, 1).error.code == Errors.INVALID_PRODUCER_EPOCH
    assert psm.check(PID, 2, 5, 1).error.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    appended(psm, log, 2, 0, 1)
    entry = psm.entry(PID)
    assert entry.producer_epoch == 2 and len(entry.batches) == 1
    # a duplicate of the old epoch's batch is no longer recognised (it is from an older epoch)
    assert psm.check(PID, 1, 0, 2).error.code == Errors.INVALID_PRODUCER_EPOCH


def test_unknown_producer_is_accepted_at_any_sequence():
    psm = ProducerStateManager()
    assert psm.check(PID, 3, 999, 1).should_append
    assert psm.check(-1, -1, -1, 1).should_append  # non-idempotent batches are never checked


def test_sequence_wraps_after_int32_max():
    psm, log = ProducerStateManager(), InMemoryLog()
    appended(psm, log, 0, 2**31 - 2, 2)
    assert psm.entry(PID).last_seq == 2**31 - 1
    assert psm.check(PID, 0, 0, 1).should_append
    assert last_sequence(2**31 - 1, 3) == 1


def test_rebuild_after_truncation_forgets_truncated_batches():
    psm, log = ProducerStateManager(), InMemoryLog()
    for seq in range(4):
        appended(psm, log, 0, seq)
    log.truncate_to(2)
    psm.rebuild(log.batches())
    assert psm.entry(PID).last_seq == 1
    assert psm.check(PID, 0, 2, 1).should_append  # the truncated batch can be re-sent
    assert psm.check(PID, 0, 3, 1).error.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    log.truncate_to(0)
    psm.rebuild(log.batches())
    assert psm.entry(PID) is None


def test_leader_answers_duplicates_and_rebuilds_on_restart():
    """Through the replica: a retry gets the original offset; a restarted replica still deduplicates."""
    log = InMemoryLog()
    replica = PartitionReplica(1, "t", 0, log, ReplicaConfig())
    replica.apply_metadata(PartitionState([1], [1], leader=1, leader_epoch=1, partition_epoch=1), 0)
    first = replica.append_as_leader(ProduceBatch(2, b"a", PID, 0, 0), 1, 0)
    assert (first.base_offset, first.duplicate) == (0, False)
    replica.append_as_leader(ProduceBatch(1, b"b", PID, 0, 2), 1, 0)
    retry = replica.append_as_leader(ProduceBatch(2, b"a", PID, 0, 0), 1, 0)
    assert retry.error.ok and retry.duplicate and (retry.base_offset, retry.last_offset) == (0, 1)
    assert log.log_end_offset == 3
    bad = replica.append_as_leader(ProduceBatch(1, b"c", PID, 0, 7), 1, 0)
    assert bad.error.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER and log.log_end_offset == 3
    restarted = PartitionReplica(1, "t", 0, log, ReplicaConfig())
    restarted.apply_metadata(PartitionState([1], [1], leader=1, leader_epoch=2, partition_epoch=2), 0)
    again = restarted.append_as_leader(ProduceBatch(1, b"b", PID, 0, 2), 1, 0)
    assert again.duplicate and again.base_offset == 2
