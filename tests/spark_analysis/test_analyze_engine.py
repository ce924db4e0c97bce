"""``kraftcheck analyze STORE_DIR --engine spark``: the queue result of the Python engine, computed by Spark."""

import json

import pytest

from checkers.analysis import check_run
from kraftcheck.cli import main
from spark_analysis.engine import NOT_COMPUTED

from .planted import planted_history


def _run_dir(tmp_path, ops, spec):
    run = tmp_path / "store" / "queue" / "20261122T120000.000Z"
    run.mkdir(parents=True)
    (run / "spec.json").write_text(json.dumps(spec))
    (run / "history.jsonl").write_text("".join(json.dumps(op) + "\n" for op in ops))
    return run


def test_master_without_spark_engine_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(tmp_path), "--master", "local[2]"])
    assert exc.value.code == 2
    assert "--master needs --engine spark" in capsys.readouterr().err


def test_spark_engine_without_history_is_a_clear_error(tmp_path, capsys):
    run = tmp_path / "store" / "queue" / "20261122T120000.000Z"
    run.mkdir(parents=True)
    (run / "spec.json").write_text("{}")
    assert main(["analyze", str(run), "--engine", "spark", "--no-report"]) == 2
    assert "no history.jsonl" in capsys.readouterr().err


@pytest.mark.slow
def test_analyze_with_spark_engine_matches_the_python_queue_checker(spark, tmp_path, capsys):
    ops = planted_history(300, seed=11)
    spec = {"variant": "v3.5", "acks": "all", "min_isr": 2, "nemesis": [], "final_read_timeout_s": 30}
    run = _run_dir(tmp_path, ops, spec)
    python = check_run(spec, run / "history.jsonl", None)["checkers"]["queue"]

    code = main(["analyze", str(run), "--engine", "spark", "--master", "local[2]", "--no-report", "--json"])
    out, err = capsys.readouterr()
    results = json.loads(out)
    assert json.loads((run / "results.json").read_text())["engine"] == "spark"
    queue = results["checkers"]["queue"]
    # Every queue kind, the cycles included (the planted history has G0 cycles).
    assert "G0" in python["anomaly_types"]
    assert queue["anomalies"] == json.loads(json.dumps(python["anomalies"]))
    assert queue["anomaly_types"] == python["anomaly_types"]
    assert results["valid"] == python["valid"] is False and code == 1
    assert results["not_computed"] == NOT_COMPUTED
    assert NOT_COMPUTED == ["linearizability", "invariants"]
    assert "not computed by the spark engine: linearizability, invariants" in err


@pytest.mark.slow
def test_analyze_with_spark_engine_judges_a_subscribing_run_with_the_group_checks(spark, tmp_path, capsys):
    from tests.support.groups import commit_regression, with_final

    ops = with_final(commit_regression())
    spec = {"variant": "kip966", "acks": "all", "min_isr": 2, "nemesis": [], "sub_via": "subscribe"}
    run = _run_dir(tmp_path, ops, spec)
    python = check_run(spec, run / "history.jsonl", None, options={"linear": False})["checkers"]["groups"]

    code = main(["analyze", str(run), "--engine", "spark", "--master", "local[2]", "--json"])
    out, err = capsys.readouterr()
    results = json.loads(out)
    groups = results["checkers"]["groups"]
    assert groups["anomalies"] == json.loads(json.dumps(python["anomalies"]))
    assert groups["forbidden_found"] == ["commit-regression"] and results["valid"] is False and code == 1
    assert "groups: invalid (commit-regression)" in results["reasons"]
    assert results["not_computed"] == NOT_COMPUTED  # the group checks are no longer left to the Python engine
    report = (run / "report.html").read_text()
    assert "groups: commit-regression (1, forbidden)" in report
