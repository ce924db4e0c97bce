"""The partition side of transactions: open transactions, markers, the LSO, the aborted index, isolation,
fencing by a marker's epoch, and the same state on followers and after a rebuild (KIP-98)."""

from __future__ import annotations

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.log import CONTROL_ABORT, CONTROL_BIT, CONTROL_COMMIT, TRANSACTIONAL_BIT
from reference_impl.protocol.producer_state import ProducerStateManager
from reference_impl.protocol.replica_messages import LATEST_TIMESTAMP, READ_COMMITTED, READ_UNCOMMITTED
from tests.reference_impl.protocol.replica_driver import Driver

P1, P2 = 1000, 2000


def txn_send(d: Driver, payload: bytes, pid: int, epoch: int, seq: int):
    """A transactional batch as a leader's shell sends it: verified with the coordinator (KIP-890; the
    coordinator is taken to confirm) when it would open a transaction."""
    guard = None
    state = d.leader.producer_state
    if state.needs_verification(pid, TRANSACTIONAL_BIT):
        guard = state.start_verification(pid, epoch)
    return d.produce(payload, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                     attributes=TRANSACTIONAL_BIT, verification_guard=guard)


def marker(d: Driver, pid: int, epoch: int, commit: bool):
    return d.produce(b"commit" if commit else b"abort", producer_id=pid, producer_epoch=epoch,
                     attributes=CONTROL_BIT, control_type=CONTROL_COMMIT if commit else CONTROL_ABORT)


def replicate(d: Driver) -> None:
    for _ in range(3):
        d.round()


def test_lso_holds_at_the_first_open_transaction_and_moves_with_markers():
    d = Driver()
    d.produce(b"plain")                      # 0
    assert txn_send(d, b"a1", P1, 0, 0).error.ok   # 1: P1 opens
    assert txn_send(d, b"b1", P2, 0, 0).error.ok   # 2: P2 opens
    replicate(d)
    leader = d.leader
    assert leader.high_watermark == 3 and leader.last_stable_offset == 1
    assert marker(d, P1, 0, commit=False).error.ok  # 3: P1 aborted
    replicate(d)
    assert leader.last_stable_offset == 2  # P2 still open
    assert marker(d, P2, 0, commit=True).error.ok   # 4: P2 committed
    replicate(d)
    assert leader.high_watermark == 5 and leader.last_stable_offset == 5
    committed = leader.read_committed(0, 1 << 20, isolation_level=READ_COMMITTED)
    assert [b.payload for b in committed.batches] == [b"plain", b"a1", b"b1", b"abort", b"commit"]
    assert committed.aborted_transactions == ((P1, 1),) and committed.last_stable_offset == 5
    assert leader.list_offsets(LATEST_TIMESTAMP, isolation_level=READ_COMMITTED).offset == 5
    # every follower rebuilt the same transaction state from the replicated batches
    for b in (2, 3):
        ps = d.replicas[b].producer_state
        assert ps.open_transactions() == {} and ps.aborted_transactions(0, 5) == [(P1, 1)]


def test_read_committed_stops_at_the_lso_read_uncommitted_at_the_hwm():
    d = Driver()
    txn_send(d, b"a1", P1, 0, 0)
    d.produce(b"plain")
    replicate(d)
    leader = d.leader
    rc = leader.read_committed(0, 1 << 20, isolation_level=READ_COMMITTED)
    ru = leader.read_committed(0, 1 << 20, isolation_level=READ_UNCOMMITTED)
    assert rc.batches == () and rc.last_stable_offset == 0
    assert [b.payload for b in ru.batches] == [b"a1", b"plain"]
    assert leader.list_offsets(LATEST_TIMESTAMP, isolation_level=READ_COMMITTED).offset == 0
    assert leader.list_offsets(LATEST_TIMESTAMP).offset == 2


def test_a_marker_with_a_bumped_epoch_fences_the_old_producer():
    d = Driver()
    assert txn_send(d, b"a1", P1, 0, 0).error.ok
    assert marker(d, P1, 1, commit=False).error.ok  # the coordinator fenced epoch 0 and aborted
    late = txn_send(d, b"zombie", P1, 0, 1)
    assert late.error.code == Errors.INVALID_PRODUCER_EPOCH
    assert marker(d, P1, 0, commit=True).error.code == Errors.INVALID_PRODUCER_EPOCH  # stale marker
    assert txn_send(d, b"a2", P1, 2, 0).error.ok  # the new instance, next epoch, sequence 0


def test_same_epoch_marker_keeps_the_sequence_space():
    d = Driver()
    assert txn_send(d, b"a1", P1, 0, 0).error.ok
    assert marker(d, P1, 0, commit=True).error.ok
    assert txn_send(d, b"a2", P1, 0, 1).error.ok  # the next transaction continues the sequence


def test_rebuild_and_truncation_recompute_open_and_aborted_transactions():
    d = Driver()
    txn_send(d, b"a1", P1, 0, 0)
    marker(d, P1, 0, commit=False)
    txn_send(d, b"a2", P1, 0, 1)
    leader = d.leader
    psm = ProducerStateManager()
    psm.rebuild(leader.log.batches())
    assert psm.open_transactions() == {P1: 2} and psm.aborted_transactions(0, 3) == [(P1, 0)]
    assert psm.aborted_transactions(2, 3) == []  # the aborted one ends before the range
    psm.rebuild(leader.log.batches()[:1])  # truncated before the marker: the transaction is open again
    assert psm.open_transactions() == {P1: 0} and psm.aborted_transactions(0, 3) == []


# ------------------------------------------------------------------ KIP-890 part 1: verification guards


def unverified_send(d: Driver, payload: bytes, pid: int, epoch: int, seq: int, guard=None):
    return d.produce(payload, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                     attributes=TRANSACTIONAL_BIT, verification_guard=guard)


def test_a_batch_that_would_open_a_transaction_needs_a_verification_guard():
    d = Driver()
    refused = unverified_send(d, b"late", P1, 0, 0)
    assert refused.error.code == Errors.INVALID_TXN_STATE
    assert d.leader.log_end_offset == 0 and d.leader.producer_state.open_transactions() == {}
    # once verified the batch opens the transaction; later batches of it need no guard
    guard = d.leader.producer_state.start_verification(P1, 0)
    assert unverified_send(d, b"a1", P1, 0, 0, guard).error.ok
    assert unverified_send(d, b"a2", P1, 0, 1).error.ok
    assert d.leader.producer_state.open_transactions() == {P1: 0}


def test_a_marker_between_verification_and_append_voids_the_guard():
    """The hanging transaction KIP-890 closes: a batch of a transaction that a marker ended meanwhile
    must not open a new transaction that no marker will close."""
    d = Driver()
    assert txn_send(d, b"a1", P1, 0, 0).error.ok
    assert marker(d, P1, 0, commit=False).error.ok    # the transaction ends here
    guard = d.leader.producer_state.start_verification(P1, 0)   # a late batch starts verifying ...
    assert marker(d, P1, 1, commit=False).error.ok    # ... while an abort with a bumped epoch lands
    late = unverified_send(d, b"late", P1, 0, 1, guard)
    assert late.error.code == Errors.INVALID_TXN_STATE
    replicate(d)
    assert d.leader.producer_state.open_transactions() == {}
    assert d.leader.last_stable_offset == d.leader.high_watermark


def test_a_guard_of_another_epoch_or_a_used_guard_does_not_verify():
    d = Driver()
    state = d.leader.producer_state
    old = state.start_verification(P1, 0)
    assert state.start_verification(P1, 0) == old  # shared while pending
    newer = state.start_verification(P1, 1)
    assert not state.verified(P1, 0, old) and state.verified(P1, 1, newer)
    assert unverified_send(d, b"a", P1, 1, 0, newer).error.ok
    assert not state.verified(P1, 1, newer)  # used up by the batch that opened the transaction


def test_verification_off_is_kafka_before_kip_890():
    d = Driver(transaction_verification=False)
    assert unverified_send(d, b"late", P1, 0, 0).error.ok
    assert d.leader.producer_state.open_transactions() == {P1: 0}


def test_followers_and_rebuilds_keep_no_guards():
    d = Driver()
    guard = d.leader.producer_state.start_verification(P1, 0)
    d.leader.producer_state.rebuild(d.leader.log.batches())  # a truncation or recovery
    assert unverified_send(d, b"a1", P1, 0, 0, guard).error.code == Errors.INVALID_TXN_STATE


def test_a_marker_above_the_hwm_does_not_make_its_transaction_stable():
    """Kafka's unreplicatedTxns: until the HWM passes a marker, the transaction it ended still holds the
    LSO. An uncommitted COMMIT marker can be truncated by a new leader and a new coordinator may abort
    the transaction instead; read_committed readers must not have seen its records in between."""
    d = Driver()
    assert txn_send(d, b"a1", P1, 0, 0).error.ok    # 0
    d.produce(b"plain")                              # 1
    replicate(d)
    leader = d.leader
    assert leader.high_watermark == 2 and leader.last_stable_offset == 0
    assert marker(d, P1, 0, commit=True).error.ok    # 2: the marker, on the leader only
    assert leader.high_watermark == 2
    assert leader.last_stable_offset == 0            # not yet: the marker is not committed
    assert leader.read_committed(0, 1 << 20, isolation_level=READ_COMMITTED).batches == ()
    replicate(d)
    assert leader.high_watermark == 3 and leader.last_stable_offset == 3
    assert [b.payload for b in leader.read_committed(0, 1 << 20, isolation_level=READ_COMMITTED).batches] == [
        b"a1", b"plain", b"commit"]
