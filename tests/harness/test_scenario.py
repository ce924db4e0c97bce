"""Fast tests of the scenario machinery that needs no cluster: registry, arguments, trace reading,
the Last Replica Standing judgement on hand-built histories/traces, and the report block."""

import argparse
import json
from dataclasses import replace

import pytest

from harness.spec import RunSpec
from kraftcheck import scenarios
from kraftcheck.commands import scenario as command
from kraftcheck.scenarios import lrs, observe
from kraftcheck.scenarios.script import scenario_argv
from reports.scenario_block import scenario_html

# -- registry -------------------------------------------------------------------------------------------


def test_registry_lists_and_resolves_last_replica_standing_and_its_alias():
    assert "last-replica-standing" in scenarios.names()
    s = scenarios.get("last-replica-standing")
    assert s.name == "last-replica-standing" and s.variants == ("v3.5", "kip966")
    assert s.script is lrs.script and s.judge is lrs.judge
    assert scenarios.get("lrs").name == "last-replica-standing"


def test_unknown_scenario_names_the_known_ones():
    with pytest.raises(scenarios.UnknownScenario) as err:
        scenarios.get("split-brain")
    assert "split-brain" in str(err.value) and "last-replica-standing" in str(err.value)


def test_scenario_options_fix_the_section_5_setup_and_take_the_users_choices():
    s = scenarios.get("lrs")
    options = scenarios.scenario_options(s, backend="docker", variant="kip966", seed=7)
    assert options["variant"] == "kip966" and options["backend"] == "docker" and options["seed"] == 7
    assert (options["brokers"], options["replication_factor"], options["min_isr"], options["keys"]) == (3, 3, 2, 1)
    assert options["acks"] == "all" and options["flush_messages"] is None
    assert options["nemesis"] == ["disk", "partition"]
    assert scenarios.scenario_options(s)["variant"] == "v3.5"  # the reproduction is the default
    with pytest.raises(ValueError, match="no variant"):
        scenarios.scenario_options(s, variant="v2.8")


def test_scenario_spec_is_a_valid_run_spec_marked_as_a_reproduction():
    from checkers.queue.profiles import derive_profile

    args = argparse.Namespace(backend="local", variant="v3.5", seed=11)
    spec, environment = command.build_scenario_spec(scenarios.get("lrs"), args, ["lrs", "--seed", "11"])
    assert spec.scenario == "last-replica-standing" and spec.seed == 11 and spec.variant == "v3.5"
    assert environment["argv"][:2] == ["kraftcheck", "scenario"]
    power_loss = [{"process": "nemesis", "type": "ok", "f": "power-loss", "value": {"effective": True}}]
    profile = derive_profile(spec, power_loss, has_final=True)
    assert profile["inputs"]["lrs_reproduction"] is True
    assert profile["statuses"]["lost-write"] == "expected"
    spec966 = replace(spec, variant="kip966")
    assert derive_profile(spec966, power_loss, has_final=True)["statuses"]["lost-write"] == "forbidden"


def test_replay_argv_repeats_backend_variant_and_seed():
    assert scenario_argv("last-replica-standing", RunSpec(backend="local", variant="kip966", seed=5)) == [
        "kraftcheck", "scenario", "last-replica-standing", "--backend", "local", "--variant", "kip966",
        "--seed", "5"]


# -- command-line errors (no cluster is started for any of them) ------------------------------------------


def test_list_prints_every_scenario_with_its_seed_section_and_expectations(capsys):
    assert command.main(["--list"]) == 0
    out = capsys.readouterr().out
    for name in scenarios.names():
        assert f"{name}  [" in out
    assert "last-replica-standing  [v3.5: expected-failure, kip966: valid]" in out
    assert "reproduces: seed 002 (KIP-435" in out and "reproduces: seed 003 (KIP-860" in out


@pytest.mark.parametrize("argv, needle", [
    ([], "a scenario name is required"),
    (["no-such-scenario"], "unknown scenario 'no-such-scenario'"),
    (["lrs", "--seed", "-3"], "seed (--seed): must be >= 0"),
])
def test_argument_errors_exit_2_with_a_message(argv, needle, capsys, tmp_path):
    assert command.main([*argv, "--store", str(tmp_path)]) == 2
    assert needle in capsys.readouterr().err
    assert not list(tmp_path.iterdir()), "nothing is stored for a refused command"


@pytest.mark.parametrize("argv", [["lrs", "--variant", "v2.8"], ["lrs", "--backend", "ssh"]])
def test_argparse_choices_are_enforced(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        command.main(argv)
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_local_backend_without_root_is_refused_clearly(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(command.os, "geteuid", lambda: 1000)
    assert command.main(["last-replica-standing", "--store", str(tmp_path)]) == 255
    err = capsys.readouterr().err
    assert "needs root" in err and "--backend docker" in err
    assert not list(tmp_path.iterdir())


def test_docker_backend_without_an_engine_is_refused_clearly(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(command, "docker_problem", lambda: "cannot reach a Docker engine (test)")
    assert command.main(["lrs", "--backend", "docker", "--store", str(tmp_path)]) == 255
    assert "cannot reach a Docker engine" in capsys.readouterr().err


def test_dispatcher_routes_scenario():
    from kraftcheck.cli import SUBCOMMANDS

    assert SUBCOMMANDS["scenario"][0] == "kraftcheck.commands.scenario"


# -- reading the trace ------------------------------------------------------------------------------------

T = "lrs"


def ctl(time, **state):
    base = {"replicas": [1, 2, 3], "isr": [1, 2, 3], "elr": [], "last_known_elr": [], "leader": 1,
            "leader_epoch": 0, "partition_epoch": 0}
    base.update(state)
    return {"time": time, "node": "controller", "kind": "metadata_applied", "source": "controller", "topic": T,
            "partition": 0, **base}


def lrs_trace(variant):
    """The controller's and replicas' events of docs/protocol-rules.md 5.1 (leader 1), times in s * 1e9."""
    s = int(1e9)
    events = [
        ctl(1 * s),
        {"time": 3 * s, "node": "controller", "kind": "fenced", "broker": 2, "source": "controller"},
        ctl(3 * s, isr=[1, 3], partition_epoch=1),
        {"time": 4 * s, "node": "controller", "kind": "fenced", "broker": 3, "source": "controller"},
    ]
    if variant == "v3.5":
        events += [
            ctl(4 * s, isr=[1], partition_epoch=2),
            {"time": 6 * s, "node": "controller", "kind": "fenced", "broker": 1, "source": "controller"},
            ctl(6 * s, isr=[1], leader=-1, leader_epoch=1, partition_epoch=3),
            {"time": 7 * s, "node": "controller", "kind": "registered", "broker": 1, "source": "controller"},
            {"time": 7 * s + 1, "node": "controller", "kind": "unfenced", "broker": 1, "source": "controller"},
            ctl(7 * s + 2, isr=[1], leader=1, leader_epoch=2, partition_epoch=4),
            {"time": 7 * s + 2, "node": "controller", "kind": "election", "source": "controller", "topic": T,
             "partition": 0, "type": "clean", "leader": 1, "previous_leader": -1, "leader_epoch": 2,
             "previous_isr": [1]},
            {"time": 7 * s + 3, "node": "b1", "kind": "leader_epoch_start", "topic": T, "partition": 0,
             "replica": 1, "leader_epoch": 2, "leo": 0, "leso": 0, "hwm": 0},
            {"time": 9 * s, "node": "b2", "kind": "truncate", "topic": T, "partition": 0, "replica": 2,
             "from_leo": 3, "to_offset": 0, "diverging_epoch": 0},
        ]
    else:
        events += [
            ctl(4 * s, isr=[1], elr=[3], partition_epoch=2),
            ctl(6 * s, isr=[], elr=[1, 3], leader=-1, leader_epoch=1, partition_epoch=3),
            {"time": 7 * s, "node": "controller", "kind": "registered", "broker": 1, "source": "controller"},
            ctl(7 * s + 1, isr=[], elr=[3], last_known_elr=[1], leader=-1, leader_epoch=1, partition_epoch=4),
            {"time": 9 * s, "node": "controller", "kind": "unfenced", "broker": 3, "source": "controller"},
            ctl(9 * s + 1, isr=[3], elr=[], leader=3, leader_epoch=2, partition_epoch=5),
            {"time": 9 * s + 1, "node": "controller", "kind": "election", "source": "controller", "topic": T,
             "partition": 0, "type": "elr", "leader": 3, "previous_leader": -1, "leader_epoch": 2,
             "previous_isr": []},
            {"time": 9 * s + 2, "node": "b3", "kind": "leader_epoch_start", "topic": T, "partition": 0,
             "replica": 3, "leader_epoch": 2, "leo": 3, "leso": 3, "hwm": 3},
        ]
    return events


def test_controller_state_before_a_time_and_fencing():
    events = lrs_trace("kip966")
    s = int(1e9)
    assert observe.controller_state(events, T, 0, before=5 * s)["isr"] == [1]
    assert observe.controller_state(events, T, 0, before=5 * s)["elr"] == [3]
    assert observe.controller_state(events, T, 0)["leader"] == 3
    assert observe.controller_state(events, "other", 0) is None
    assert observe.fenced_brokers(events, before=5 * s) == {2, 3}
    # broker 1 registered again (fenced until unfenced, C4); 3 was unfenced at 9 s
    assert observe.fenced_brokers(events) == {1, 2}
    assert observe.describe_state(observe.controller_state(events, T, 0, before=8 * s)) == \
        "leader -1 LE 1 PE 4 ISR [] ELR [3] LKELR [1]"


def test_elections_leadership_start_and_truncations():
    events = lrs_trace("v3.5")
    s = int(1e9)
    won = observe.elections(events, T, 0, after=5 * s)
    assert [(e["leader"], e["type"], e["previous_isr"]) for e in won] == [(1, "clean", [1])]
    assert observe.leadership_start(events, T, 0, 1, 2)["leo"] == 0
    assert observe.leadership_start(events, T, 0, 2) is None
    assert [(c["replica"], c["from_leo"], c["to_offset"]) for c in observe.truncations(events, T, 0, 8 * s)] == \
        [(2, 3, 0)]


# -- the judgement ------------------------------------------------------------------------------------------


def history(read_back):
    """Three acknowledged sends of X, the power loss of leader 1 (invoked at 5.5 s, before its step was
    recorded at 6.5 s), then a final read returning ``read_back`` for key 0."""
    ops = [{"index": 100, "time": int(5.5e9), "type": "invoke", "process": "nemesis", "f": "power-loss",
            "value": {"nodes": ["b1"]}},
           {"index": 101, "time": int(6.5e9), "type": "ok", "process": "nemesis", "f": "power-loss",
            "value": {"nodes": ["b1"], "effective": True}}]
    for i, value in enumerate((1, 2, 3)):
        ops.append({"index": 2 * i, "time": i, "type": "invoke", "process": 0, "f": "send", "value": [0, value]})
        ops.append({"index": 2 * i + 1, "time": i, "type": "ok", "process": 0, "f": "send",
                    "value": [0, [i, value]]})
    ops.append({"index": 6, "time": int(20e9), "type": "invoke", "process": 10_000_000, "f": "poll",
                "value": None, "final": True})
    ops.append({"index": 7, "time": int(20e9), "type": "ok", "process": 10_000_000, "f": "poll",
                "value": {"0": read_back}, "final": True})
    return ops


STEPS = [
    {"step": "roles", "time": int(0.5e9), "leader": 1, "followers": [2, 3]},
    {"step": "power-loss-leader", "time": int(6.5e9), "leo_before": {"b1": {"lrs-0": 3}},
     "leo_after": {"b1": {"lrs-0": 0}}, "dropped_bytes": {"b1": 356}},
    {"step": "heal-partition", "time": int(8e9)},
]


def results_for(valid, anomalies, status):
    return {"valid": valid, "checkers": {"queue": {"valid": valid, "anomaly_types": anomalies}},
            "profile": {"statuses": {"lost-write": status}}}


def test_v35_loss_is_the_expectation_and_is_labelled_the_known_issue():
    spec = RunSpec(variant="v3.5", topic=T)
    judged = lrs.judge(spec, STEPS, history([]), lrs_trace("v3.5"),
                       results_for(True, ["unseen", "acked-unreadable"], "expected"))
    assert judged["expectation_met"] is True
    assert judged["acked_lost"] == [[0, 1], [1, 2], [2, 3]]
    assert "KNOWN ISSUE: Last Replica Standing" in judged["label"]
    facts = judged["facts"]
    assert facts["ISR before the crash"] == [1]
    assert facts["controller state before the crash"] == "leader 1 LE 0 PE 2 ISR [1] ELR [] LKELR []"
    assert facts["elected leader"] == 1 and facts["LEO of the elected leader when it took over"] == 0
    assert facts["truncations after the heal"] == ["b2: LEO 3 -> 0"]
    assert facts["guarantee profile for acked-write loss"]["an ordinary run with these faults"] == "known-issue"
    assert "known-issue in any other v3.5 run" in judged["label"]
    json.dumps(judged)  # goes into results.json as is


def test_v35_without_loss_does_not_count_as_a_reproduction():
    judged = lrs.judge(RunSpec(variant="v3.5", topic=T), STEPS, history([[0, 1], [1, 2], [2, 3]]),
                       lrs_trace("v3.5"), results_for(True, [], "expected"))
    assert judged["expectation_met"] is False and judged["label"] is None


def test_kip966_expects_no_loss_and_a_valid_verdict():
    spec = RunSpec(variant="kip966", topic=T)
    kept = history([[0, 1], [1, 2], [2, 3]])
    judged = lrs.judge(spec, STEPS, kept, lrs_trace("kip966"), results_for(True, [], "forbidden"))
    assert judged["expectation_met"] is True and judged["acked_lost"] == []
    assert judged["facts"]["ELR before the crash"] == [3]
    assert judged["facts"]["elections after the crash"] == ["b3 (elr, LE 2, from ISR [])"]
    assert judged["facts"]["LEO of the elected leader when it took over"] == 3
    lost = lrs.judge(spec, STEPS, history([]), lrs_trace("kip966"),
                     results_for(False, ["acked-unreadable"], "forbidden"))
    assert lost["expectation_met"] is False


def test_final_read_incomplete_never_meets_an_expectation():
    ops = [op for op in history([]) if not op.get("final")]
    judged = lrs.judge(RunSpec(variant="v3.5", topic=T), STEPS, ops, lrs_trace("v3.5"),
                       results_for(True, [], "expected"))
    assert judged["expectation_met"] is False


def test_report_block_shows_expectation_facts_and_steps():
    section = {"name": "last-replica-standing", "variant": "v3.5", "recipe": "r <5.1>",
               "expectation": "loss", "expectation_met": True, "label": "KNOWN ISSUE: LRS",
               "facts": {"ISR before the crash": [1]},
               "steps": [{"step": "produce", "time": int(2.5e9), "summary": "X <acked>"}]}
    block = scenario_html(section)
    assert "Expectation met" in block and "KNOWN ISSUE: LRS" in block
    assert "ISR before the crash" in block and "2.50" in block and "X &lt;acked&gt;" in block


# -- the scripted runner's helpers ----------------------------------------------------------------------------


class _Run:
    def __init__(self):
        self.lines = []

    def log(self, message):
        self.lines.append(message)


def scripted_runner(tmp_path):
    import io

    from kraftcheck.scenarios.script import ScriptedRunner

    spec = RunSpec(backend="local", variant="v3.5", seed=3, test_name="last-replica-standing")
    return ScriptedRunner(scenarios.get("lrs"), spec, tmp_path, progress=False, report=False, out=io.StringIO())


def test_wait_for_returns_the_observation_or_names_what_it_waited_for(tmp_path):
    from kraftcheck.scenarios.script import ScenarioError

    runner, run = scripted_runner(tmp_path), _Run()
    seen = iter([(False, "isr [1,2,3]"), (True, "isr [1]")])
    assert runner.wait_for(run, "the ISR to shrink", lambda: next(seen), 5) == "isr [1]"

    def flaky():
        raise OSError("trace file not there yet")

    with pytest.raises(ScenarioError, match=r"waiting for the ISR to shrink; last seen: OSError: trace file"):
        runner.wait_for(run, "the ISR to shrink", flaky, 0.3)


def test_steps_are_recorded_logged_and_printed(tmp_path):
    runner, run = scripted_runner(tmp_path), _Run()
    entry = runner.step(run, "produce", "X acknowledged", acked=[[0, 1]])
    assert entry == {"step": "produce", "time": None, "summary": "X acknowledged", "acked": [[0, 1]]}
    assert runner.steps == [entry]
    assert "step 1 produce: X acknowledged" in run.lines[0]
    assert "kraftcheck: step 1 produce: X acknowledged" in runner.out.getvalue()
    assert runner.replay() == "kraftcheck scenario last-replica-standing --backend local --variant v3.5 --seed 3"


def test_a_fault_that_did_not_take_effect_stops_the_script(tmp_path):
    from kraftcheck.scenarios.script import ScenarioError

    runner, run = scripted_runner(tmp_path), _Run()

    class Package:
        def execute(self, run, op):
            return {**op, "type": "ok", "value": {"effective": False, "probes_during": {"b2->controller": "refused"}}}

    runner.package = Package()
    with pytest.raises(ScenarioError, match="start-partition did not take effect"):
        runner.fault(run, "start-partition", {"edges": [["b2", "controller"]]})
