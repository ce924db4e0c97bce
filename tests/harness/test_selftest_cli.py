"""kraftcheck selftest: argument errors, and a plan for every injectable bug (no cluster started)."""

from __future__ import annotations

from harness.spec import HISTORICAL_BUG_REFERENCES, INJECTABLE_BUGS
from kraftcheck.cli import SUBCOMMANDS
from kraftcheck.cli import main as cli_main
from kraftcheck.commands.selftest import BUG_PLANS, main


def test_selftest_is_a_subcommand():
    assert SUBCOMMANDS["selftest"][0] == "kraftcheck.commands.selftest"


def test_every_injectable_bug_has_a_plan_with_faults():
    # the historical bugs (docs/historical-bugs.md) are the simulator's to find, not selftest's
    assert set(BUG_PLANS) == set(INJECTABLE_BUGS) - set(HISTORICAL_BUG_REFERENCES)
    assert all(plan.nemesis and plan.time_limit_s <= 240 for plan in BUG_PLANS.values())


def test_bad_arguments_exit_2_with_one_line(capsys):
    assert main(["--budget", "0"]) == 2
    assert "--budget" in capsys.readouterr().err
    assert main(["--mutants", "bugs", "--bugs", "no-such-bug"]) == 2
    assert "no-such-bug" in capsys.readouterr().err
    assert main(["--mutants", "bugs", "--only", "x"]) == 2
    assert cli_main(["selftest", "--mutants", "core", "--only", "no-such-mutant"]) == 2
    assert "matches no mutant" in capsys.readouterr().err
