"""Unit tests of the queue workload's op generator: unique values, keys in range, determinism."""

import random

from harness.generator import take
from workloads.queue_ops import QueueOps


def test_queue_ops_values_unique_and_keys_in_range():
    ops = take(QueueOps(keys=3, send_ratio=0.7, assign_ratio=0.1), 2000, rng=random.Random(1))
    sends = [op["value"] for op in ops if op["f"] == "send"]
    values = [v for _, v in sends]
    assert len(values) == len(set(values)) == values[-1] + 1
    assert {k for k, _ in sends} == {0, 1, 2}
    fs = {op["f"] for op in ops}
    assert fs == {"send", "poll", "assign"}
    share = len(sends) / len(ops)
    assert 0.65 < share < 0.75
    for op in ops:
        if op["f"] == "assign":
            assert op["value"] == sorted(set(op["value"])) and set(op["value"]) <= {0, 1, 2}


def test_same_seed_same_ops():
    a = take(QueueOps(keys=4), 200, rng=random.Random(9))
    b = take(QueueOps(keys=4), 200, rng=random.Random(9))
    c = take(QueueOps(keys=4), 200, rng=random.Random(10))
    assert a == b and a != c
