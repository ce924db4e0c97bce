"""The harness's CLI commands without a cluster: argument errors, analyze of a partial store, report."""

import json
import re

import pytest

from harness.history import HistoryWriter
from kraftcheck.cli import main


@pytest.mark.parametrize("argv, needle", [
    (["run", "--concurrency", "0"], "concurrency"),
    (["run", "--brokers", "2"], "replication_factor"),
    (["run", "--time-limit", "-3"], "time_limit_s"),
    (["run", "--nemesis", "meteor"], "meteor"),
])
def test_run_rejects_bad_arguments_with_a_clear_message(argv, needle, capsys, tmp_path):
    assert main(argv + ["--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "error" in err and needle in err
    assert not list(tmp_path.iterdir())  # nothing started, nothing stored


def test_run_argparse_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--variant", "v9"])
    assert exc.value.code == 2 and "--variant" in capsys.readouterr().err


def test_replay_of_a_missing_spec_is_an_argument_error(capsys, tmp_path):
    assert main(["run", "--replay", str(tmp_path / "nope.json")]) == 2
    assert "no spec" in capsys.readouterr().err


def partial_store(tmp_path):
    """What a harness killed with SIGKILL leaves: spec, a streamed history with a torn last line."""
    run = tmp_path / "queue" / "20261122T000000.000Z"
    run.mkdir(parents=True)
    (run / "spec.json").write_text(json.dumps({"test_name": "queue", "seed": 1, "nemesis": []}))
    with HistoryWriter(run / "history.jsonl") as writer:
        writer.append({"type": "invoke", "process": 0, "f": "send", "value": [0, 1]})
        writer.append({"type": "ok", "process": 0, "f": "send", "value": [0, [0, 1]]})
        writer.append({"type": "invoke", "process": 1, "f": "send", "value": [0, 2]})
    with open(run / "history.jsonl", "a") as fh:
        fh.write('{"index": 3, "time": 99, "type": "o')
    return run


def test_analyze_partial_store_is_unknown_with_report(tmp_path, capsys):
    run = partial_store(tmp_path)
    code = main(["analyze", str(run), "--json"])
    out, err = capsys.readouterr()
    results = json.loads(out)
    assert code == 2 and results["valid"] == "unknown"
    assert "malformed line" in err and "history.jsonl:4" in err
    assert any("final read" in n for n in results["harness_notes"])
    assert (run / "results.json").is_file() and (run / "report.html").is_file()


def test_analyze_and_report_accept_a_store_root_via_latest(tmp_path, capsys):
    run = partial_store(tmp_path)
    (tmp_path / "latest").symlink_to(run.relative_to(tmp_path))
    assert main(["analyze", str(tmp_path), "--no-report"]) == 2
    assert main(["report", str(tmp_path)]) == 0
    assert str(run / "report.html") in capsys.readouterr().out


def test_analyze_of_a_non_run_is_a_clear_error(tmp_path, capsys):
    assert main(["analyze", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_cluster_status_and_down_without_a_cluster(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KRAFTCHECK_STATE", str(tmp_path / "state"))
    assert main(["cluster", "status"]) == 1
    assert main(["cluster", "down"]) == 0
    assert "no cluster is running" in capsys.readouterr().out


def test_missing_docker_engine_gives_the_local_hint(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such-docker.sock")
    assert main(["run", "--backend", "docker", "--store", str(tmp_path / "store")]) == 255
    err = capsys.readouterr().err
    assert "Docker engine" in err and "--backend local" in err
    assert not (tmp_path / "store").exists()


def test_replay_rebuilds_the_stored_spec_and_lets_flags_override(tmp_path, monkeypatch):
    import kraftcheck.commands.run as run_command
    from harness.spec import DEFAULTS, build_spec
    from kraftcheck.runner import RunOutcome

    stored = build_spec({"seed": 1234, "nemesis": "kill", "keys": 2, "variant": "v3.5", "min_isr": 1})
    (tmp_path / "spec.json").write_text(json.dumps(stored))
    seen = []

    def fake_execute(spec, store_root, progress=True, report=True, out=None, environment=None):  # runs nothing
        seen.append(spec.to_dict())
        return RunOutcome(tmp_path, 0, {"valid": True})

    monkeypatch.setattr(run_command, "execute", fake_execute)
    assert main(["run", "--replay", str(tmp_path / "spec.json")]) == 0
    assert all(seen[0][k] == stored[k] for k in DEFAULTS)
    # (a time limit the stored interval leaves one turn of kill in: harness.fault_time)
    assert main(["run", "--replay", str(tmp_path), "--time-limit", "25"]) == 0
    assert seen[1]["time_limit_s"] == 25.0 and seen[1]["seed"] == 1234


def test_analyze_rebuilds_trace_and_logs_of_a_killed_run(tmp_path, capsys):
    from harness import store

    run = partial_store(tmp_path)
    store.write_json(run / "clock.json", store.clock_record(1_000))
    for node, times in (("b1", [1_500, 3_000]), ("controller", [2_000])):
        d = run / "node-dirs" / node
        d.mkdir(parents=True)
        (d / "trace.jsonl").write_text("".join(f'{{"time": {t}, "node": "x", "kind": "hwm"}}\n' for t in times)
                                       + '{"time": 9')  # torn by the kill
        (d / "node.log").write_text(f"{node} log\n")
    assert main(["analyze", str(run), "--no-report"]) == 2
    assert "rebuilt trace.jsonl (3 events)" in capsys.readouterr().err
    trace = [json.loads(line) for line in (run / "trace.jsonl").read_text().splitlines()]
    assert [(e["time"], e["node_name"]) for e in trace] == [(500, "b1"), (1000, "controller"), (2000, "b1")]
    assert (run / "nodes" / "b1" / "node.log").read_text() == "b1 log\n"


# -- version and help ------------------------------------------------------------------------------------

def test_version_prints_the_package_version_and_the_git_commit(capsys):
    import subprocess
    from importlib.metadata import version
    from pathlib import Path

    assert main(["--version"]) == 0
    out = capsys.readouterr().out.strip()
    head = subprocess.run(["git", "-C", str(Path(__file__).parent), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    assert out.startswith(f"kraftcheck {version('kraftcheck')} (commit {head}")


def help_texts():
    """(command line, help text) of every command and sub-command of kraftcheck and of the Spark module."""
    from kraftcheck.cli import SUBCOMMANDS
    from spark_analysis.cli import dispatch

    lines = [["--help"], *[[name, "--help"] for name in SUBCOMMANDS],
             ["cluster", "up", "--help"], ["cluster", "down", "--help"], ["cluster", "status", "--help"]]
    for argv in lines:
        yield argv, main_output(main, argv)
    for name in ("aggregate", "check"):
        yield ["python -m spark_analysis", name], main_output(dispatch, [name, "--help"])


def main_output(entry, argv):
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            entry(argv)
        except SystemExit as exc:
            assert exc.code == 0, (argv, out.getvalue())
    return out.getvalue()


INTERNAL_NAME = re.compile(r"\b(?:harness|checkers|spark_analysis|reference_impl|nemesis|workloads|reports)\.[a-z_]"
                           r"|\b_[a-z]+\b|==SUPPRESS==")
MARKUP = re.compile(r"``|:(?:func|class|mod|meth):|(?<![\w*])\*[A-Za-z][^*\n]*\*(?![\w*])")


def test_help_texts_have_no_markup_and_no_internal_names():
    seen = 0
    for argv, text in help_texts():
        seen += 1
        assert text.strip(), argv
        assert not MARKUP.search(text), (argv, MARKUP.search(text).group(0))
        assert not INTERNAL_NAME.search(text), (argv, INTERNAL_NAME.search(text).group(0))
    assert seen == 23


# -- run: bad values before anything starts ---------------------------------------------------------------

@pytest.mark.parametrize("argv, needle", [
    (["--rate", "nan"], "rate (--rate): must be a finite number"),
    (["--time-limit", "inf"], "time_limit_s (--time-limit): must be a finite number"),
    (["--topic", "no spaces please"], "topic (--topic)"),
    (["--nemesis", "kill,meteor"], "unknown name(s) meteor"),
    (["--min-isr", "3", "--replication-factor", "2"], "min_isr (--min-isr)"),
])
def test_run_rejects_bad_values_before_a_cluster_starts(argv, needle, capsys, tmp_path, monkeypatch):
    import kraftcheck.commands.run as run_command

    monkeypatch.setattr(run_command, "execute", lambda *a, **k: pytest.fail("a run started"))
    assert main(["run", *argv, "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert needle in err[-1] and err[-1].startswith("kraftcheck run: error: ")
    assert not list(tmp_path.iterdir())


def test_run_rejects_an_unknown_injected_bug(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--inject-bug", "no-such-bug"])
    assert exc.value.code == 2 and "--inject-bug" in capsys.readouterr().err


def test_replay_of_a_hand_edited_spec_names_the_file_and_the_key(tmp_path, capsys, monkeypatch):
    import kraftcheck.commands.run as run_command
    from harness.spec import build_spec

    monkeypatch.setattr(run_command, "execute", lambda *a, **k: pytest.fail("a run started"))
    spec = tmp_path / "spec.json"
    for key, bad in (("keys", "four"), ("inject_bug", "typo"), ("rate", None), ("concurrency", 2.5)):
        spec.write_text(json.dumps({**build_spec({"seed": 1}), key: bad}))
        assert main(["run", "--replay", str(spec), "--store", str(tmp_path / "store")]) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"{spec}: {key} " in last, last
    spec.write_text('{"seed": 1, "rate": Infinity}')
    assert main(["run", "--replay", str(spec)]) == 2
    assert "Infinity is not a JSON number" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


def test_the_scenario_key_survives_replay(tmp_path, monkeypatch, capsys):
    import argparse

    from harness.spec import stored_form
    from kraftcheck import scenarios
    from kraftcheck.commands import scenario as scenario_command
    from kraftcheck.runner import RunOutcome

    args = argparse.Namespace(backend="local", variant="v3.5", seed=11)
    stored = stored_form(*scenario_command.build_scenario_spec(scenarios.get("lrs"), args, ["lrs", "--seed", "11"]))
    (tmp_path / "spec.json").write_text(json.dumps(stored))
    ran = []

    class RecordingRunner:  # stands in for ScriptedRunner: records what would run, starts nothing
        def __init__(self, scenario, spec, store_root, progress=True, report=True, out=None, environment=None):
            ran.append((scenario.name, spec.to_dict()))

        def execute(self):
            return RunOutcome(tmp_path, 0, {"valid": True})

    monkeypatch.setattr(scenario_command, "ScriptedRunner", RecordingRunner)
    monkeypatch.setattr(scenario_command, "environment_problem", lambda scenario, backend: None)
    import kraftcheck.commands.run as run_command
    monkeypatch.setattr(run_command, "execute", lambda *a, **k: pytest.fail("a random run started"))
    assert main(["run", "--replay", str(tmp_path / "spec.json"), "--time-limit", "9"]) == 0
    name, spec = ran[0]
    assert name == "last-replica-standing" and spec["scenario"] == "last-replica-standing"
    assert spec["seed"] == 11 and spec["variant"] == "v3.5" and spec["time_limit_s"] == 9.0
    assert spec["nemesis"] == stored["nemesis"] and spec["broker_session_timeout_ms"] == 3000
    assert main(["run", "--replay", str(tmp_path / "spec.json"), "--variant", "kip966"]) == 0
    assert ran[1][1]["variant"] == "kip966" and ran[1][1]["scenario"] == "last-replica-standing"
    (tmp_path / "spec.json").write_text(json.dumps({**stored, "scenario": "no-such-scenario"}))
    assert main(["run", "--replay", str(tmp_path / "spec.json")]) == 2
    assert "unknown scenario 'no-such-scenario'" in capsys.readouterr().err


def test_cluster_up_checks_its_options_before_starting_a_keeper(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KRAFTCHECK_STATE", str(tmp_path / "state"))
    assert main(["cluster", "up", "--brokers", "0", "--store", str(tmp_path / "store")]) == 2
    assert "brokers (--brokers): must be >= 1" in capsys.readouterr().err
    assert main(["cluster", "up", "--topic", "bad topic", "--store", str(tmp_path / "store")]) == 2
    assert not (tmp_path / "store").exists()


def test_replay_of_a_spec_naming_an_unknown_workload_is_an_argument_error(tmp_path, capsys):
    from harness.spec import build_spec

    stored = build_spec({"seed": 1, "workload": "meteor"})  # a name is only checked against the registry
    (tmp_path / "spec.json").write_text(json.dumps(stored))
    store = tmp_path / "store"
    assert main(["run", "--replay", str(tmp_path / "spec.json"), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "workload" in err and "meteor" in err and "known: queue" in err
    assert not store.exists()  # nothing started, nothing stored
