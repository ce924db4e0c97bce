"""The family table (``harness.faults.FAULT_FAMILIES``) and what is derived from it.

Every family has a member that implements it, a drawer that starts it and, when it lasts, a heal op; the
structures derived from the table are the ones the code held before they were derived (written out here
as they were), so checkers, reports and Spark read the same vocabulary as before.
"""

import importlib
import random

import pytest

from harness import faults
from harness.faults import FAULT_FAMILIES, UnknownNemesis, parse_nemesis, requested_families
from harness.spec import NEMESIS_NAMES
from nemesis.registry import DRAWERS, FAMILY_MEMBER, MEMBERS, SUPERSEDES, build_package, families

# The structures as they were written out by hand before the table existed.
BEFORE_FAMILY_FS = {
    "kill": {"kill"}, "stop": {"stop"}, "pause": {"pause"}, "partition": {"start-partition"},
    "clock": {"bump-clock", "strobe-clock", "skew-clock"}, "disk": {"power-loss", "lose-unsynced"},
    "admin": {"reassign", "cancel-reassignment", "elect-preferred", "elect-unclean", "set-reassignment-mode"},
    "crash-lossy": {"crash-lossy"}, "strike": {"strike"}, "churn": {"churn"}, "cut": {"start-cut"},
    "strand": {"strand"}, "episodes": {"episodes"},
}
BEFORE_WITHIN_OP = {"power-loss", "lose-unsynced", "strobe-clock", "reassign", "cancel-reassignment",
                    "elect-preferred", "elect-unclean", "set-reassignment-mode", "crash-lossy", "churn", "strand", "episodes"}
BEFORE_LASTING = {"kill", "stop", "pause", "start-partition", "bump-clock", "skew-clock", "strike", "start-cut"}
BEFORE_HEALED_BY = {
    "start": {"kill", "stop"}, "resume": {"pause"}, "stop-partition": {"start-partition"},
    "reset-clock": {"bump-clock", "skew-clock"}, "end-strike": {"strike"}, "stop-cut": {"start-cut"},
    "heal": BEFORE_LASTING,
}
BEFORE_MIXES = {"all": ("kill", "stop", "pause", "partition", "clock", "disk", "admin", "crash-lossy", "strike",
                        "churn", "cut", "strand", "episodes"),
                "targeted": ("crash-lossy", "strike", "churn", "cut", "strand", "episodes")}
BEFORE_NEMESIS_NAMES = ("admin", "all", "churn", "clock", "crash-lossy", "cut", "disk", "episodes", "kill", "partition",
                        "pause", "stop", "strand", "strike", "targeted")
BEFORE_FAMILY_MEMBER = {"kill": "process", "stop": "process", "pause": "process", "partition": "partition",
                        "clock": "clock", "disk": "disk", "admin": "admin", "crash-lossy": "lossy",
                        "strike": "strike", "churn": "churn", "cut": "cut", "strand": "strand",
                        "episodes": "episodes"}
BEFORE_STOPS = {"kill": "start", "stop": "start", "pause": "resume", "partition": "stop-partition",
                "clock": "reset-clock", "disk": None, "admin": None, "crash-lossy": None, "strike": "end-strike",
                "churn": None, "cut": "stop-cut", "strand": None,
                "episodes": None}
BEFORE_WEIGHTS = {"kill": 1.0, "stop": 0.5, "pause": 1.0, "partition": 1.0, "clock": 1.0, "disk": 0.7,
                  "admin": 1.0, "crash-lossy": 1.0, "strike": 2.0, "churn": 1.0, "cut": 1.0, "strand": 1.0,
                  "episodes": 0.5}
BEFORE_ROOT_FAMILIES = {"partition", "clock", "disk", "crash-lossy", "cut", "strand", "episodes"}


def test_derived_structures_equal_what_they_were():
    assert {name: set(fs) for name, fs in faults.FAMILY_FS.items()} == BEFORE_FAMILY_FS
    assert list(faults.FAMILY_FS) == list(BEFORE_MIXES["all"])
    assert faults.WITHIN_OP_FS == BEFORE_WITHIN_OP and faults.LASTING_FS == BEFORE_LASTING
    assert {heal: set(fs) for heal, fs in faults.HEALED_BY.items()} == BEFORE_HEALED_BY
    assert faults.HEAL_FS == set(BEFORE_HEALED_BY)
    assert faults.MIXES == BEFORE_MIXES and faults.TARGETED == BEFORE_MIXES["targeted"]
    assert NEMESIS_NAMES == faults.NEMESIS_NAMES == BEFORE_NEMESIS_NAMES
    assert faults.F_FAMILY == {f: name for name, fs in BEFORE_FAMILY_FS.items() for f in fs}
    assert FAMILY_MEMBER == BEFORE_FAMILY_MEMBER
    built = families()
    assert {name: (fam.stop[0] if fam.stop else None) for name, fam in built.items()} == BEFORE_STOPS
    assert {name: fam.weight for name, fam in built.items()} == BEFORE_WEIGHTS
    assert {name: set(fam.fs) for name, fam in built.items()} == BEFORE_FAMILY_FS
    assert {name for name, row in FAULT_FAMILIES.items() if row.local_root} == BEFORE_ROOT_FAMILIES


@pytest.mark.parametrize("name", list(FAULT_FAMILIES))
def test_every_family_has_a_member_a_drawer_and_its_heal(name):
    row = FAULT_FAMILIES[name]
    module, cls = MEMBERS[row.member]
    assert isinstance(getattr(importlib.import_module(module), cls), type)
    draw = DRAWERS[name]
    drawn = {draw(random.Random(seed))[0] for seed in range(200)}
    assert drawn <= set(row.starts), drawn - set(row.starts)
    if row.lasting:
        assert row.heal is not None and row.lasting <= faults.HEALED_BY[row.heal]
        assert row.lasting <= faults.HEALED_BY[faults.FINAL_HEAL]
        assert drawn & row.lasting, "the schedule never starts what its heal op ends"
    else:
        assert row.heal is None and set(row.within_op) == set(row.starts)
    assert row.weight > 0 and row.ops_s >= 0


def test_the_drawers_and_members_are_keyed_by_the_table():
    assert list(DRAWERS) == list(FAULT_FAMILIES)
    assert set(MEMBERS) == {row.member for row in FAULT_FAMILIES.values()}
    assert set(SUPERSEDES) | set(SUPERSEDES.values()) <= set(MEMBERS)


def test_a_row_that_contradicts_itself_is_refused():
    with pytest.raises(ValueError, match="without a heal op"):
        faults.FaultFamily("x", ("a", "b"), None, ("a",), "m", 1.0, 0.0)
    with pytest.raises(ValueError, match="nothing that lasts"):
        faults.FaultFamily("x", ("a",), "heal-a", ("a",), "m", 1.0, 0.0)
    with pytest.raises(ValueError, match="not among its starts"):
        faults.FaultFamily("x", ("a",), "heal-a", ("b",), "m", 1.0, 0.0)
    with pytest.raises(ValueError, match="weight"):
        faults.FaultFamily("x", ("a",), "heal-a", (), "m", 0.0, 0.0)


def test_one_parser_for_the_spec_the_registry_and_coverage():
    assert parse_nemesis("kill, pause,kill") == ["kill", "pause"] == parse_nemesis(["pause", "kill"])
    assert parse_nemesis(None) == [] == parse_nemesis("none") == parse_nemesis(" , none")
    assert parse_nemesis("targeted,kill") == ["kill", "targeted"]
    assert requested_families("targeted,kill") == ["kill", *faults.TARGETED]
    assert requested_families("strand,all") == list(FAULT_FAMILIES)
    with pytest.raises(UnknownNemesis, match=r"unknown name\(s\) frobnicate; known: admin, all") as err:
        parse_nemesis("kill,frobnicate")
    assert err.value.names == ["frobnicate"]
    with pytest.raises(ValueError, match="comma-separated"):
        parse_nemesis({"kill": 1})
    # the registry builds the families the parser reads, in the same order
    assert build_package("targeted,kill", seed=1).names == requested_families("targeted,kill")
