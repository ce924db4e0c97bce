"""The transaction coordinator's rules (reference_impl/protocol/txn/coordinator.py), record by record."""

from __future__ import annotations

import pytest

from reference_impl.protocol.errors import Errors, InvariantViolation
from reference_impl.protocol.txn import TransactionCoordinator, TxnMetadata, TxnState, partition_for
from reference_impl.protocol.txn.partitioning import java_string_hash

T0 = 1_000
TIMEOUT = 60_000


def durable(coord: TransactionCoordinator, decision):
    """What the shell does once the append is acknowledged: replay every record."""
    for record in decision.records:
        coord.replay(record)
    return decision


def started(coord: TransactionCoordinator, tid: str = "t", pid: int = 7):
    d = durable(coord, coord.init_producer_id(tid, TIMEOUT, T0, new_producer_id=pid))
    assert d.error.ok and (d.producer_id, d.producer_epoch) == (pid, 0)
    return d.producer_id, d.producer_epoch


def test_java_hash_matches_kafka_and_partition_is_stable():
    # values of java.lang.String#hashCode
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert partition_for("polygenelubricants", 7) == 0  # Utils.abs(MIN_VALUE) == 0
    assert partition_for("hello", 50) == 99162322 % 50


def test_new_id_then_commit_writes_prepare_then_complete():
    c = TransactionCoordinator(0)
    pid, epoch = started(c)
    assert c.txns["t"].state == TxnState.EMPTY
    d = durable(c, c.add_partitions("t", pid, epoch, [("q", 1), ("q", 0)], T0 + 1))
    assert d.error.ok
    assert c.txns["t"] == TxnMetadata("t", pid, 0, TIMEOUT, TxnState.ONGOING, (("q", 0), ("q", 1)), T0 + 1, T0 + 1)
    durable(c, c.end_txn("t", pid, epoch, True, T0 + 2))
    assert c.txns["t"].state == TxnState.PREPARE_COMMIT
    job = c.markers("t")
    assert job is not None and job.commit and job.partitions == (("q", 0), ("q", 1)) and job.producer_epoch == 0
    assert c.incomplete() == ["t"]
    durable(c, c.complete("t", T0 + 3))
    assert c.txns["t"] == TxnMetadata("t", pid, 0, TIMEOUT, TxnState.COMPLETE_COMMIT, (), -1, T0 + 3)
    assert c.markers("t") is None and c.incomplete() == []


def test_requests_while_a_record_is_in_flight_are_concurrent():
    c = TransactionCoordinator(0)
    pid, epoch = started(c)
    pending = c.add_partitions("t", pid, epoch, [("q", 0)], T0)
    assert c.end_txn("t", pid, epoch, True, T0).error.code == Errors.CONCURRENT_TRANSACTIONS
    c.abandon("t")  # the append failed: the durable state is unchanged and requests go through again
    assert c.txns["t"].state == TxnState.EMPTY
    assert c.end_txn("t", pid, epoch, True, T0).error.code == Errors.INVALID_TXN_STATE
    assert pending.records


def test_second_init_fences_the_first_and_aborts_its_ongoing_transaction():
    c = TransactionCoordinator(0)
    pid, epoch = started(c)
    durable(c, c.add_partitions("t", pid, epoch, [("q", 0)], T0))
    fence = c.init_producer_id("t", TIMEOUT, T0 + 5, new_producer_id=99)
    assert fence.error.code == Errors.CONCURRENT_TRANSACTIONS  # the client retries
    durable(c, fence)
    assert c.txns["t"].state == TxnState.PREPARE_ABORT and c.txns["t"].producer_epoch == 1
    job = c.markers("t")
    assert job is not None and not job.commit and job.producer_epoch == 1  # markers fence epoch 0
    # the old producer is fenced from here on
    assert c.end_txn("t", pid, epoch, True, T0 + 6).error.code == Errors.PRODUCER_FENCED
    assert c.init_producer_id("t", TIMEOUT, T0 + 6, 99).error.code == Errors.CONCURRENT_TRANSACTIONS
    durable(c, c.complete("t", T0 + 7))
    again = durable(c, c.init_producer_id("t", TIMEOUT, T0 + 8, new_producer_id=99))
    assert again.error.ok and (again.producer_id, again.producer_epoch) == (pid, 2)
    assert c.add_partitions("t", pid, 1, [("q", 0)], T0 + 9).error.code == Errors.PRODUCER_FENCED
    assert c.add_partitions("t", pid + 1, 2, [("q", 0)], T0 + 9).error.code == Errors.INVALID_PRODUCER_ID_MAPPING


def test_end_txn_retries_and_wrong_outcomes():
    c = TransactionCoordinator(0)
    pid, epoch = started(c)
    assert c.end_txn("t", pid, epoch, False, T0).error.code == Errors.INVALID_TXN_STATE  # nothing open
    durable(c, c.add_partitions("t", pid, epoch, [("q", 0)], T0))
    durable(c, c.end_txn("t", pid, epoch, False, T0))
    assert c.end_txn("t", pid, epoch, False, T0).error.code == Errors.CONCURRENT_TRANSACTIONS
    assert c.end_txn("t", pid, epoch, True, T0).error.code == Errors.INVALID_TXN_STATE
    assert c.add_partitions("t", pid, epoch, [("q", 1)], T0).error.code == Errors.CONCURRENT_TRANSACTIONS
    durable(c, c.complete("t", T0))
    assert c.end_txn("t", pid, epoch, False, T0).error.ok  # retry after completion: OK, no record
    assert c.end_txn("t", pid, epoch, False, T0).records == ()
    assert c.end_txn("t", pid, epoch, True, T0).error.code == Errors.INVALID_TXN_STATE


def test_timeout_aborts_with_a_bumped_epoch():
    c = TransactionCoordinator(0)
    pid, epoch = started(c)
    durable(c, c.add_partitions("t", pid, epoch, [("q", 0)], T0))
    assert c.expired(T0 + TIMEOUT) == []
    [abort] = c.expired(T0 + TIMEOUT + 1)
    durable(c, abort)
    assert c.txns["t"].state == TxnState.PREPARE_ABORT and c.txns["t"].producer_epoch == epoch + 1
    assert c.end_txn("t", pid, epoch, True, T0 + TIMEOUT + 2).error.code == Errors.PRODUCER_FENCED


def test_epoch_exhaustion_moves_to_a_new_producer_id():
    c = TransactionCoordinator(0)
    c.txns["t"] = TxnMetadata("t", 5, 32767, TIMEOUT, TxnState.COMPLETE_COMMIT)
    d = durable(c, c.init_producer_id("t", TIMEOUT, T0, new_producer_id=6))
    assert (d.producer_id, d.producer_epoch) == (6, 0)


def test_load_replays_the_log_and_finds_undelivered_markers():
    c = TransactionCoordinator(0)
    pid, epoch = started(c)
    log = [c.txns["t"]]
    log += durable(c, c.add_partitions("t", pid, epoch, [("q", 2)], T0)).records
    log += durable(c, c.end_txn("t", pid, epoch, True, T0)).records
    fresh = TransactionCoordinator(0, coordinator_epoch=3)
    fresh.load(log)
    assert fresh.txns == c.txns and fresh.incomplete() == ["t"]
    assert TxnMetadata.from_dict(log[-1].to_dict()) == log[-1]


def test_replay_refuses_an_impossible_transition():
    c = TransactionCoordinator(0)
    with pytest.raises(InvariantViolation):
        c.replay(TxnMetadata("t", 1, 0, TIMEOUT, TxnState.PREPARE_COMMIT, (("q", 0),)))


def test_invalid_timeout_is_refused():
    c = TransactionCoordinator(0)
    assert c.init_producer_id("t", 0, T0, 1).error.code == Errors.INVALID_TRANSACTION_TIMEOUT
    assert c.init_producer_id("t", 10**9, T0, 1).error.code == Errors.INVALID_TRANSACTION_TIMEOUT


def test_load_takes_each_ids_last_snapshot_even_after_a_lost_acknowledgement():
    # PrepareCommit reached the log but its acknowledgement was lost; the timeout then aborted the same
    # transaction (computed from Ongoing): the loader takes the last record, as Kafka's does.
    ongoing = TxnMetadata("t", 1, 0, TIMEOUT, TxnState.ONGOING, (("q", 0),), T0, T0)
    log = [TxnMetadata("t", 1, 0, TIMEOUT, TxnState.EMPTY), ongoing,
           TxnMetadata("t", 1, 0, TIMEOUT, TxnState.PREPARE_COMMIT, (("q", 0),), T0, T0 + 1),
           TxnMetadata("t", 1, 1, TIMEOUT, TxnState.PREPARE_ABORT, (("q", 0),), T0, T0 + 2)]
    c = TransactionCoordinator(0)
    c.load(log)
    assert c.txns["t"] == log[-1] and c.incomplete() == ["t"]


def test_verify_answers_per_partition_without_writing():
    """KIP-890 part 1: a partition leader asks before a batch opens a transaction there."""
    c = TransactionCoordinator(0)
    pid, epoch = started(c)
    assert c.verify("t", pid, epoch, [("q", 0)]) == {("q", 0): Errors.INVALID_TXN_STATE}  # Empty: nothing open
    durable(c, c.add_partitions("t", pid, epoch, [("q", 0)], T0 + 1))
    before = dict(c.txns)
    assert c.verify("t", pid, epoch, [("q", 0), ("q", 1)]) == {("q", 0): Errors.NONE,
                                                              ("q", 1): Errors.INVALID_TXN_STATE}
    assert c.txns == before and not c.pending
    assert c.verify("t", pid, epoch + 1, [("q", 0)]) == {("q", 0): Errors.PRODUCER_FENCED}
    assert c.verify("t", pid + 1, epoch, [("q", 0)]) == {("q", 0): Errors.INVALID_PRODUCER_ID_MAPPING}
    assert c.verify("nobody", pid, epoch, [("q", 0)]) == {("q", 0): Errors.INVALID_PRODUCER_ID_MAPPING}
    durable(c, c.end_txn("t", pid, epoch, False, T0 + 2))
    assert c.verify("t", pid, epoch, [("q", 0)]) == {("q", 0): Errors.CONCURRENT_TRANSACTIONS}  # deciding
    durable(c, c.complete("t", T0 + 3))
    # the late batch of the aborted transaction: the partition is no longer in one
    assert c.verify("t", pid, epoch, [("q", 0)]) == {("q", 0): Errors.INVALID_TXN_STATE}


def test_verification_errors_become_produce_errors_a_producer_understands():
    from reference_impl.protocol.txn import produce_error_for_verification as mapped
    for retriable in (Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE, Errors.CONCURRENT_TRANSACTIONS,
                      Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NETWORK_EXCEPTION, Errors.REQUEST_TIMED_OUT):
        assert mapped(retriable) == Errors.NOT_ENOUGH_REPLICAS
    assert mapped(Errors.PRODUCER_FENCED) == Errors.INVALID_PRODUCER_EPOCH
    assert mapped(Errors.INVALID_TXN_STATE) == Errors.INVALID_TXN_STATE
    assert mapped(Errors.NONE) == Errors.NONE
