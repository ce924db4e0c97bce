"""Seed 001's transition table (ORS {1,2,3} -> TRS {4,5,6}) out of the same code, step by step.

The seed writes RS/AR/RR/ISR as sets (in braces), so sets are compared; leader and epochs exactly. The
whole-state assertions use Kafka's replica order, target then removing ascending, which is also the order
the seed's RS column happens to list ({4,5,6,1,2,3}). KRaft
commits phase B, B3, B4 and B6 as one record (C19); the builder's trace exposes those visible steps in the
ZooKeeper-era order, and the committed state equals the table's last row.
"""

from .controller_helpers import TP, ap, cluster, current, state, with_partition

# RS, AR, RR, leader, ISR -- the seed's rows.
TABLE = [
    ("initial state", {1, 2, 3}, set(), set(), 1, {1, 2, 3}),
    ("step A2", {4, 5, 6, 1, 2, 3}, {4, 5, 6}, {1, 2, 3}, 1, {1, 2, 3}),
    ("phase B", {4, 5, 6, 1, 2, 3}, {4, 5, 6}, {1, 2, 3}, 1, {1, 2, 3, 4, 5, 6}),
    ("step B3", {4, 5, 6, 1, 2, 3}, {4, 5, 6}, {1, 2, 3}, 4, {1, 2, 3, 4, 5, 6}),
    ("step B4", {4, 5, 6, 1, 2, 3}, {4, 5, 6}, {1, 2, 3}, 4, {4, 5, 6}),
    ("step B6", {4, 5, 6}, set(), set(), 4, {4, 5, 6}),
]


def row(label, p):
    return (label, set(p.replicas), set(p.adding), set(p.removing), p.leader, set(p.isr))


def test_seed001_table_step_by_step():
    ctl = with_partition(cluster((1, 2, 3, 4, 5, 6), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    rows = [row("initial state", current(ctl))]
    res = ctl.alter_partition_reassignments({TP: [4, 5, 6]})
    ctl.apply(res)
    rows.append(row("step A2", current(ctl)))
    assert current(ctl) == state([4, 5, 6, 1, 2, 3], [1, 2, 3], 1, 1, 2, adding=[4, 5, 6], removing=[1, 2, 3])
    # Catch-up: the leader adds 4 and 5; not complete while 6 is missing (C17).
    ctl.apply(ap(ctl, [1, 2, 3, 4]))
    assert current(ctl) == state([4, 5, 6, 1, 2, 3], [1, 2, 3, 4], 1, 1, 3, adding=[4, 5, 6], removing=[1, 2, 3])
    ctl.apply(ap(ctl, [1, 2, 3, 4, 5]))
    assert current(ctl) == state([4, 5, 6, 1, 2, 3], [1, 2, 3, 4, 5], 1, 1, 4, adding=[4, 5, 6],
                                 removing=[1, 2, 3])
    res = ap(ctl, [1, 2, 3, 4, 5, 6])
    labels = ["phase B", "step B3", "step B4"]
    rows += [row(label, s) for label, (_, s) in zip(labels, res.trace[:3], strict=True)]
    ctl.apply(res)
    rows.append(row("step B6", current(ctl)))
    assert rows == TABLE
    # The committed end state, whole: the leader moved to 4 (C10) with LE+1, PE+1 (C2).
    assert current(ctl) == state([4, 5, 6], [4, 5, 6], 4, 2, 5)
    assert [label for label, _ in res.trace][-1] == "final" and res.trace[-1][1] == current(ctl)
