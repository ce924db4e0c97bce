"""The harness's CLI commands without a cluster: argument errors, analyze of a partial store, report."""

import json

import pytest

from harness.cli import main
from harness.history import HistoryWriter


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
    import harness.runner as runner
    from harness.runner import RunOutcome
    from harness.spec import DEFAULTS, build_spec

    stored = build_spec({"seed": 1234, "nemesis": "kill", "keys": 2, "variant": "v3.5", "min_isr": 1})
    (tmp_path / "spec.json").write_text(json.dumps(stored))
    seen = []

    def fake_execute(spec, store_root, progress=True, report=True, out=None):  # records, runs nothing
        seen.append(spec)
        return RunOutcome(tmp_path, 0, {"valid": True})

    monkeypatch.setattr(runner, "execute", fake_execute)
    assert main(["run", "--replay", str(tmp_path / "spec.json")]) == 0
    assert all(seen[0][k] == stored[k] for k in DEFAULTS)
    assert main(["run", "--replay", str(tmp_path), "--time-limit", "3"]) == 0
    assert seen[1]["time_limit_s"] == 3.0 and seen[1]["seed"] == 1234


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
