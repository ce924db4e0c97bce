"""Which processes subscribe, and what a subscribing process draws: it joins first, then polls, commits
and now and then churns (rejoins, crashes, stalls); assigning processes keep the queue mix unchanged."""

from __future__ import annotations

import random
from collections import Counter

from harness.generator import GenContext
from workloads.group_ops import subscribes
from workloads.queue_ops import QueueOps


def test_sub_via_decides_per_slot():
    assert not any(subscribes("assign", p, 4) for p in range(8))
    assert all(subscribes("subscribe", p, 4) for p in range(8))
    mixed = [subscribes("assign,subscribe", p, 4) for p in range(8)]
    assert mixed == [False, True, False, True] * 2  # a retired process (id + concurrency) keeps its mode
    assert not subscribes("assign,subscribe", "nemesis", 4)


def draw(ops: QueueOps, process: int, n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    return [ops.op(GenContext(0.0, process, rng)) for _ in range(n)]


def test_a_subscribing_process_joins_first_then_polls_commits_and_churns():
    ops = QueueOps(4, send_ratio=0.5, assign_ratio=0.5, sub_via="subscribe", concurrency=2)
    seq = draw(ops, 1, 3000)
    assert seq[0] == {"f": "subscribe", "value": [0, 1, 2, 3]}
    kinds = Counter(op["f"] for op in seq)
    assert {"send", "poll", "commit", "subscribe", "crash"} <= set(kinds) and "assign" not in kinds
    stalls = [op for op in seq if op.get("stall_ms")]
    assert stalls and all(op["f"] == "commit" and op["stall_ms"] == 8000 for op in stalls)
    # after a stalled commit the consumer is abandoned: the process subscribes again before anything else
    after = [seq[i + 1] for i, op in enumerate(seq[:-1]) if op.get("stall_ms")]
    assert all(op["f"] == "subscribe" for op in after)


def test_assigning_processes_draw_the_queue_mix_unchanged():
    plain = draw(QueueOps(4), 0, 500, seed=7)
    mixed = draw(QueueOps(4, sub_via="assign,subscribe", concurrency=2), 0, 500, seed=7)
    assert plain == mixed
    assert {op["f"] for op in plain} == {"send", "poll", "assign"}


def test_transactions_of_subscribing_processes_join_first_then_mix_group_ops_and_txns():
    from workloads.queue_ops import TxnOps

    ops = TxnOps(4, send_ratio=0.5, assign_ratio=0.3, sub_via="assign,subscribe", concurrency=2)
    rng = random.Random(5)
    assert ops.op(GenContext(0.0, 1, rng))["f"] == "subscribe"       # process 1 subscribes: it joins first
    subscriber = Counter(ops.op(GenContext(0.0, 1, rng))["f"] for _ in range(300))
    assigner = Counter(ops.op(GenContext(0.0, 0, rng))["f"] for _ in range(300))
    assert subscriber["txn"] > 150 and subscriber["commit"] + subscriber["poll"] > 20
    assert "assign" not in subscriber
    assert set(assigner) == {"txn", "assign"}                          # process 0 assigns: no group ops
