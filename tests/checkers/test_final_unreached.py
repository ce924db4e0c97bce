"""I6 / acked-unreadable when the final phase could not reach a partition: its writes are unknown, not lost."""

from checkers.invariants import check_invariants
from checkers.queue.checker import QueueChecker
from tests.checkers.fixtures import poll, send, seq

FINAL = {"final": True}


def history(final_reads):
    """Acknowledged writes to keys 0 and 1, then the given final reads."""
    return seq(send(0, 0, 10, 0), send(1, 1, 20, 0), *[poll(5 + i, r, extra=FINAL) for i, r in
                                                      enumerate(final_reads)])


def test_a_partition_no_final_read_reached_is_unknown():
    ops = history([{0: [(0, 10)]}])  # key 1 leaderless in the final phase: never read
    queue = QueueChecker().check({}, ops, [])
    entry = queue["anomalies"]["acked-unreadable"]
    assert entry["status"] == "unknown" and "[1]" in entry["reason"]
    assert queue["valid"] == "unknown" and queue["violations"] == []
    i6 = check_invariants({}, ops, [])["invariants"]["I6"]
    assert i6["valid"] == "unknown" and "key(s) [1]" in i6["reason"]


def test_a_reached_partition_missing_a_write_is_still_lost():
    ops = history([{0: [], 1: [(0, 20)]}])  # key 0 reached (read empty): its acknowledged write is gone
    queue = QueueChecker().check({}, ops, [])
    assert queue["anomalies"]["acked-unreadable"]["status"] == "forbidden" and queue["valid"] is False
    assert check_invariants({}, ops, [])["invariants"]["I6"]["valid"] is False


def test_mixed_reached_loss_stays_forbidden():
    ops = history([{0: []}])  # 0 reached and empty (lost), 1 unreached (unknown)
    queue = QueueChecker().check({}, ops, [])
    entry = queue["anomalies"]["acked-unreadable"]
    assert entry["status"] == "forbidden" and entry["unreached"] == 1 and queue["valid"] is False
    assert check_invariants({}, ops, [])["invariants"]["I6"]["valid"] is False


def test_every_partition_read_is_valid():
    ops = history([{0: [(0, 10)], 1: [(0, 20)]}])
    assert QueueChecker().check({}, ops, [])["valid"] is True
    assert check_invariants({}, ops, [])["invariants"]["I6"]["valid"] is True
