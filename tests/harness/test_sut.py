"""System-under-test descriptions: parsing, validation with clear errors, refusals, facts, installs."""

import pytest

from harness import sut_install
from harness.clusters import SutChoice, facts, refusals
from harness.sut import GUARANTEES, REFERENCE, SutError, known, load, parse


def _minimal(**changes):
    data = {"name": "x", "builds": {"b": {"kind": "cargo", "crate": "x", "version": "1.0", "binary": "x"}},
            "roles": {"broker": {"count": "brokers", "port": 9092, "argv": ["{binary}"]}},
            "settings": {"s": {"build": "b", "guarantees": ["crash"]}}}
    data.update(changes)
    return data


def test_the_shipped_descriptions_load():
    assert {"reference", "tansu", "kafka"} <= set(known())
    for name in known():
        description = load(name)
        assert description.setting(None).name == description.default_setting
        assert description.roles_of(None), name


def test_a_minimal_description_and_its_defaults():
    d = parse(_minimal(), "x.toml")
    assert d.default_setting == "s" and d.profile == "declared" and d.replication is True and not d.traces
    assert d.setting("s").why_not("crash") is None
    assert GUARANTEES["power-loss"] in d.setting("s").why_not("power-loss")


@pytest.mark.parametrize("changes, message", [
    ({"name": 3}, "name: a string is needed"),
    ({"builds": {}}, "at least one build"),
    ({"builds": {"b": {"kind": "cargo", "crate": "x", "binary": "x"}}}, "builds.b.version: a cargo build needs it"),
    ({"builds": {"b": {"kind": "apt"}}}, "builds.b.kind: 'apt' is not one of"),
    ({"roles": {"broker": {"count": "lots", "port": 9092, "argv": ["x"]}}}, "roles.broker.count"),
    ({"roles": {"broker": {"count": 1, "port": 70000, "argv": ["x"]}}}, "roles.broker.port"),
    ({"roles": {"broker": {"count": 1, "port": 9092, "argv": ["x"], "kafka": False}}}, "no role speaks Kafka"),
    ({"settings": {"s": {"build": "nope"}}}, "settings.s.build"),
    ({"settings": {"s": {"guarantees": ["forever"]}}}, "settings.s.guarantees: unknown forever"),
    ({"settings": {"s": {"guarantees": ["crash"], "not_promised": {"crash": "why"}}}}, "also promised"),
    ({"settings": {"s": {"max_brokers": 0}}}, "settings.s.max_brokers"),
    ({"default_setting": "other"}, "default_setting"),
])
def test_bad_descriptions_name_the_key(changes, message):
    with pytest.raises(SutError, match=message.replace("(", r"\(")):
        parse(_minimal(**changes), "x.toml")


def test_unknown_names_and_bad_files_are_clear(tmp_path):
    with pytest.raises(SutError, match="unknown system under test 'nope'; known: .*reference"):
        load("nope")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    with pytest.raises(SutError, match="not TOML"):
        load(bad)
    with pytest.raises(SutError, match="has no setting 'x'"):
        load("tansu").setting("x")


def test_tansu_refuses_the_faults_it_has_no_means_for():
    tansu = load("tansu")
    choice = SutChoice(tansu, tansu.setting("sqlite"), None)
    assert refusals(choice, ["kill", "stop", "pause", "partition", "clock", "disk", "crash-lossy"]) == []
    refused = refusals(choice, ["admin", "churn", "strike", "cut", "strand"])
    assert [r.split(":")[0] for r in refused] == ["admin", "churn", "strike", "cut", "strand"]
    assert "partition reassignment" in refused[0] and "trace events" in refused[2]
    reference = load(REFERENCE)
    assert refusals(SutChoice(reference, reference.setting(None), None),
                    ["admin", "churn", "strike", "cut", "strand"]) == []


def test_facts_record_what_the_setting_declares():
    tansu = load("tansu")
    recorded = facts(SutChoice(tansu, tansu.setting("memory"), None))
    assert recorded["name"] == "tansu" and recorded["setting"] == "memory" and recorded["ephemeral"] is True
    assert recorded["profile"] == "declared" and recorded["traces"] is False
    assert "crash" not in recorded["guarantees"] and "empty store" in recorded["not_promised"]["crash"]


def test_builds_are_cached_by_kind_name_version_and_features(tmp_path, monkeypatch):
    monkeypatch.setenv("KRAFTCHECK_CACHE", str(tmp_path))
    release = load("tansu").builds["release"]
    assert sut_install.build_key(release) == "cargo-tansu-0.6.0+dynostore+libsql+postgres"
    assert sut_install.binary_path(release) == tmp_path / "suts" / sut_install.build_key(release) / "bin" / "tansu"
    assert not sut_install.installed(release)
    dist = load("kafka").builds["distribution"]
    with pytest.raises(SutError, match="--sut-path"):
        sut_install.binary_path(dist)
