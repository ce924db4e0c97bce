"""Guarantee profiles of systems judged by what their setting declares (not by the replication protocol)."""

from checkers.queue.profiles import derive_profile
from harness.clusters import SutChoice, facts
from harness.faults import FAMILY_FS, FAMILY_GUARANTEE
from harness.sut import GUARANTEES, load


def _facts(setting: str) -> dict:
    description = load("tansu")
    return facts(SutChoice(description, description.setting(setting), None))


def _nemesis(f: str) -> list[dict]:
    return [{"process": "nemesis", "type": "invoke", "f": f, "value": {}},
            {"process": "nemesis", "type": "ok", "f": f, "value": {"effective": True}}]


def _loss(setting: str, fault: str | None) -> tuple[str, str]:
    spec = {"sut": "tansu", "sut_setting": setting, "sut_facts": _facts(setting), "acks": "all",
            "variant": "v3.5", "min_isr": 1}
    profile = derive_profile(spec, _nemesis(fault) if fault else [], has_final=True)
    return profile["statuses"]["lost-write"], profile["reasons"]["lost-write"]


def test_every_fault_family_has_a_kind_in_the_guarantee_vocabulary():
    assert set(FAMILY_GUARANTEE) == set(FAMILY_FS)
    assert set(FAMILY_GUARANTEE.values()) <= set(GUARANTEES)


def test_a_promised_fault_forbids_loss():
    status, why = _loss("sqlite", "kill")
    assert status == "forbidden" and "tansu (sqlite setting) declares" in why and "crash" in why


def test_without_faults_loss_is_forbidden_even_when_ephemeral():
    assert _loss("memory", None)[0] == "forbidden"


def test_a_fault_the_setting_does_not_promise_allows_loss_with_its_reason():
    status, why = _loss("sqlite", "power-loss")
    assert status == "allowed" and "power-loss" in why and "synchronous=NORMAL" in why
    status, why = _loss("memory", "kill")
    assert status == "allowed" and "restart starts from an empty store" in why


def test_the_variant_does_not_decide_for_a_declared_system():
    # v3.5 with a lossy fault is Last Replica Standing's known issue for the reference implementation;
    # for a system that declares power-loss durability it is a loss it promised to prevent.
    assert _loss("postgres", "power-loss")[0] == "forbidden"


def test_the_reference_implementation_keeps_the_protocol_profile():
    description = load("reference")
    spec = {"sut_facts": facts(SutChoice(description, description.setting(None), None)), "acks": "all",
            "variant": "v3.5", "min_isr": 2}
    assert derive_profile(spec, _nemesis("power-loss"), has_final=True)["statuses"]["lost-write"] == "known-issue"
