"""A file that is not a JSONL history, given where one is expected: said once, in one line, exit 2."""

import json

import pytest

from checkers.history.export import to_edn
from harness.history import (
    HistoryFormatError,
    MalformedLine,
    edn_problem,
    first_op,
    iter_json_lines,
    malformed_summary,
    read_history,
)
from kraftcheck.cli import main
from tests.checkers.fixtures import GOLDEN

OPS = GOLDEN["unseen"][0]


@pytest.fixture
def edn_history(tmp_path):
    path = tmp_path / "history.edn"
    path.write_text(to_edn(OPS))
    return path


def test_an_edn_history_is_recognised_from_its_first_line(edn_history, tmp_path):
    assert "EDN history" in edn_problem(edn_history)
    with pytest.raises(HistoryFormatError, match="EDN history"):
        read_history(edn_history)
    vector = tmp_path / "vector.edn"
    vector.write_text("[" + to_edn(OPS) + "]")
    with pytest.raises(HistoryFormatError):
        list(iter_json_lines(vector))
    jsonl = tmp_path / "h.jsonl"
    jsonl.write_text("".join(json.dumps(op) + "\n" for op in OPS))
    assert edn_problem(jsonl) is None and len(read_history(jsonl).ops) == len(OPS)


def test_a_torn_jsonl_history_is_not_mistaken_for_edn(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text('{"type": "inv\n' + json.dumps(OPS[0]) + "\n")
    history = read_history(path)
    assert len(history.ops) == 1 and history.malformed[0].line == 1


def test_first_op_reads_to_the_first_usable_line(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text("junk\n\n" + json.dumps(OPS[0]) + "\n")
    assert first_op(path)["f"] == OPS[0]["f"]
    path.write_text("junk\n[]\n")
    assert first_op(path) is None


def test_malformed_summary_shows_a_few_then_a_count():
    bad = [MalformedLine("h.jsonl", n, "invalid JSON") for n in range(1, 1001)]
    lines = malformed_summary(bad)
    assert lines[:2] == ["h.jsonl:1: invalid JSON", "h.jsonl:2: invalid JSON"]
    assert len(lines) == 6 and lines[-1] == "... and 995 more malformed lines (1000 in all)"
    assert malformed_summary([{"file": "t", "line": 3, "reason": "r"}], prefix="bad: ") == ["bad: t:3: r"]
    assert malformed_summary(bad[:5], total=40)[-1] == "... and 35 more malformed lines (40 in all)"


def store_with_history(tmp_path, text):
    run = tmp_path / "queue" / "20260101T000000.000Z"
    run.mkdir(parents=True)
    (run / "spec.json").write_text(json.dumps({"test_name": "queue", "seed": 1}))
    (run / "history.jsonl").write_text(text)
    return run


@pytest.mark.parametrize("command", ["analyze", "report"])
def test_analyze_and_report_refuse_an_edn_history(command, tmp_path, capsys):
    run = store_with_history(tmp_path, to_edn(OPS))
    assert main([command, str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "EDN history" in err[0] and "history.jsonl" in err[0]
    assert not (run / "results.json").exists()


def test_analyze_counts_malformed_lines(tmp_path, capsys):
    run = store_with_history(tmp_path, "".join(json.dumps(op) + "\n" for op in OPS) + "{bad\n" * 200)
    main(["analyze", str(run), "--no-report"])
    malformed = [line for line in capsys.readouterr().err.splitlines()
                 if line.startswith(("kraftcheck analyze: malformed line", "kraftcheck analyze: ... and"))]
    assert len(malformed) == 6 and "195 more malformed lines (200 in all)" in malformed[-1]


def test_the_spark_engine_refuses_edn_before_starting_a_jvm(edn_history, monkeypatch):
    import spark_analysis.engine as engine

    monkeypatch.setattr(engine, "get_session", lambda *a, **k: pytest.fail("a Spark session was started"))
    with pytest.raises(HistoryFormatError, match="EDN history"):
        engine.check_run_spark({}, str(edn_history))


def test_spark_check_and_the_parquet_export_refuse_edn(edn_history, tmp_path, capsys):
    from spark_analysis.cli import dispatch

    assert main(["export", "--history", str(edn_history), "--format", "parquet", "--out",
                 str(tmp_path / "out.parquet")]) == 2
    assert "EDN history" in capsys.readouterr().err
    assert dispatch(["check", str(edn_history)]) == 2
    assert "EDN history" in capsys.readouterr().err
    assert not (tmp_path / "out.parquet").exists()


def test_aggregate_of_a_missing_store_is_a_usage_error(tmp_path, capsys):
    assert main(["aggregate", str(tmp_path / "no-store")]) == 2
    assert "not a directory" in capsys.readouterr().err
