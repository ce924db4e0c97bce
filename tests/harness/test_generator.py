"""Unit tests of harness.generator: mix, stagger, time limit, phases, determinism (no cluster)."""

import random

from harness.generator import (
    PENDING,
    FnGen,
    GenContext,
    Limit,
    Mix,
    Once,
    Seq,
    Stagger,
    TimeLimit,
    strip_hints,
    take,
)
from workloads.queue_ops import QueueOps


def test_stagger_holds_the_rate():
    gen = Stagger(QueueOps(keys=1), rate=100.0)
    ops = take(gen, 1000, time_s=0.0, rng=random.Random(2))
    ats = [op["_at"] for op in ops]
    assert ats == sorted(ats)
    # 1000 ops at 100/s: about 10 s of schedule (mean gap 1/rate)
    assert 8.5 < ats[-1] < 11.5


def test_stagger_does_not_build_a_backlog():
    gen = Stagger(QueueOps(keys=1), rate=1.0)
    rng = random.Random(3)
    first = gen.op(GenContext(0.0, 0, rng))
    late = gen.op(GenContext(100.0, 0, rng))
    assert first["_at"] == 0.0 and late["_at"] >= 99.0


def test_time_limit_stops_and_drops_ops_scheduled_past_it():
    gen = TimeLimit(Stagger(QueueOps(keys=1), rate=10.0), 2.0)
    rng = random.Random(4)
    ops = []
    while True:
        op = gen.op(GenContext(0.0, 0, rng))
        if op is None:
            break
        ops.append(op)
    assert ops and all(op["_at"] < 2.0 for op in ops)
    assert TimeLimit(QueueOps(keys=1), 2.0).op(GenContext(2.0, 0, rng)) is None


def test_limit_once_seq_phases():
    gen = Seq([Limit(FnGen(lambda ctx: {"f": "a"}), 2), Once({"f": "b"}), Limit(FnGen(lambda ctx: {"f": "c"}), 1)])
    assert [op["f"] for op in take(gen, 10)] == ["a", "a", "b", "c"]


def test_mix_weights_and_exhaustion():
    gen = Mix([FnGen(lambda ctx: {"f": "x"}), Limit(FnGen(lambda ctx: {"f": "y"}), 5)], weights=[1, 1])
    ops = take(gen, 100, rng=random.Random(5))
    assert sum(op["f"] == "y" for op in ops) == 5 and len(ops) == 100


def test_pending_passes_through_limits():
    gen = Limit(FnGen(lambda ctx: PENDING), 1)
    assert gen.op(GenContext(0, 0)) is PENDING and gen.remaining == 1


def test_strip_hints():
    assert strip_hints({"f": "send", "_at": 1.0, "value": [0, 1]}) == {"f": "send", "value": [0, 1]}
