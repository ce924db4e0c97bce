"""``kraftcheck simulate``: exit codes (0 nothing found, 1 a violation, 2 bad arguments), the replay of a
written schedule, and one-line errors naming the bad flag or file."""

from __future__ import annotations

from kraftcheck.cli import main as kraftcheck
from simulator import Schedule, SimOptions, search
from simulator.cli import main


def test_nothing_found_exits_0(capsys):
    assert main(["--variant", "kip966", "--schedules", "3"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "kraftcheck simulate: seed 0, variant kip966",
        "command: kraftcheck simulate --seed 0 --variant kip966 --reassignment-mode all-at-once --brokers 3 "
        "--schedules 3",
        "no violation in seeds 0..2 (kip966)",
    ]


def test_a_violation_is_reported_shrunk_written_and_replayed(tmp_path, capsys):
    assert kraftcheck(["simulate", "--seed", "0", "--schedules", "10", "--shrink-runs", "80",
                       "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    # Last Replica Standing, at the first seed the search finds it (steered episodes crash leaders early)
    first = search(0, 10, SimOptions()).seed
    path = tmp_path / f"simulate-v3.5-seed{first}.json"
    assert "found: I2 broken at step" in out and f"seed {first}, variant v3.5" in out
    assert f"replay: kraftcheck simulate --replay {path}" in out
    trace = tmp_path / "trace.jsonl"
    assert main(["--replay", str(path), "--trace", str(trace)]) == 1
    replayed = capsys.readouterr().out
    assert replayed.startswith("replayed: I2 broken at step")
    assert trace.read_text().count("\n") > 10


def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    other = tmp_path / "other.json"
    other.write_text('{"format": "something else"}')
    wrong = tmp_path / "wrong.json"
    wrong.write_text(Schedule(0, SimOptions(), ({"at": 5, "do": "crash", "node": 7},)).to_json())
    cases = [(["--schedules", "0"], "--schedules"), (["--variant", "v9"], "--variant"),
             (["--steps", "-1"], "--steps"), (["--faults", "crash,meteor"], "--faults"),
             (["--out", str(tmp_path / "missing")], "--out"), (["--trace", "x.jsonl"], "--trace"),
             (["--replay", str(tmp_path / "missing.json")], "missing.json"),
             (["--replay", str(bad)], "bad.json"), (["--replay", str(other)], "other.json"),
             (["--replay", str(wrong)], "event 0: crash: 'node' must be a broker id 1..3"),
             (["--time-limit", "0"], "--time-limit"), (["--brokers", "2"], "replication factor 3 with 2 brokers"),
             (["--reassignment-mode", "sideways"], "--reassignment-mode")]
    for argv, named in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and named in err, (argv, err)


def test_incremental_reassignment_on_four_brokers(capsys):
    assert main(["--seed", "0", "--schedules", "20", "--variant", "kip966", "--reassignment-mode", "incremental",
                 "--brokers", "4", "--faults", "reassign,crash"]) == 0
    assert "no violation in seeds 0..19" in capsys.readouterr().out

