"""KIP-98 batch fields read from bytes, marker batches, and the coordinator's state records on the wire."""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecordsBuilder

from reference_impl.protocol.log import (
    CONTROL_ABORT,
    CONTROL_BIT,
    CONTROL_COMMIT,
    NO_CONTROL,
    TRANSACTIONAL_BIT,
)
from reference_impl.protocol.txn import TxnMetadata, TxnState
from reference_impl.server.txn_batches import batch_txn_fields, marker_batch
from reference_impl.server.txn_coordinator import decode_state_records, encode_state_records
from reference_impl.server.wire.records import iter_batches


def test_marker_batches_are_valid_control_batches_kafka_python_reads():
    for control_type, key in ((CONTROL_COMMIT, b"\x00\x00\x00\x01"), (CONTROL_ABORT, b"\x00\x00\x00\x00")):
        raw = marker_batch(77, 3, control_type, 5, 1234)
        [(_, header)] = list(iter_batches(raw))  # CRC verified
        assert (header.producer_id, header.producer_epoch, header.is_control, header.is_transactional) == (
            77, 3, True, True)
        assert batch_txn_fields(raw) == (TRANSACTIONAL_BIT | CONTROL_BIT, control_type)
        batch = DefaultRecordBatch(raw)
        assert batch.is_control_batch and [(r.key, r.value) for r in batch] == [(key, b"\x00\x00\x00\x00\x00\x05")]


def test_producer_batches_report_their_transactional_bit_and_no_marker():
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    builder.set_producer_state(9, 0, 0, True)
    builder.append(timestamp=None, key=b"k", value=b"v", headers=[])
    builder.close()
    assert batch_txn_fields(bytes(builder.buffer())) == (TRANSACTIONAL_BIT, NO_CONTROL)


def test_opaque_payloads_are_not_batches():
    assert batch_txn_fields(b"x" * 100) == (0, NO_CONTROL)
    assert batch_txn_fields(b"") == (0, NO_CONTROL)


def test_state_records_roundtrip_in_one_batch():
    records = (TxnMetadata("a", 1, 0, 6000, TxnState.EMPTY, (), -1, 10),
               TxnMetadata("b", 2, 4, 6000, TxnState.PREPARE_COMMIT, (("q", 1), ("q", 0)), 5, 11))
    raw = encode_state_records(records)
    assert len(list(iter_batches(raw))) == 1
    assert decode_state_records([raw]) == list(records)
