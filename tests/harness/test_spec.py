"""The typed spec: one field table for validation, command line, replay and JSON Schema."""

import argparse
import json
import math
import re
from dataclasses import fields
from pathlib import Path

import jsonschema
import pytest

from harness.checked_spec import OBSERVED_KEYS, CheckedSpec
from harness.faults import parse_nemesis
from harness.spec import (
    DEFAULTS,
    ENVIRONMENT_KEYS,
    INJECTABLE_BUGS,
    NEMESIS_NAMES,
    OPTIONS,
    RECORDED_DISTRIBUTIONS,
    RunSpec,
    SpecError,
    build_spec,
    check_keys,
    load_spec,
    normalize,
    replay_argv,
    replay_command,
    replay_options,
    stored_form,
)
from harness.spec_cli import option_arguments
from harness.spec_schema import SPEC_SCHEMA_PATH, json_schema, schema_text
from kraftcheck.commands.run import build_parser, options_from_args

REPO = Path(__file__).resolve().parents[2]


def test_defaults_fill_every_key():
    spec = normalize({})
    assert set(DEFAULTS) <= set(spec)
    assert spec["acks"] == "all" and spec["nemesis"] == [] and spec["variant"] == "kip966"


def test_the_typed_spec_is_frozen_and_typed():
    spec = RunSpec.from_options({"keys": 2, "nemesis": "pause,kill", "acks": "1"})
    assert spec.keys == 2 and spec.nemesis == ("kill", "pause") and spec.acks == 1
    assert spec.idempotence is False  # the idempotent producer needs acks=all
    with pytest.raises(AttributeError):
        spec.keys = 3  # type: ignore[misc]
    assert spec.to_dict()["nemesis"] == ["kill", "pause"]


@pytest.mark.parametrize("options, key", [
    ({"backend": "ssh"}, "backend"),
    ({"variant": "v4"}, "variant"),
    ({"concurrency": 0}, "concurrency"),
    ({"keys": "many"}, "keys"),
    ({"time_limit_s": 0}, "time_limit_s"),
    ({"rate": -1}, "rate"),
    ({"brokers": 2, "replication_factor": 3}, "replication_factor"),
    ({"min_isr": 4}, "min_isr"),
    ({"acks": "most"}, "acks"),
    ({"bogus": 1}, "bogus"),
    ({"send_ratio": 0.9, "assign_ratio": 0.2}, "send_ratio"),
    ({"concurrency": 1.5}, "concurrency"),
    ({"rate": math.nan}, "rate"),
    ({"time_limit_s": math.inf}, "time_limit_s"),
    ({"op_timeout_s": -math.inf}, "op_timeout_s"),
    ({"inject_bug": "no-such-bug"}, "inject_bug"),
    ({"nemesis": "kill,meteor"}, "meteor"),
    ({"nemesis": [1, 2]}, "nemesis"),
    ({"keys": "4"}, "keys"),  # a string where JSON should hold a number
    ({"keys": True}, "keys"),
    ({"rate": "50"}, "rate"),
    ({"unclean_leader_election": "yes"}, "unclean_leader_election"),
    ({"idempotence": 1}, "idempotence"),
    ({"acks": True}, "acks"),
    ({"acks": 1.5}, "acks"),
    ({"topic": "has space"}, "topic"),
    ({"topic": ""}, "topic"),
    ({"test_name": "a/b"}, "test_name"),
    ({"test_name": ".."}, "test_name"),
    ({"test_name": "run\n"}, "test_name"),
    ({"topic": "q\n"}, "topic"),
    ({"seed": -1}, "seed"),
    ({"send_ratio": 1.5}, "send_ratio"),
    ({"flush_ms": -1}, "flush_ms"),
    ({"linearizability": "no"}, "linearizability"),
    ({"unseen_deadline_ns": -5}, "unseen_deadline_ns"),
    ({"scenario": "Not A Name"}, "scenario"),
])
def test_bad_options_name_the_key(options, key):
    with pytest.raises(SpecError) as err:
        normalize(options)
    assert key in str(err.value)


def test_errors_name_the_flag_too():
    with pytest.raises(SpecError) as err:
        normalize({"time_limit_s": math.nan})
    assert str(err.value) == "time_limit_s (--time-limit): must be a finite number, got nan"


def test_integral_floats_and_acks_spellings_are_accepted():
    spec = normalize({"keys": 2.0, "acks": "-1", "flush_ms": 0, "time_limit_s": 3})
    assert spec["keys"] == 2 and isinstance(spec["keys"], int)
    assert spec["acks"] == "all" and spec["time_limit_s"] == 3.0 and spec["flush_ms"] == 0


def test_nemesis_parsing():
    assert parse_nemesis("kill, pause,kill") == ["kill", "pause"]
    assert parse_nemesis("none") == [] and parse_nemesis(None) == []
    assert parse_nemesis(["partition"]) == ["partition"]


def test_build_spec_draws_and_records_a_seed_and_environment():
    spec = build_spec({"time_limit_s": 5})
    assert isinstance(spec["seed"], int)
    assert spec["spec_version"] == 2 and "git_commit" in spec and "python" in spec
    assert build_spec({"seed": 7})["seed"] == 7


def test_build_spec_records_the_versions_of_clients_and_libraries():
    from importlib.metadata import version

    versions = build_spec({})["versions"]
    assert set(versions) == {"python", *RECORDED_DISTRIBUTIONS}
    assert {"kafka-python", "confluent-kafka", "docker", "testcontainers"} <= set(RECORDED_DISTRIBUTIONS)
    assert versions["kafka-python"] == version("kafka-python")
    assert versions["confluent-kafka"] == version("confluent-kafka")
    assert versions["testcontainers"] == version("testcontainers")


def test_environment_facts_are_not_replayed():
    spec = build_spec({"seed": 1})
    again = replay_options(spec)
    assert "versions" not in again and "git_commit" not in again and "python" not in again


def test_replay_round_trip(tmp_path):
    spec = build_spec({"seed": 42, "nemesis": "kill", "time_limit_s": 12, "min_isr": 1, "variant": "v3.5",
                       "unclean_leader_election": True, "flush_messages": 1})
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    again = build_spec(replay_options(load_spec(tmp_path)))
    for key in DEFAULTS:
        assert again[key] == spec[key], key
    argv = replay_argv(spec)
    assert argv[:2] == ["kraftcheck", "run"]
    assert ["--seed", "42"] == argv[argv.index("--seed"):argv.index("--seed") + 2]
    assert "--unclean" in argv and "kill" in argv
    assert replay_command(spec, path) == f"kraftcheck run --replay {path}"


def every_option_changed() -> dict:
    """A spec in which every field with a flag differs from its default."""
    return build_spec({
        "test_name": "t1", "backend": "docker", "seed": 3, "time_limit_s": 67.5, "rate": 10, "concurrency": 2,
        "keys": 2, "brokers": 4, "controllers": 3, "replication_factor": 2, "min_isr": 1, "variant": "v3.5",
        "acks": 1,
        "unclean_leader_election": True, "flush_messages": 1, "flush_ms": 0,
        "reassignment_mode": "incremental", "inject_bug": "ignore-min-isr", "nemesis": "kill,pause",
        "nemesis_interval_s": 2, "topic": "q", "op_timeout_s": 4, "recovery_timeout_s": 20,
        "final_read_timeout_s": 40, "send_ratio": 0.5, "assign_ratio": 0.1, "replica_lag_time_max_ms": 5000,
        "sub_via": "assign,subscribe", "group_session_timeout_ms": 7000, "txn": True,
        "isolation_level": "read_uncommitted",
        "broker_session_timeout_ms": 3000, "broker_heartbeat_interval_ms": 500, "linearizability": False,
        "sut": "tansu", "sut_setting": "postgres", "sut_path": "/opt/tansu"})


def test_replay_argv_parses_back_to_the_same_spec():
    spec = every_option_changed()
    flagged = {name for name, _, _ in option_arguments("run")}
    changed = {k for k in flagged if spec[k] != DEFAULTS[k]}
    assert changed == flagged - {"workload"}  # there is one workload
    args = build_parser().parse_args(replay_argv(spec)[2:])
    again = build_spec(options_from_args(args))
    for key in DEFAULTS:
        assert again[key] == spec[key], key


def test_idempotence_off_with_acks_all_replays():
    spec = build_spec({"seed": 1, "idempotence": False})
    assert "--no-idempotence" in replay_argv(spec)
    again = build_spec(options_from_args(build_parser().parse_args(replay_argv(spec)[2:])))
    assert again["idempotence"] is False and again["acks"] == "all"


def test_every_flag_comes_from_the_table_with_its_default_in_the_help():
    helps = {flag: action.help for action in build_parser()._actions for flag in action.option_strings}
    for opt in OPTIONS.values():
        if opt.flag is None or "run" not in opt.commands:
            continue
        assert opt.help in helps[opt.flag] and re.search(r"\(default: [^)]+\)$", helps[opt.flag]), opt.flag


def test_spec_only_keys_have_no_flag_but_are_part_of_the_spec():
    assert OPTIONS["scenario"].flag is None and OPTIONS["unseen_deadline_ns"].flag is None
    assert "scenario" in DEFAULTS and "unseen_deadline_ns" in DEFAULTS


def test_load_spec_errors(tmp_path):
    with pytest.raises(SpecError, match="no spec"):
        load_spec(tmp_path / "missing.json")
    (tmp_path / "spec.json").write_text("{torn")
    with pytest.raises(SpecError, match="not valid JSON"):
        load_spec(tmp_path)
    (tmp_path / "spec.json").write_text('{"rate": NaN}')
    with pytest.raises(SpecError, match="NaN is not a JSON number"):
        load_spec(tmp_path)
    (tmp_path / "spec.json").write_text("[1, 2]")
    with pytest.raises(SpecError, match="must be a JSON object"):
        load_spec(tmp_path)


def test_replay_options_name_the_file_on_a_wrong_type(tmp_path):
    stored = build_spec({"seed": 1})
    for key, bad in (("keys", "four"), ("keys", None), ("min_isr", 9), ("rate", "fast"), ("typo_key", 1)):
        path = tmp_path / "spec.json"
        with pytest.raises(SpecError) as err:
            replay_options({**stored, key: bad}, source=path)
        assert str(err.value).startswith(f"{path}: ") and key in str(err.value)


def test_check_keys_checks_only_what_a_partial_spec_gives():
    assert check_keys({"acks": "1", "variant": "v3.5"}) == {"acks": 1, "variant": "v3.5"}
    assert check_keys({"nemesis": "kill"}) == {"nemesis": ["kill"]}
    assert check_keys({}) == {}
    with pytest.raises(SpecError, match="min_isr"):
        check_keys({"min_isr": "two"}, source="s.json")
    with pytest.raises(SpecError, match="unknown spec key"):
        check_keys({"min-isr": 2})


# -- lists repeated from packages the spec may not import -----------------------------------------------

def test_inject_bug_names_equal_the_servers_list():
    from reference_impl.server.bugs import BUGS

    assert sorted(INJECTABLE_BUGS) == sorted(BUGS)


def test_nemesis_names_equal_the_registry():
    # The spec's names are the family table's (harness.faults); the registry builds the same families.
    from harness.faults import FAMILY_FS, MIXES
    from nemesis.registry import families

    assert sorted(NEMESIS_NAMES) == sorted([*families(), *MIXES]) == sorted([*FAMILY_FS, *MIXES])


def test_checkers_read_the_spec_through_the_one_table():
    # The checkers read spec keys only through harness.checked_spec (its fields are the keys they read),
    # never as a mapping; and every key of that table is a field of the run spec or an environment fact.
    for path in (REPO / "checkers").rglob("*.py"):
        text = path.read_text()
        assert not re.findall(r"\bspec(?:\.get\(|\[)", text), path
    read = {f.name for f in fields(CheckedSpec)}
    assert {"acks", "min_isr", "variant", "nemesis", "scenario", "linearizability"} <= read
    allowed = set(DEFAULTS) | set(ENVIRONMENT_KEYS) | set(OBSERVED_KEYS)  # observed: from the trace
    assert read <= allowed, read - allowed


# -- the JSON Schema -------------------------------------------------------------------------------------

def test_committed_schema_is_the_generated_one():
    assert SPEC_SCHEMA_PATH.read_text() == schema_text(), (
        "regenerate: python -m harness.spec_schema > harness/schemas/spec.schema.json")


def test_schema_is_valid_and_follows_the_table():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert set(DEFAULTS) <= set(schema["properties"]) and set(DEFAULTS) <= set(schema["required"])
    assert schema["properties"]["inject_bug"]["enum"] == [*INJECTABLE_BUGS, None]
    assert schema["properties"]["time_limit_s"]["exclusiveMinimum"] == 0


def stored_specs() -> list[dict]:
    """Specs as each command stores them (run, scenario, cluster up, the pytest plugin's defaults)."""
    from kraftcheck import scenarios
    from kraftcheck.commands import cluster, scenario

    args = argparse.Namespace(backend="local", variant="v3.5", seed=11)
    up = cluster.build_parser().parse_args(["up", "--brokers", "1"])
    return [build_spec({}), every_option_changed(),
            build_spec({"nemesis": ["all"], "time_limit_s": 300, "acks": 0, "flush_ms": 5,
                        "unseen_deadline_ns": 10**9}),
            stored_form(*scenario.build_scenario_spec(scenarios.get("lrs"), args, ["lrs"])),
            stored_form(*cluster.cluster_spec(up)),
            build_spec(options_from_args(build_parser().parse_args(["--seed", "5", "--no-linear"])))]


def test_every_stored_spec_validates_against_the_committed_schema(tmp_path):
    from harness import store

    schema = json.loads(SPEC_SCHEMA_PATH.read_text())
    for i, spec in enumerate(stored_specs()):
        path = store.write_json(tmp_path / f"{i}" / "spec.json", spec)
        jsonschema.validate(load_spec(path), schema)


def test_the_schema_rejects_what_the_spec_rejects():
    schema = json_schema()
    good = build_spec({"seed": 1})
    for key, bad in (("inject_bug", "nope"), ("nemesis", ["meteor"]), ("keys", 0), ("keys", "4"),
                     ("acks", 2), ("topic", "a b"), ("unknown", 1)):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**good, key: bad}, schema)
        with pytest.raises(SpecError):
            replay_options({**good, key: bad})


def test_a_version_1_spec_still_replays():
    stored = build_spec({"seed": 3, "nemesis": "kill", "acks": 1})
    old = {k: v for k, v in stored.items() if k not in ("scenario", "linearizability", "unseen_deadline_ns",
                                                          "versions")}
    again = build_spec(replay_options({**old, "spec_version": 1}, source="old/spec.json"))
    assert all(again[k] == stored[k] for k in DEFAULTS)
