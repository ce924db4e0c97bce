"""Fast tests of ``kraftcheck suite``: the product of the options, expected outcomes, outcome classification,
the exit code, the summary, suite.json and the command line (no cluster is started)."""

import io
import json

import pytest

from kraftcheck import scenarios
from kraftcheck.commands import suite as command
from kraftcheck.suite import outcome, plan
from kraftcheck.suite.execute import SUITE_JSON, SuiteRun, cell_seeds, cell_spec

# -- the product ---------------------------------------------------------------------------------------


def ids(cells):
    return [c.cell_id for c in cells]


def test_a_scenario_expands_over_its_variants_and_the_backends():
    cells = plan.expand([plan.Entry("scenario", "last-replica-standing", backends=("local", "docker"))])
    assert ids(cells) == [
        "last-replica-standing/v3.5/disk+partition/local#1", "last-replica-standing/v3.5/disk+partition/docker#1",
        "last-replica-standing/kip966/disk+partition/local#1", "last-replica-standing/kip966/disk+partition/docker#1"]
    assert [(c.expected, c.accepted) for c in cells[::2]] == [
        ("expected-failure", ("expected-failure",)), ("valid", ("valid",))]


def test_workloads_expand_over_variants_mixes_backends_and_repeats():
    entry = plan.Entry("workload", "queue", ("v3.5", "kip966"), mixes=((), ("kill", "partition")))
    cells = plan.expand([entry], backends=("local",), test_count=2, time_limit_s=40)
    assert len(cells) == 2 * 2 * 2
    assert ids(cells)[:4] == ["queue/v3.5/none/local#1", "queue/v3.5/none/local#2",
                              "queue/v3.5/kill+partition/local#1", "queue/v3.5/kill+partition/local#2"]
    # The interval is the spec's to fit (harness.fault_time), as for any run; a row's own is kept.
    assert [dict(c.options) for c in cells[::2]] == [{"time_limit_s": 40}] * 4


def test_a_short_time_limit_shortens_the_nemesis_interval_so_each_family_is_tried():
    from harness.fault_time import fitted_interval_s

    [cell] = plan.expand([plan.Entry("workload", "queue", ("kip966",), mixes=(("kill", "partition"),))],
                         time_limit_s=15)
    _, spec, _ = cell_spec(cell, 1, ["kraftcheck", "suite", "queue"])
    assert spec.nemesis_interval_s == fitted_interval_s(["kill", "partition"], 15) < 5.0
    [kept] = plan.expand([plan.Entry("workload", "queue", ("kip966",), mixes=(("kill",),),
                                     options=(("nemesis_interval_s", 1.0),))], time_limit_s=30)
    assert dict(kept.options) == {"nemesis_interval_s": 1.0, "time_limit_s": 30}
    with pytest.raises(plan.PlanError, match=r"--time-limit: fault mix kill: 2 s is too short .* needs at least"):
        plan.expand([plan.Entry("workload", "queue", ("kip966",), mixes=(("kill",),))], time_limit_s=2)


def test_options_filter_variants_replace_backends_and_only_workload_mixes():
    entries = [plan.Entry("scenario", "min-isr"), plan.Entry("workload", "queue", mixes=((),))]
    cells = plan.expand(entries, variants=("kip966",), backends=("docker",), mixes=(("disk",),))
    assert ids(cells) == ["min-isr/kip966/partition/docker#1", "queue/kip966/disk/docker#1"]


def test_scenarios_without_a_wanted_variant_drop_out_and_nothing_left_is_an_error():
    cells = plan.expand([plan.Entry("scenario", "reassign-move-one", ("kip966",)),
                         plan.Entry("scenario", "min-isr")], variants=("v3.5",))
    assert ids(cells) == ["min-isr/v3.5/partition/local#1"]
    with pytest.raises(plan.PlanError, match="no cells"):
        plan.expand([plan.Entry("scenario", "reassign-move-one", ("kip966",))], variants=("v3.5",))


@pytest.mark.parametrize("kwargs, needle", [
    ({"test_count": 0}, "--test-count"), ({"time_limit_s": 0}, "--time-limit"),
    ({"variants": ("v2.8",)}, "--variants"), ({"backends": ("ssh",)}, "--backends"),
])
def test_bad_options_name_the_flag(kwargs, needle):
    with pytest.raises(plan.PlanError, match=needle):
        plan.expand([plan.Entry("workload", "queue")], **kwargs)


def test_duplicate_rows_give_one_cell():
    entry = plan.Entry("scenario", "min-isr", ("v3.5",))
    assert len(plan.expand([entry, entry])) == 1


def test_parsing_lists_and_mixes():
    assert plan.parse_list("--variants", "kip966, v3.5,kip966", ("v3.5", "kip966")) == ("kip966", "v3.5")
    assert plan.parse_list("--variants", None, ("v3.5",)) is None
    with pytest.raises(plan.PlanError, match="--backends: ssh"):
        plan.parse_list("--backends", "local,ssh", ("local", "docker"))
    families = ("kill", "partition", "disk")
    assert plan.parse_mixes("none,partition+kill,kill+partition,disk", families) == (
        (), ("kill", "partition"), ("disk",))
    with pytest.raises(plan.PlanError, match="unknown fault bogus"):
        plan.parse_mixes("kill+bogus", families)
    with pytest.raises(plan.PlanError, match="no fault mix"):
        plan.parse_mixes(" , ", families)


def test_named_suites():
    suites = plan.named_suites()
    smoke = plan.expand(suites["smoke"])
    assert len(smoke) <= 6 and {c.kind for c in smoke} == {"scenario", "workload"}
    assert "last-replica-standing/v3.5/disk+partition/local#1" in ids(smoke)
    seeds = plan.expand(suites["seeds"])
    every = {(s.name, v) for s in scenarios.all_scenarios() for v in s.variants}
    assert {(c.name, c.variant) for c in seeds if c.backend == "local"} == every
    assert {c.cell_id for c in seeds if c.backend == "docker"} == {
        "last-replica-standing/v3.5/disk+partition/docker#1", "last-replica-standing/kip966/disk+partition/docker#1"}
    full = plan.expand(suites["full"])
    assert {c.backend for c in full} == {"local", "docker"} and len(full) > len(seeds)
    assert plan.entries_for("lrs")[0].name == "last-replica-standing"
    assert plan.entries_for("queue")[0].kind == "workload"
    with pytest.raises(plan.PlanError, match="unknown suite 'nope'"):
        plan.entries_for("nope")


def test_workload_runs_accept_the_known_issue_only_where_the_profile_documents_one():
    assert plan.workload_accepts("v3.5", ("disk",)) == ("valid", "expected-failure")
    assert plan.workload_accepts("kip966", ("disk",)) == ("valid",)
    assert plan.workload_accepts("v3.5", ("kill", "partition")) == ("valid",)


def test_cells_get_distinct_reproducible_seeds_and_ordinary_specs():
    assert cell_seeds(7, 5) == cell_seeds(7, 5) and len(set(cell_seeds(7, 5))) == 5
    [lrs, queue] = plan.expand([plan.Entry("scenario", "lrs", ("kip966",)),
                                plan.Entry("workload", "queue", ("v3.5",), mixes=(("kill",),))], time_limit_s=29)
    scenario, spec, _ = cell_spec(lrs, 11, ["kraftcheck", "suite", "smoke"])
    assert scenario.name == "last-replica-standing" and spec.scenario == "last-replica-standing"
    assert (spec.variant, spec.seed, spec.backend) == ("kip966", 11, "local")
    none, spec, _ = cell_spec(queue, 12, ["kraftcheck", "suite", "queue"])
    assert none is None and (spec.nemesis, spec.time_limit_s, spec.variant) == (("kill",), 29.0, "v3.5")


# -- outcomes, exit code, summary ----------------------------------------------------------------------


@pytest.mark.parametrize("results, code, expected", [
    ({"valid": "unknown", "harness_error": "boom"}, 255, "harness-error"),
    ({"valid": False}, 1, "invalid"),
    ({"valid": "unknown"}, 2, "unknown"),
    ({"valid": True, "scenario": {"label": "KNOWN ISSUE: Last Replica Standing"}}, 0, "expected-failure"),
    ({"valid": True, "checkers": {"queue": {"known_issues": ["lost-write"]}}}, 0, "expected-failure"),
    ({"valid": True, "checkers": {"invariants": {"invariants": {"I6": {"valid": False, "status": "known-issue"}}}}},
     0, "expected-failure"),
    ({"valid": True, "checkers": {"queue": {"known_issues": []}}, "scenario": {"label": None}}, 0, "valid"),
])
def test_outcome_of_a_run(results, code, expected):
    assert outcome.outcome_of(results, code) == expected


def test_exit_code_counts_only_cells_that_are_not_as_expected():
    assert outcome.exit_code([("expected-failure", True), ("valid", True)]) == 0
    assert outcome.exit_code([("valid", True), ("unknown", False)]) == 2
    assert outcome.exit_code([("harness-error", False), ("unknown", False)]) == 255
    assert outcome.exit_code([("harness-error", False), ("invalid", False)]) == 1
    assert outcome.exit_code([("expected-failure", False)]) == 1  # a failure nobody expected
    assert outcome.word("expected-failure") == "expected failure" and outcome.word("invalid") == "invalid"


def entry(name, outcome_, matched, expected="valid"):
    return {"name": name, "variant": "kip966", "nemesis_mix": "none", "backend": "local", "outcome": outcome_,
            "matched": matched, "expected": expected, "duration_s": 12.3 if outcome_ else None,
            "run_dir": f"{name}/T" if outcome_ else None}


def test_tally_and_table():
    cells = [entry("a", "valid", True), entry("b", "expected-failure", True, "expected-failure"), entry("c", None, None)]
    tally = outcome.tally(cells)
    assert (tally["cells"], tally["run"], tally["matched"]) == (3, 2, 2)
    assert tally["by_outcome"]["expected-failure"] == 1 and tally["exit_code"] == 2  # one cell never ran
    table = outcome.render_table(outcome.summary_rows(cells))
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["#", "scenario", "/"] and set(lines[1]) <= {"-", " "}
    assert "expected failure" in lines[3] and "ok" in lines[3] and "not run" in lines[4]


# -- the run loop (runs replaced by recorded outcomes; the loop, suite.json and the exit code are real) ------


def fake_run(outcomes):
    """A ``SuiteRun.run_cell`` that fills each cell with the next of ``outcomes`` (or raises one)."""
    queue = list(outcomes)

    def run_cell(self, cell, entry):
        result = queue.pop(0)
        if isinstance(result, BaseException):
            raise result
        entry.update(outcome=result, matched=result in cell.accepted, duration_s=1.0, run_dir=f"{cell.name}/X")

    return run_cell


def make_suite(tmp_path, names=("min-isr", "reassign-move-one")):
    cells = plan.expand([plan.Entry("scenario", n, ("kip966",)) for n in names])
    return SuiteRun("t", cells, tmp_path / "suite", 5, ["kraftcheck", "suite", "t"], {"test_count": 1}, io.StringIO())


def test_suite_json_and_exit_code_when_every_cell_is_as_expected(tmp_path, monkeypatch):
    monkeypatch.setattr(SuiteRun, "run_cell", fake_run(["valid", "valid"]))
    suite = make_suite(tmp_path)
    assert suite.run() == 0
    doc = json.loads((tmp_path / "suite" / SUITE_JSON).read_text())
    assert doc["finished"] is True and doc["summary"]["matched"] == 2 and doc["summary"]["exit_code"] == 0
    first = doc["cells"][0]
    assert first["id"] == "min-isr/kip966/partition/local#1" and first["reproduces"].startswith("PROTOCOL.md")
    assert first["seed"] == cell_seeds(5, 2)[0] and first["run_dir"] == "min-isr/X"
    out = suite.out.getvalue()
    assert "[1/2] min-isr/kip966/partition/local#1: valid (as expected" in out
    assert "2/2 cells run, 2 as expected; exit 0" in out


def test_an_unexpected_outcome_makes_the_suite_fail(tmp_path, monkeypatch):
    monkeypatch.setattr(SuiteRun, "run_cell", fake_run(["invalid", "valid"]))
    assert make_suite(tmp_path).run() == 1


def test_an_interrupted_suite_keeps_what_ran(tmp_path, monkeypatch):
    monkeypatch.setattr(SuiteRun, "run_cell", fake_run(["valid", KeyboardInterrupt()]))
    assert make_suite(tmp_path).run() == 2
    doc = json.loads((tmp_path / "suite" / SUITE_JSON).read_text())
    assert doc["finished"] is False and [c["outcome"] for c in doc["cells"]] == ["valid", None]


def test_a_cell_that_cannot_start_is_a_harness_error_and_the_suite_goes_on(tmp_path, monkeypatch):
    suite = make_suite(tmp_path, ("min-isr",))

    def broken(*args, **kwargs):
        raise RuntimeError("no spec for you")

    monkeypatch.setattr("kraftcheck.suite.execute.cell_spec", broken)
    assert suite.run() == 255
    [cell] = json.loads((tmp_path / "suite" / SUITE_JSON).read_text())["cells"]
    assert cell["outcome"] == "harness-error" and "no spec for you" in cell["error"]


# -- the command line -------------------------------------------------------------------------------------


def test_dry_run_lists_the_cells(capsys):
    assert command.main(["queue", "--nemesis", "none,disk", "--backends", "local", "--variants", "v3.5",
                         "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "queue/v3.5/none/local#1" in out and "valid, expected-failure" in out


def test_list_shows_the_named_suites(capsys):
    assert command.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "smoke:" in out and "seeds:" in out and "full:" in out


@pytest.mark.parametrize("argv, needle", [
    ([], "a suite name is required"),
    (["smoke", "--all"], "not both"),
    (["nope"], "unknown suite 'nope'"),
    (["smoke", "--variants", "v9"], "--variants: v9"),
    (["queue", "--nemesis", "kill+bogus"], "--nemesis: unknown fault bogus"),
    (["smoke", "--test-count", "0"], "--test-count"),
    (["smoke", "--seed", "-1"], "--seed"),
])
def test_bad_arguments_exit_2_with_a_message_and_store_nothing(argv, needle, capsys, tmp_path):
    assert command.main([*argv, "--store", str(tmp_path / "s")]) == 2
    assert needle in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_a_store_holding_a_suite_is_refused(tmp_path, capsys):
    (tmp_path / SUITE_JSON).write_text("{}")
    assert command.main(["smoke", "--store", str(tmp_path)]) == 2
    assert "already holds a suite" in capsys.readouterr().err


def test_environment_problems_stop_the_suite_before_any_run(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(command.os, "geteuid", lambda: 1000)
    assert command.main(["smoke", "--store", str(tmp_path / "s")]) == 255
    assert "need root" in capsys.readouterr().err and not (tmp_path / "s").exists()
    monkeypatch.setattr(command.os, "geteuid", lambda: 0)
    monkeypatch.setattr(command, "docker_problem", lambda: "cannot reach a Docker engine (test): --backend local")
    assert command.main(["lrs", "--backends", "docker", "--store", str(tmp_path / "s")]) == 255
    assert "--backends local" in capsys.readouterr().err


def test_dispatcher_routes_suite():
    from kraftcheck.cli import SUBCOMMANDS

    assert SUBCOMMANDS["suite"][0] == "kraftcheck.commands.suite"


def test_the_systems_suite_puts_tansu_beside_the_reference(monkeypatch):
    from harness import sut_install

    monkeypatch.setattr(sut_install, "installed", lambda build, sut_path=None: True)
    cells = plan.expand(plan.named_suites()["systems"])
    systems = {cell.system for cell in cells}
    assert systems == {"kip966", "tansu-sqlite", "tansu-postgres"}
    sqlite = next(c for c in cells if c.system == "tansu-sqlite")
    assert dict(sqlite.options)["brokers"] == 1 and sqlite.cell_id.startswith("queue/tansu-sqlite/")


def test_a_system_that_is_not_installed_is_refused_when_the_suite_is_planned(monkeypatch):
    from harness import sut_install

    monkeypatch.setattr(sut_install, "installed", lambda build, sut_path=None: False)
    with pytest.raises(plan.PlanError, match="kraftcheck sut install tansu"):
        plan.expand(plan.named_suites()["systems"])


def test_the_workload_modes_are_cells_of_their_own():
    suites = plan.named_suites()
    modes = plan.expand(suites["modes"])
    assert ids(modes) == [
        "queue[subscribe]/kip966/kill+partition/local#1", "queue[subscribe]/kip966/kill+pause+partition+admin/local#1",
        "queue[txn]/kip966/kill+partition/local#1", "queue[txn]/kip966/kill+pause+partition+admin/local#1",
        "queue[subscribe,txn]/kip966/kill+partition/local#1",
        "queue[subscribe,txn]/kip966/kill+pause+partition+admin/local#1"]
    assert [c.mode for c in modes[::2]] == ["subscribe", "txn", "subscribe, txn"]
    assert all(c.expected == "valid" and dict(c.options)["time_limit_s"] == 120.0 for c in modes)
    # each cell's spec carries its mode, so the run (and the site's row) is that mode's
    _, spec, _ = cell_spec(modes[-1], 5, ["kraftcheck", "suite", "modes"])
    assert (spec.sub_via, spec.txn, set(spec.nemesis)) == ("subscribe", True, {"kill", "pause", "partition", "admin"})
    _, spec, _ = cell_spec(modes[2], 5, ["kraftcheck", "suite", "modes"])
    assert (spec.sub_via, spec.txn) == ("assign", True)
    # the full suite has them beside the plain queue cells (none of them deduplicated away)
    full = ids(plan.expand(suites["full"]))
    assert "queue/kip966/kill+partition/local#1" in full
    for mode in ("subscribe", "txn", "subscribe,txn"):
        for variant in ("v3.5", "kip966"):
            assert f"queue[{mode}]/{variant}/kill+partition/docker#1" in full
    # plain cells keep the ids they always had
    assert plan.Cell("workload", "queue", "kip966", "local", ("kill",), 1, "valid", ("valid",),
                     (("sub_via", "assign"), ("txn", False))).cell_id == "queue/kip966/kill/local#1"


def test_list_shows_the_modes_suite(capsys):
    assert command.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "modes: 6 cells" in out and "queue[subscribe,txn]/kip966/kill+partition/local#1" in out
