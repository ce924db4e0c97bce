"""The numpy proof that a history has no realtime-order / hwm-regression row agrees with the sweep."""

import random

import pytest

from checkers.queue import QueueAnalysis
from checkers.queue import realtime as queue_realtime
from tests.support.synth import deep_copy, mutate, synth_history


def _sweep_rows(a):
    """The sweep's rows with the shortcut turned off."""
    saved = queue_realtime._certainly_clean
    queue_realtime._certainly_clean = lambda a: False
    try:
        return queue_realtime.realtime_checks(a)
    finally:
        queue_realtime._certainly_clean = saved


def _histories():
    rng = random.Random(5)
    for seed in range(40):
        h = synth_history(150, seed=seed, keys=rng.choice([1, 3]), hwm=True)
        yield h
        m = mutate(h, "swap-offsets", rng)
        if m:
            yield m[0]
        lowered = deep_copy(h)  # one consumer reports a high watermark below an earlier one
        polls = [op for op in lowered if op["type"] == "ok" and isinstance(op.get("hwm"), dict) and op["hwm"]]
        op = rng.choice(polls)
        op["hwm"][next(iter(op["hwm"]))] = 0
        yield lowered


def test_clean_exactly_when_the_sweep_finds_nothing():
    outcomes = set()
    for h in _histories():
        a = QueueAnalysis(h, {})
        rows = _sweep_rows(a)
        clean = queue_realtime._certainly_clean(a)
        assert clean == (rows == ([], [])), rows
        assert queue_realtime.realtime_checks(a) == rows
        outcomes.add(clean)
    assert outcomes == {True, False}  # both branches were exercised


@pytest.mark.parametrize("odd", ["key", "offset", "time"])
def test_what_numpy_cannot_hold_goes_to_the_sweep(odd):
    h = synth_history(100, seed=1, keys=2)
    for op in h:
        if odd == "key" and op["f"] == "send" and isinstance(op.get("value"), list):
            op["value"][0] = "k" + str(op["value"][0])
        if odd == "offset" and op["type"] == "ok" and op["f"] == "send":
            op["value"][1][0] = 2 ** 70 + op["value"][1][0]
        if odd == "time":
            op["time"] = op["time"] + 2 ** 70
    a = QueueAnalysis(h, {})
    assert queue_realtime._certainly_clean(a) is False
    assert queue_realtime.realtime_checks(a) == _sweep_rows(a)
