"""Seeded schedules, the coverage table and the package's op recording (no cluster)."""

import random
from types import SimpleNamespace

import pytest

from harness.faults import F_FAMILY, FAULT_FAMILIES, requested_families
from harness.history import HistoryWriter, read_history
from harness.verdict import coverage_reasons
from nemesis.coverage import coverage_table
from nemesis.registry import build_package, families
from nemesis.schedule import Schedule


def test_schedule_is_seeded_and_pairs_start_with_stop():
    fams = [families()["kill"], families()["pause"]]
    a = Schedule(fams, seed=5, interval_s=2.0).take(20)
    b = Schedule(fams, seed=5, interval_s=2.0).take(20)
    c = Schedule(fams, seed=6, interval_s=2.0).take(20)
    assert a == b
    assert a != c
    fs = [op["f"] for _, op in a]
    for start, stop in zip(fs[::2], fs[1::2], strict=True):
        assert (start, stop) in {("kill", "start"), ("pause", "resume")}
    assert all(1.0 <= d <= 3.0 for d, _ in a)
    assert all(op["process"] == "nemesis" and op["type"] == "invoke" for _, op in a)


def test_every_family_comes_up_in_the_first_round():
    names = ["kill", "pause", "partition", "clock", "disk", "admin"]
    plan = Schedule([families()[n] for n in names], seed=9).take(12)
    starts = [op["f"] for _, op in plan if op["f"] not in ("start", "resume", "stop-partition", "reset-clock")]

    assert {F_FAMILY[f] for f in starts[:6]} == set(names)


def _turns(schedule, n):
    """The families of the first ``n`` turns (a turn is a start op and, for a lasting family, its heal)."""
    return [F_FAMILY[op["f"]] for _, op in schedule.take(4 * n) if op["f"] in F_FAMILY][:n]


@pytest.mark.parametrize("seed", range(5))
def test_the_first_round_gives_every_family_exactly_one_turn_in_a_seeded_order(seed):
    fams = list(families().values())
    schedule = Schedule(fams, seed=seed)
    first = _turns(schedule, len(fams))
    assert sorted(first) == sorted(FAULT_FAMILIES) and first == schedule.first_round()
    assert first == Schedule(fams, seed=seed).first_round()
    # the heal of a lasting fault follows it at once: one fault at a time
    ops = [op["f"] for _, op in schedule.take(40)]
    for f, after in zip(ops, ops[1:], strict=False):
        heal = FAULT_FAMILIES[F_FAMILY[f]].heal if f in F_FAMILY else None
        if heal is not None:
            assert after == heal


@pytest.mark.parametrize("names", [["kill"], ["disk"], ["kill", "disk", "strand"], list(FAULT_FAMILIES)])
def test_the_first_round_waits_are_jittered_and_add_up_to_their_mean(names):
    from harness.fault_time import JITTER, minimum_time_s

    fams = [families()[n] for n in names]
    steps = sum(FAULT_FAMILIES[n].steps for n in names)
    for seed in range(4):
        waits = [delay for delay, _ in Schedule(fams, seed=seed, interval_s=2.0).take(steps)]
        assert sum(waits) == pytest.approx(steps * 2.0)
        assert all(2.0 * (1 - JITTER) <= w <= 2.0 * (1 + JITTER) for w in waits)
        assert len(set(waits)) == len(waits)  # one from each slice of the band
    # what harness.fault_time counts for the round: these waits and the ops' own time
    ops_s = sum(FAULT_FAMILIES[n].ops_s for n in names)
    assert minimum_time_s(names, 2.0) == pytest.approx(steps * 2.0 + ops_s)


def test_later_rounds_are_random_non_empty_subsets_drawn_by_weight():
    fams = list(families().values())
    orders = {tuple(Schedule(fams, seed=seed).first_round()) for seed in range(20)}
    assert len(orders) > 15  # the order is drawn, not fixed
    schedule = Schedule(fams, seed=4)
    rng = random.Random(4)
    schedule._first_round(rng)
    rounds = [schedule._later_round(rng) for _ in range(3000)]
    sizes = {len(r) for r in rounds}
    assert min(sizes) == 1 and max(sizes) == len(fams) and len(sizes) == len(fams)
    assert all(len({f.name for f in r}) == len(r) for r in rounds)  # a subset: no family twice
    counts = {name: sum(name in {f.name for f in r} for r in rounds) for name in FAULT_FAMILIES}
    # weight 2 (strike) more often than weight 1 (kill), which is more often than 0.5 (stop)
    assert counts["strike"] > counts["kill"] * 1.15 and counts["kill"] > counts["stop"] * 1.15
    # every family keeps coming back
    assert min(counts.values()) > 300


def test_instantaneous_families_have_no_stop_op():
    ops = [op["f"] for _, op in Schedule([families()["disk"]], seed=1).take(5)]
    assert ops == ["power-loss"] * 5


def test_requested_families_expands_all():
    assert requested_families("kill, pause") == ["kill", "pause"]
    assert set(requested_families("all")) >= {"kill", "pause", "partition", "clock", "disk", "admin"}
    assert requested_families(None) == [] and requested_families("none") == []


def _history(*ops):
    """Nemesis ops one second apart."""
    return [{"process": "nemesis", "time": i * 1_000_000_000, **op} for i, op in enumerate(ops)]


def test_coverage_counts_and_verdict_cap():
    ops = _history(
        {"type": "invoke", "f": "kill", "value": {"target": "one"}},
        {"type": "ok", "f": "kill", "value": {"effective": True}},
        {"type": "invoke", "f": "start", "value": {}},
        {"type": "ok", "f": "start", "value": {"effective": True}},
        {"type": "invoke", "f": "pause", "value": {}},
        {"type": "ok", "f": "pause", "value": {"effective": False}},
        {"type": "invoke", "f": "pause", "value": {}},
        {"type": "info", "f": "pause", "value": {}, "error": "boom"},
    )
    table = coverage_table(ops, "kill,pause,partition")
    # kill in place from its invocation (0 s) to the ok start (3 s); the pauses from 4 s, never resumed,
    # to the last op (7 s)
    assert table["kill"] == {"requested": True, "attempted": 1, "effective": 1, "failed": 0,
                             "by_f": {"kill": {"attempted": 1, "effective": 1}}, "in_place_s": 3.0}
    assert table["pause"]["attempted"] == 2 and table["pause"]["effective"] == 0
    assert table["pause"]["in_place_s"] == 3.0
    assert table["partition"]["attempted"] == 0 and table["partition"]["in_place_s"] == 0
    reasons = coverage_reasons(table)
    assert len(reasons) == 2
    assert any("'pause'" in r and "never proven" in r for r in reasons)
    assert any("'partition'" in r and "never attempted" in r for r in reasons)
    assert coverage_reasons(coverage_table(ops, "kill")) == []


class _FakeNemesis:
    """Unit-test double for the package's bookkeeping (pure logic: recording, errors, deadline)."""

    def __init__(self):
        self.calls = []

    def fs(self):
        return {"kill", "start", "stop", "pause", "resume"}

    def setup(self, run):
        pass

    def invoke(self, run, op):
        self.calls.append(op["f"])
        if op["f"] == "pause":
            raise RuntimeError("cannot pause")
        return {**op, "type": "ok", "value": {"effective": True}}

    def heal_all(self, run):
        return {"effective": True}

    def teardown(self, run):
        pass


def test_package_records_pairs_and_turns_exceptions_into_info(tmp_path):
    pkg = build_package("kill,pause", seed=3, interval_s=0.01)
    fake = _FakeNemesis()
    pkg.nemesis.members = {"process": fake}
    pkg.nemesis._routes = {f: fake for f in fake.fs()}
    writer = HistoryWriter(tmp_path / "h.jsonl")
    run = SimpleNamespace(history=writer)
    import time

    n = pkg.run(run, deadline=time.monotonic() + 0.5)
    pkg.heal(run)
    writer.close()
    ops = read_history(tmp_path / "h.jsonl").ops
    assert n >= 4 and len(ops) == 2 * n + 2
    for inv, done in zip(ops[::2], ops[1::2], strict=True):
        assert inv["type"] == "invoke" and done["type"] in ("ok", "info") and inv["f"] == done["f"]
        assert done["process"] == "nemesis"
        if inv["f"] == "pause":
            assert done["type"] == "info" and "cannot pause" in done["error"]
    # The last scheduled fault was stopped before run() returned.
    scheduled = [op["f"] for op in ops[:-2:2]]
    assert scheduled[-1] in ("start", "resume")
    assert ops[-1]["f"] == "heal" and ops[-1]["value"]["effective"] is True
    assert ops[-1]["value"]["process"] == {"effective": True}


def test_unknown_nemesis_name_is_refused():
    with pytest.raises(ValueError, match="unknown nemesis"):
        build_package("kill,frobnicate", seed=1)


def test_a_late_first_round_shrinks_its_waits_so_every_family_gets_its_turn(tmp_path):
    import time

    pkg = build_package("kill,pause,disk", seed=3, interval_s=1.0)
    fake = _FakeNemesis()
    fake.fs = lambda: {"kill", "start", "pause", "resume", "power-loss"}
    pkg.nemesis.members = {"process": fake, "disk": fake}
    pkg.nemesis._routes = {f: fake for f in fake.fs()}
    writer = HistoryWriter(tmp_path / "h.jsonl")
    run = SimpleNamespace(history=writer)
    # 5 steps of about 1 s each would take 5 s; the typical ops of the three turns (table) alone exceed
    # the 0.4 s left, so every wait shrinks to nothing and each family still gets its turn in time.
    started = time.monotonic()
    pkg.run(run, deadline=started + 0.4)
    writer.close()
    assert time.monotonic() - started < 1.0
    assert {"kill", "pause", "power-loss"} <= set(fake.calls)
    # with time to spare the waits are the schedule's own
    owed = pkg.schedule.first_round_owed()
    assert len(owed) == 5 and owed == sorted(owed, reverse=True) and owed[-1] == 0
    assert owed[0] == sum(FAULT_FAMILIES[n].ops_s for n in ("kill", "pause", "disk"))
