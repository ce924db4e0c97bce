"""harness.verdict: one function decides a run's verdict, one table gives its exit code."""

import io
import json

from checkers.analysis import check_run
from harness.spec import RunSpec
from harness.verdict import (
    EXIT_CODES,
    NO_CLIENT_OPS,
    Verdict,
    add_notes,
    combine,
    coverage_reasons,
    decide,
    record,
    verdict_lines,
    word_of,
)
from kraftcheck import judge
from kraftcheck.judge import check_store
from kraftcheck.runner import Runner

QUEUE_LOST = {"valid": False, "anomaly_types": ["lost-write"]}
QUEUE_OK = {"valid": True}
NO_TRACE = {"valid": "unknown", "counted": False, "reason": "no trace"}
KILL_NEVER_TRIED = {"kill": {"requested": True, "attempted": 0, "effective": 0, "failed": 0, "by_f": {}}}


def test_words_and_exit_codes_are_one_table():
    assert [word_of(v) for v in (True, False, "unknown", None, "weird")] == [
        "valid", "invalid", "unknown", "unknown", "unknown"]
    assert EXIT_CODES == {"valid": 0, "invalid": 1, "unknown": 2, "harness error": 255}
    assert [combine(vs) for vs in ([], [True], [True, "unknown"], ["unknown", False], [True, None])] == [
        True, True, "unknown", False, "unknown"]


def test_a_proven_violation_stands_whatever_else_happened():
    verdict = decide({"queue": QUEUE_LOST, "invariants": NO_TRACE}, coverage=KILL_NEVER_TRIED,
                     notes=["final read did not complete"])
    assert (verdict.word, verdict.valid, verdict.exit_code) == ("invalid", False, 1)
    assert verdict.reasons == ("queue: invalid (lost-write)", "final read did not complete",
                               "nemesis 'kill' was requested but never attempted")
    assert verdict.caps == verdict.reasons[1:]


def test_caps_turn_valid_into_unknown_and_uncounted_checkers_do_not_count():
    assert decide({"queue": QUEUE_OK, "invariants": NO_TRACE}).word == "valid"
    capped = decide({"queue": QUEUE_OK}, coverage=KILL_NEVER_TRIED)
    assert (capped.word, capped.exit_code) == ("unknown", 2)
    assert decide({"queue": QUEUE_OK}, notes=["run interrupted"]).reasons == ("run interrupted",)
    assert decide({"queue": {"valid": "unknown", "error": "boom"}}).reasons == ("queue: unknown (boom)",)
    assert decide({"queue": "garbage"}).word == "unknown"


def test_an_undecided_invariant_is_named_with_its_reason():
    undecided = {"valid": "unknown", "violated": [], "undecided": {"I3": "the events it needs are absent"}}
    assert decide({"invariants": undecided}).reasons == (
        "invariants: unknown (I3 the events it needs are absent)",)


def test_a_harness_error_is_unknown_with_its_own_exit_code():
    verdict = decide({}, harness_error="cluster never came up")
    assert (verdict.word, verdict.exit_code) == ("unknown", 255)
    results = record({"checkers": {}}, verdict)
    assert results["reasons"] == ["harness error: cluster never came up"]
    assert Verdict.of(results).exit_code == 255


def test_coverage_reasons_name_unattempted_and_unproven_families():
    table = {**KILL_NEVER_TRIED, "pause": {"requested": True, "attempted": 3, "effective": 0},
             "clock": {"requested": False, "attempted": 1, "effective": 0},
             "stop": {"requested": True, "attempted": 1, "effective": 1}}
    assert coverage_reasons(table) == ["nemesis 'kill' was requested but never attempted",
                                       "nemesis 'pause' was attempted 3 times but never proven effective"]


def test_record_round_trips_and_add_notes_keeps_the_stored_caps_once():
    results = record({"checkers": {"queue": QUEUE_OK}}, decide({"queue": QUEUE_OK}, coverage=KILL_NEVER_TRIED))
    assert results["verdict"] == "unknown" and results["harness_notes"] == [
        "nemesis 'kill' was requested but never attempted"]
    assert Verdict.of(json.loads(json.dumps(results))) == decide({"queue": QUEUE_OK}, coverage=KILL_NEVER_TRIED)
    add_notes(results, ["scenario expectation not met"])
    assert results["harness_notes"] == ["nemesis 'kill' was requested but never attempted",
                                        "scenario expectation not met"]
    valid = record({"checkers": {"queue": QUEUE_OK}}, decide({"queue": QUEUE_OK}))
    assert "harness_notes" not in valid and valid["reasons"] == [] and valid["valid"] is True
    assert add_notes(valid, ["interrupted"])["verdict"] == "unknown"
    # Results written before the verdict had words are read through Jepsen's encoding.
    assert Verdict.of({"valid": False}).word == "invalid"
    assert verdict_lines({"valid": True}) == ["verdict valid"]


def _write(path, ops):
    path.write_text("".join(json.dumps(op) + "\n" for op in ops), encoding="utf-8")
    return path


def test_a_history_of_nemesis_ops_only_proves_nothing(tmp_path):
    ops = [{"index": 0, "time": 1, "type": "invoke", "process": "nemesis", "f": "kill", "value": None},
           {"index": 1, "time": 2, "type": "ok", "process": "nemesis", "f": "kill", "value": {"effective": True}}]
    results = check_run({}, _write(tmp_path / "history.jsonl", ops), None, options={"linear": False})
    assert results["verdict"] == "unknown" and results["harness_notes"] == [NO_CLIENT_OPS]


def test_a_failing_check_is_unknown_and_says_why(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("checker bug")

    _write(tmp_path / "history.jsonl", [])
    (tmp_path / "spec.json").write_text("{}")
    monkeypatch.setattr(judge, "check_run", broken)
    results = check_store(tmp_path)
    assert results["verdict"] == "unknown" and results["error"] == "RuntimeError: checker bug"
    assert results["harness_notes"] == ["the checkers failed: RuntimeError: checker bug"]


def test_the_runner_prints_the_verdict_and_exits_by_the_table(tmp_path):
    out = io.StringIO()
    run = Runner(RunSpec(test_name="t", seed=1), tmp_path, out=out)
    run.run_dir = tmp_path
    results = record({"checkers": {"queue": QUEUE_LOST}}, decide({"queue": QUEUE_LOST}, notes=["interrupted"]))
    outcome = run._say_verdict(results, None, None)
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["kraftcheck: verdict invalid", "kraftcheck:   queue: invalid (lost-write)",
                         "kraftcheck:   interrupted"]
    assert (outcome.exit_code, outcome.verdict) == (1, "invalid")
    failed = run._harness_error({}, "no docker")
    stored = json.loads((tmp_path / "results.json").read_text())
    assert (failed.exit_code, failed.verdict) == (255, "unknown")
    assert stored["verdict"] == "unknown" and stored["harness_error"] == "no docker"
