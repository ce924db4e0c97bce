"""The per-key kinds computed one key at a time, merged, equal the whole history's (checkers/queue/keys.py).

This is what lets the Spark engine run the Python checker's own code once per key: it holds when each key
sees its part of every record, every assign, and the three facts of the whole history (final phase,
deadline, commitments through another key)."""

import pytest

from checkers.queue.keys import (
    KEY_KINDS,
    QueueAnalysis,
    analysis_of_key,
    committed_across_keys,
    key_anomalies,
    key_records,
    merge_keys,
)
from tests.checkers.fixtures import GOLDEN
from tests.spark_analysis.planted import planted_history
from tests.support.synth import synth_history


def by_keys(ops, options, cross_key=True):
    whole = QueueAnalysis(ops, options)
    elsewhere = committed_across_keys(whole) if cross_key else ()
    parts = [key_anomalies(analysis_of_key(recs, options, whole.has_final, elsewhere))
             for recs in key_records(whole.recs).values()]
    return merge_keys(parts), key_anomalies(whole)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_histories_key_by_key(name):
    ops = GOLDEN[name][0]
    merged, whole = by_keys(ops, {})
    assert merged == whole


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_histories_key_by_key(seed):
    ops = planted_history(1500, seed=seed)
    options = {"unseen_deadline_ns": ops[len(ops) // 2]["time"]}
    merged, whole = by_keys(ops, options)
    assert sum(map(len, whole.values())) > 0
    assert merged == whole


def test_reassigning_consumers_key_by_key():
    ops = synth_history(2000, keys=5, seed=4, p_reassign=0.2)
    merged, whole = by_keys(ops, {})
    assert merged == whole


def test_a_commitment_through_another_key_is_needed():
    # The lost-write fixture: an info txn sends to keys 1 and 2 and only key 2's value is read, which
    # commits the txn; without that fact key 1 alone sees no lost write.
    ops = GOLDEN["lost-write"][0]
    merged, whole = by_keys(ops, {}, cross_key=False)
    assert whole["lost-write"] and not merged["lost-write"]
    assert set(KEY_KINDS) == set(merged)
