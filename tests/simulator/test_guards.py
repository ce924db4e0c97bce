"""The guard table (``simulator.guards``), its counting (``guard_count``) and ``simulate --coverage``."""

from __future__ import annotations

import importlib.util
import json
import os
import textwrap

from simulator import SimOptions
from simulator.cli import main
from simulator.guard_count import GuardCounter, counting
from simulator.guard_report import GuardTally, render
from simulator.guards import EPOCH, EXIT, REFUSE, REPO_DIR, core_guards, guards_of
from simulator.runner import SearchStats, run_schedule, search, simulate
from simulator.schedule import generate

SOURCE = textwrap.dedent('''
    class Errors:
        STALE = 1

    def error(code):
        return code

    class Handler:
        def handle(self, epoch, items):
            if epoch < self.epoch:
                self.refused = error(Errors.STALE)
            if epoch > self.epoch + 10:
                return "ahead"
            total = 0
            for item in items:
                if item is None:
                    continue
                total += item
            if not items:
                raise ValueError("no items")
            if total > 100:
                total = 100

            def inner(x):
                if x:
                    return 1
                return 0
            return total, inner(total)

        def check_invariants(self):
            if self.epoch < 0:
                return ["negative"]
            return []
''')


def test_what_counts_as_a_guard():
    guards = guards_of(SOURCE, "m.py")
    assert [(g.function, g.occurrence, g.reason, g.test) for g in guards] == [
        ("Handler.handle", 1, REFUSE, "epoch < self.epoch"),
        ("Handler.handle", 2, EXIT, "epoch > self.epoch + 10"),
        ("Handler.handle", 3, EXIT, "item is None"),
        ("Handler.handle.<locals>.inner", 1, EXIT, "x"),
    ]
    assert guards[0].name == "m.py:Handler.handle#1"
    assert all(g.body_line == g.line + 1 for g in guards)


def test_an_epoch_comparison_is_a_guard_without_an_exit():
    source = "def f(a, b):\n    if a.leader_epoch != b:\n        a.x = 1\n    if a.size > b:\n        a.y = 1\n"
    assert [(g.reason, g.line) for g in guards_of(source, "m.py")] == [(EPOCH, 2)]


def test_the_core_table_is_deterministic_and_points_at_real_lines():
    guards = core_guards()
    assert len(guards) > 200
    assert len({g.name for g in guards}) == len(guards)
    for g in guards[::17]:
        with open(g.module_file, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        assert lines[g.line - 1].lstrip().startswith(("if ", "elif "))
        assert g.body_line > g.line


def test_counting_counts_the_times_each_condition_was_true(tmp_path):
    path = tmp_path / "guarded_module.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("guarded_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    guards = guards_of(SOURCE, os.path.relpath(str(path), REPO_DIR))
    counter = GuardCounter(guards)
    handler = module.Handler()
    handler.epoch = 5
    with counting(counter):
        handler.handle(3, [1, None, 2])      # stale epoch, one None item
        handler.handle(5, [None, None, 0])   # two None items, inner(0): no
        handler.handle(50, [1])              # ahead
    assert counter.fired == [1, 1, 3, 1]
    handler.handle(3, [None])                # not counting any more
    assert counter.fired == [1, 1, 3, 1]


def test_counting_changes_nothing_a_run_does():
    schedule = generate(3, SimOptions(variant="kip966"))
    plain = run_schedule(schedule, keep_trace=True)
    counted = run_schedule(schedule, keep_trace=True, count_guards=True)
    assert plain.guards is None
    assert (counted.steps, counted.trace, counted.ops) == (plain.steps, plain.trace, plain.ops)
    assert counted.guards and all(times > 0 and kinds for times, kinds in counted.guards.values())


def test_a_known_guard_fires_under_its_message_kind():
    # a follower's fetch answered by a leader whose epoch moved on: the fence in _epoch_error, or the
    # heartbeat of a broker that is not registered; at least one guard of the fetch path fires in 20 seeds
    tally = GuardTally()
    for seed in range(20):
        result = simulate(seed, SimOptions(variant="kip966"), count_guards=True)
        tally.add(seed, result.guards or {})
    by_name = {g.name: i for i, g in enumerate(tally.guards)}
    fetch_guards = [i for name, i in by_name.items() if "handle_follower_fetch" in name or "_epoch_error" in name]
    assert any(tally.fired.get(i) for i in fetch_guards)
    assert all("fetch" in tally.kinds[i] for i in fetch_guards if tally.fired.get(i))


def test_the_tally_is_the_same_on_one_or_two_workers():
    tallies = []
    for workers in (1, 2):
        tally = GuardTally()
        search(0, 6, SimOptions(variant="kip966"), workers=workers, tally=tally)
        tallies.append((tally.fired, tally.first_seed, tally.kinds, tally.schedules))
    assert tallies[0] == tallies[1]
    assert tallies[0][3] == 6


def test_a_coverage_search_runs_its_whole_budget_past_a_finding():
    stats = SearchStats()
    tally = GuardTally()
    found = search(0, 4, SimOptions(variant="v3.5"), tally=tally, stats=stats)
    plain = search(0, 4, SimOptions(variant="v3.5"))
    assert found is not None and plain is not None and found.seed == plain.seed   # Last Replica Standing
    assert stats.schedules == tally.schedules == 4 and tally.failing >= 1


def test_the_table_shows_never_fired_guards_first(tmp_path, capsys):
    out_json = tmp_path / "guards.json"
    assert main(["--variant", "kip966", "--schedules", "3", "--coverage", "--json", str(out_json),
                 "--coverage-rows", "5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("guard coverage: "))
    assert lines[head + 1].startswith("never fired (")
    never = [line for line in lines if line.startswith("  NEVER ")]
    fired_at = next(i for i, line in enumerate(lines) if line.startswith("fired ("))
    assert never and all(lines.index(line) < fired_at for line in never)
    data = json.loads(out_json.read_text())
    summary = data["summary"]
    assert summary["schedules"] == 3 and summary["fired"] + summary["never_fired"] == summary["in_scope"]
    assert summary["in_scope"] < summary["guards"]   # the quorum's guards are out of scope with one controller
    rows = [r for r in data["rows"] if r["in_scope"]]
    assert [r["fired"] == 0 for r in rows] == sorted((r["fired"] == 0 for r in rows), reverse=True)
    assert len(never) == summary["never_fired"]


def test_json_needs_coverage(capsys):
    assert main(["--schedules", "1", "--json", "x.json"]) == 2


def test_render_limits_the_fired_rows_but_never_the_never_fired():
    tally = GuardTally()
    tally.add(7, {0: (3, ("fetch",)), 1: (1, ("timer",))})
    lines = render(tally, quorum=True, limit=1)
    assert lines[0].startswith(f"guard coverage: 2 of {len(tally.guards)} guards fired in 1 schedules")
    assert sum(line.startswith("  NEVER ") for line in lines) == len(tally.guards) - 2
    assert any("seed 7" in line and "[timer]" in line for line in lines)
    assert lines[-1].startswith("  ... 1 more")
