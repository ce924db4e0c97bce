"""harness.faults: one fault vocabulary, and the three users of it agree on one history.

The history below mixes every kind of nemesis op kraftcheck records: lasting faults healed by their own
heal, a heal that ends only some of the faults in place, a fault within its op during another fault, a
heal that ended ``info`` (ends nothing), a failed fault (no interval), the final ``heal`` and a fault
never healed. Coverage (``in_place_s``), the report's shaded bands and Spark's per-fault intervals must
give the same intervals for it.
"""

from harness.faults import (
    F_FAMILY,
    FAMILY_FS,
    HEAL_FS,
    HEALED_BY,
    LASTING_FS,
    WITHIN_OP_FS,
    FaultInterval,
    end_of,
    fault_timeline,
    nemesis_ops,
)
from nemesis.coverage import coverage_table, union_length
from nemesis.registry import families
from reports.run_report import nemesis_intervals
from spark_analysis.intervals import fault_intervals, merge

S = 1_000_000_000


def history() -> list[dict]:
    """(f, invoke s, completion type, completion s) nemesis steps between client sends, in time order."""
    steps = [("start-partition", 10, "ok", 12), ("kill", 20, "ok", 21), ("start", 30, "ok", 33),
             ("stop-partition", 40, "ok", 42), ("pause", 50, "ok", 51), ("power-loss", 55, "ok", 60),
             ("resume", 65, "info", 66), ("heal", 70, "ok", 75), ("strobe-clock", 80, "ok", 83),
             ("bump-clock", 85, "fail", 86), ("skew-clock", 90, "ok", 91)]
    ops = []
    for f, t0, type_, t1 in steps:
        ops.append({"time": t0 * S, "type": "invoke", "process": "nemesis", "f": f, "value": {}})
        ops.append({"time": t1 * S, "type": type_, "process": "nemesis", "f": f, "value": {"effective": True}})
    for second in range(0, 101, 5):
        ops.append({"time": second * S + 1, "type": "invoke", "process": 0, "f": "send", "value": [0, second]})
        ops.append({"time": second * S + 2, "type": "ok", "process": 0, "f": "send", "value": [0, [second, second]]})
    ops.sort(key=lambda op: op["time"])
    return [dict(op, index=i) for i, op in enumerate(ops)]


EXPECTED = [  # (start s, end s, f)
    (10, 42, "start-partition"),  # healed by stop-partition only, not by the start at 30
    (20, 33, "kill"),  # from its invocation to the ok completion of start
    (50, 75, "pause"),  # the info resume ends nothing; the final heal does
    (55, 60, "power-loss"),  # within its op
    (80, 83, "strobe-clock"),  # within its op
    (90, 100, "skew-clock"),  # never healed: to the end of the history (the last op, at 100 s)
]


def test_the_vocabulary_is_consistent():
    assert FAMILY_FS.keys() == {"kill", "stop", "pause", "partition", "clock", "disk", "admin",
                                "crash-lossy", "strike", "churn", "cut", "strand", "episodes"}
    assert LASTING_FS | WITHIN_OP_FS == set(F_FAMILY) and not LASTING_FS & WITHIN_OP_FS
    assert not HEAL_FS & set(F_FAMILY)
    healed = set().union(*(fs for heal, fs in HEALED_BY.items() if heal != "heal"))
    assert healed == LASTING_FS == HEALED_BY["heal"]
    # The nemesis schedules end each lasting fault with an op that heals it, and nothing else.
    for family in families().values():
        starts, stop = family.fs, family.stop
        if stop is None:
            assert starts <= WITHIN_OP_FS, family.name
        else:
            assert starts & LASTING_FS and starts & LASTING_FS <= HEALED_BY[stop[0]], family.name


def test_the_rule_on_one_history():
    ops = history()
    timeline = fault_timeline(nemesis_ops(ops), end_of(ops))
    assert [(i.start // S, i.end // S, i.f) for i in timeline.intervals] == EXPECTED
    assert [t // S for t in timeline.recoveries] == [33, 42, 75]


def test_coverage_report_and_spark_give_the_same_intervals():
    ops = history()
    end = end_of(ops)
    bands = nemesis_intervals(ops)  # the report's shaded bands
    assert bands == fault_timeline(nemesis_ops(ops), end).intervals
    assert all(isinstance(b, FaultInterval) for b in bands)

    merged, heals = fault_intervals([{k: op[k] for k in ("type", "f", "time")} for op in nemesis_ops(ops)], end)
    assert merged == merge(bands)  # Spark sees the same faults, merged into fault / healthy periods
    assert [(iv.start // S, iv.end // S) for iv in merged] == [(10, 42), (50, 75), (80, 83), (90, 100)]
    assert heals == fault_timeline(nemesis_ops(ops), end).recoveries

    table = coverage_table(ops, "all")
    for family in FAMILY_FS:
        spans = [(b.start, b.end) for b in bands if F_FAMILY[b.f] == family]
        assert table[family]["in_place_s"] == round(union_length(spans) / 1e9, 3), family
    assert table["partition"]["in_place_s"] == 32.0 and table["admin"]["in_place_s"] == 0
    # Spark's nemesis ops alone give coverage the same figures when it is told where the history ends.
    assert coverage_table(list(nemesis_ops(ops)), "all", end_of_history=end) == table


def test_union_length_counts_overlaps_once():
    assert union_length([(0, 10), (5, 20), (30, 40), (40, 41)]) == 31
    assert union_length([]) == 0
