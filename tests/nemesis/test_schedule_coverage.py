"""Seeded schedules, the coverage table and the package's op recording (no cluster)."""

from types import SimpleNamespace

import pytest

from harness.core.history import HistoryWriter, read_history
from harness.core.verdict import coverage_reasons
from nemesis.coverage import coverage_table, requested_families
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
    from nemesis.coverage import F_FAMILY

    assert {F_FAMILY[f] for f in starts[:6]} == set(names)


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
