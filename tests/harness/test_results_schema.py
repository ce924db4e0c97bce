"""results.json has a schema (harness/schemas/results.schema.json): real results from every writer
validate against it, and it rejects what the writers never produce."""

import io
import json

import jsonschema
import pytest

from checkers.analysis import check_run
from harness import store
from harness.history import HistoryWriter
from harness.spec import build_spec
from harness.spec_schema import RESULTS_SCHEMA_PATH
from kraftcheck.cli import main
from kraftcheck.commands.check import main as check_main
from kraftcheck.judge import check_store
from kraftcheck.runner import execute
from tests.checkers.fixtures import GOLDEN
from tests.support.synth import synth_history

SCHEMA = json.loads(RESULTS_SCHEMA_PATH.read_text())
FINAL = [{"time": 3, "type": "invoke", "process": 5, "f": "poll", "value": None, "final": True},
         {"time": 4, "type": "ok", "process": 5, "f": "poll", "value": {"0": [[0, 1]]}, "final": True}]
SENT = [{"time": 1, "type": "invoke", "process": 0, "f": "send", "value": [0, 1]},
        {"time": 2, "type": "ok", "process": 0, "f": "send", "value": [0, [0, 1]]}]


def validate(results):
    jsonschema.validate(json.loads(json.dumps(results, default=str)), SCHEMA)


def run_dir(tmp_path, name, ops, spec):
    path = tmp_path / name
    path.mkdir()
    store.write_json(path / store.SPEC, spec)
    with HistoryWriter(path / store.HISTORY) as writer:
        for op in ops:
            writer.append(op)
    return path


def test_the_schema_is_a_valid_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_check_run_results_validate(tmp_path):
    for name, ops in (("ok", synth_history(200, seed=1)), ("lost", GOLDEN["lost-write"][0]),
                      ("unseen", GOLDEN["unseen"][0])):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(op) + "\n" for op in ops) + "{torn\n")
        results = check_run({}, path, None, options={"linear": name == "ok"})
        assert results["malformed"]
        validate(results)


def test_check_store_results_validate(tmp_path):
    cases = [("valid", SENT + FINAL, {"test_name": "t"}),
             ("unproven-nemesis", SENT + FINAL, build_spec({"nemesis": "kill,partition"})),
             ("lost", SENT + [FINAL[0], dict(FINAL[1], value={"0": []})], {})]
    for name, ops, spec in cases:
        validate(check_store(run_dir(tmp_path, name, ops, spec), spec))
    validate(check_store(tmp_path / "no-such-run", {}))


def test_results_written_by_analyze_and_check_validate(tmp_path, capsys):
    run = run_dir(tmp_path, "partial", SENT, {"test_name": "queue", "seed": 1, "nemesis": ["kill"]})
    main(["analyze", str(run), "--no-report"])
    validate(store.read_json(run / store.RESULTS))
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps(op) + "\n" for op in GOLDEN["G1c"][0]))
    capsys.readouterr()
    check_main(["--history", str(history), "--json", "--no-linear"])
    validate(json.loads(capsys.readouterr().out))


def test_results_of_a_run_the_harness_could_not_complete_validate(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    outcome = execute(build_spec({"backend": "docker", "time_limit_s": 1}), tmp_path / "store",
                      progress=False, report=False, out=io.StringIO())
    results = store.read_json(outcome.run_dir / store.RESULTS)
    assert outcome.exit_code == 255 and results["harness_error"]
    validate(results)


@pytest.mark.parametrize("broken", [
    {"checkers": {}},  # no verdict
    {"valid": "maybe", "checkers": {}},
    {"valid": True, "checkers": {"queue": {"anomalies": {}}}},  # a checker result without its verdict
    {"valid": True, "checkers": {}, "malformed": [{"file": "h", "line": 0, "reason": "r"}]},
    {"valid": True, "checkers": {}, "coverage": {"kill": {"requested": True}}},
    {"valid": True, "checkers": {}, "profile": {"statuses": {"lost-write": "fine"}, "reasons": {}, "inputs": {}}},
    {"valid": True, "checkers": {}, "verdict_of_the_day": 1},  # a key no writer produces
])
def test_the_schema_rejects_what_no_writer_produces(broken):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA)
