"""harness.fault_time: the time a first round of faults needs, the fitted interval, and the refusal of a
time limit too short for the faults asked for (by the spec, the run command and the suite's plan)."""

import pytest

from harness.fault_time import (
    DEFAULT_INTERVAL_S,
    SHORTEST_FITTED_INTERVAL_S,
    fitted_interval_s,
    longest_interval_s,
    minimum_time_s,
    too_short,
    turn_s,
)
from harness.faults import FAULT_FAMILIES, MIXES
from harness.spec import SpecError, build_spec, replay_options

ALL = list(MIXES["all"])


def test_a_turn_is_its_waits_at_their_longest_plus_its_ops():
    kill, disk = FAULT_FAMILIES["kill"], FAULT_FAMILIES["disk"]
    assert turn_s("kill", 4.0) == 2 * 4.0 + kill.ops_s  # the kill, then its start
    assert turn_s("disk", 4.0) == 4.0 + disk.ops_s  # within its op: no heal step
    assert minimum_time_s(["kill", "disk"], 4.0) == turn_s("kill", 4.0) + turn_s("disk", 4.0)
    assert minimum_time_s([], 4.0) == 0


@pytest.mark.parametrize("families", [["kill"], ["kill", "partition"], list(MIXES["targeted"]), ALL])
@pytest.mark.parametrize("time_limit_s", [20.0, 45.0, 120.0, 300.0, 1000.0])
def test_the_fitted_interval_fits_is_never_longer_than_the_default_nor_shorter_than_the_floor(families,
                                                                                              time_limit_s):
    fitted = fitted_interval_s(families, time_limit_s)
    if fitted is None:
        assert minimum_time_s(families, SHORTEST_FITTED_INTERVAL_S) > time_limit_s
        assert too_short(families, time_limit_s, None)
        return
    assert SHORTEST_FITTED_INTERVAL_S <= fitted <= DEFAULT_INTERVAL_S
    assert minimum_time_s(families, fitted) <= time_limit_s + 1e-9
    assert too_short(families, time_limit_s, fitted) is None
    if fitted < DEFAULT_INTERVAL_S:  # the longest tenth of a second that fits
        assert minimum_time_s(families, fitted + 0.1) > time_limit_s


def test_the_refusal_names_the_minimum_and_what_to_change():
    need = minimum_time_s(ALL, 5.0)
    message = too_short(ALL, 60, 5.0)
    assert f"needs at least {int(-(-need // 1))} s" in message and "--nemesis-interval 5 s" in message
    assert "crash-lossy" in message
    longest = longest_interval_s(ALL, 60)
    assert longest is None and "shorter interval" not in message  # no interval fits 60 s
    fitted = too_short(["kill"], 1, None)
    assert "shortest interval chosen automatically" in fitted and "shorter interval" not in fitted
    # where a shorter interval than the floor would fit, the message says which
    limit = minimum_time_s(ALL, 0.5)
    hint = too_short(ALL, limit, None)
    assert f"--nemesis-interval {longest_interval_s(ALL, limit):g} fits" in hint
    assert longest_interval_s(ALL, limit) == 0.5 and too_short(ALL, limit, 0.5) is None
    assert too_short([], 1, 5.0) is None


def test_the_spec_fits_an_interval_not_given_and_stores_it():
    spec = build_spec({"nemesis": "all", "time_limit_s": minimum_time_s(ALL, 3.0), "seed": 1})
    assert spec["nemesis_interval_s"] == 3.0
    assert build_spec({"nemesis": "kill", "time_limit_s": 600})["nemesis_interval_s"] == DEFAULT_INTERVAL_S
    assert build_spec({})["nemesis_interval_s"] == DEFAULT_INTERVAL_S  # no faults: the default
    # a replay gives the stored interval explicitly, and gets the same spec
    again = build_spec(replay_options(spec))
    assert again["nemesis_interval_s"] == 3.0 and again["time_limit_s"] == spec["time_limit_s"]


def test_the_spec_refuses_a_time_limit_too_short_for_the_faults():
    with pytest.raises(SpecError, match=r"time_limit_s \(--time-limit\): 30 s is too short .* needs at least"):
        build_spec({"nemesis": "all", "time_limit_s": 30})
    with pytest.raises(SpecError, match="at --nemesis-interval 5 s"):
        build_spec({"nemesis": "kill,partition", "time_limit_s": 20, "nemesis_interval_s": 5})
    # the same faults fit at a shorter interval
    assert build_spec({"nemesis": "kill,partition", "time_limit_s": 20, "nemesis_interval_s": 1.5})
    # a scenario's script injects its faults itself: the schedule's rule does not apply
    spec = build_spec({"nemesis": ["disk", "partition"], "time_limit_s": 5, "scenario": "last-replica-standing"})
    assert spec["nemesis_interval_s"] == DEFAULT_INTERVAL_S


def test_run_refuses_before_anything_starts(monkeypatch, capsys):
    import kraftcheck.commands.run as run_command
    from harness.verdict import EXIT_USAGE
    from kraftcheck.cli import main

    monkeypatch.setattr(run_command, "execute", lambda *a, **k: pytest.fail("a run started"))
    assert main(["run", "--backend", "docker", "--nemesis", "all", "--time-limit", "40"]) == EXIT_USAGE
    err = capsys.readouterr().err
    need = int(-(-minimum_time_s(ALL, SHORTEST_FITTED_INTERVAL_S) // 1))
    assert "40 s is too short" in err and f"needs at least {need} s" in err


def test_the_suite_plans_with_the_same_rule():
    from kraftcheck.suite import plan

    entry = plan.Entry("workload", "queue", ("kip966",), mixes=(("kill", "partition"),))
    [cell] = plan.expand([entry], time_limit_s=60)
    assert dict(cell.options) == {"time_limit_s": 60}  # the spec fits the interval, as for any run
    with pytest.raises(plan.PlanError, match="--time-limit: fault mix all: 60 s is too short"):
        plan.expand([entry], mixes=(("all",),), time_limit_s=60)


def test_the_replay_command_leaves_out_an_interval_the_spec_would_fit_again():
    from harness.spec import replay_argv

    fitted = build_spec({"nemesis": "kill", "time_limit_s": 8, "seed": 3})
    assert fitted["nemesis_interval_s"] < DEFAULT_INTERVAL_S and "--nemesis-interval" not in replay_argv(fitted)
    assert "--nemesis-interval" not in replay_argv(build_spec({"seed": 3}))  # no faults: no interval
    given = build_spec({"nemesis": "kill", "time_limit_s": 8, "nemesis_interval_s": 1.5, "seed": 3})
    argv = replay_argv(given)
    assert argv[argv.index("--nemesis-interval") + 1] == "1.5"
