"""Unit tests of harness.spec: defaults, validation messages naming the key, replay round trip."""

import json

import pytest

from harness.spec import (
    DEFAULTS,
    SpecError,
    build_spec,
    load_spec,
    normalize,
    parse_nemesis,
    replay_argv,
    replay_command,
    replay_options,
)


def test_defaults_fill_every_key():
    spec = normalize({})
    assert set(DEFAULTS) <= set(spec)
    assert spec["acks"] == "all" and spec["nemesis"] == [] and spec["variant"] == "kip966"


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
])
def test_bad_options_name_the_key(options, key):
    with pytest.raises(SpecError) as err:
        normalize(options)
    assert key in str(err.value)


def test_nemesis_parsing():
    assert parse_nemesis("kill, pause,kill") == ["kill", "pause"]
    assert parse_nemesis("none") == [] and parse_nemesis(None) == []
    assert parse_nemesis(["partition"]) == ["partition"]


def test_build_spec_draws_and_records_a_seed_and_environment():
    spec = build_spec({"time_limit_s": 5})
    assert isinstance(spec["seed"], int)
    assert spec["spec_version"] == 1 and "git_commit" in spec and "python" in spec
    assert build_spec({"seed": 7})["seed"] == 7


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


def test_replay_argv_parses_back_to_the_same_spec():
    from harness.commands.run import build_parser, options_from_args

    spec = build_spec({"seed": 3, "nemesis": "kill,pause", "keys": 2, "rate": 10, "acks": 1, "flush_ms": 0,
                       "recovery_timeout_s": 20, "final_read_timeout_s": 40, "topic": "q", "inject_bug": "x"})
    args = build_parser().parse_args(replay_argv(spec)[2:])
    again = build_spec(options_from_args(args))
    for key in DEFAULTS:
        assert again[key] == spec[key], key


def test_load_spec_errors(tmp_path):
    with pytest.raises(SpecError, match="no spec"):
        load_spec(tmp_path / "missing.json")
    (tmp_path / "spec.json").write_text("{torn")
    with pytest.raises(SpecError, match="not valid JSON"):
        load_spec(tmp_path)
