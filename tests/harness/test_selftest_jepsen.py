"""Real runs (jepsen-marked): every ``--inject-bug`` is caught by a run of at most five minutes.

Each test makes the run ``kraftcheck selftest --mutants bugs`` makes for one bug (its plan's faults and
time limit) and expects an ``invalid`` verdict naming what caught it. Two representative bugs run in the
plain jepsen set; the rest are also marked ``slow``.

Each bug is caught by a fault aimed at it: ``skip-unclean-exclusion`` by crash-lossy restarts that
follow a clean restart, through I13's check of the clean-shutdown claim (K4); ``metadata-no-fsync`` by
crash-lossy restarts of the controller, after which a broker epoch is handed out twice (I11);
``unclean-without-opt-in`` by strands (an out-of-sync follower left as the only live replica), after
which it is elected and acknowledged writes are gone (I1, I6). ``NOT_CAUGHT_YET`` names bugs no run
catches (strict xfails: a run that starts catching one fails the test until the name is removed).
"""

from __future__ import annotations

import time

import pytest

from kraftcheck.commands.selftest import BUG_PLANS, run_bug

pytestmark = pytest.mark.jepsen
REPRESENTATIVE = ("ack-before-replication", "fetch-beyond-hwm")
NOT_CAUGHT_YET: tuple[str, ...] = ()


def _marks(name: str) -> list:
    marks = [] if name in REPRESENTATIVE else [pytest.mark.slow]
    if name in NOT_CAUGHT_YET:
        marks.append(pytest.mark.xfail(strict=True, reason="not caught by any fault mix yet"))
    return marks


CASES = [pytest.param(name, marks=_marks(name)) for name in sorted(BUG_PLANS)]


@pytest.mark.parametrize("bug", CASES)
def test_injected_bug_is_caught_by_a_real_run(bug, kraftcheck_store):
    started = time.monotonic()
    outcome = run_bug(bug, "local", store_root=kraftcheck_store, seed=1)
    took = time.monotonic() - started
    print(f"{bug}: {outcome.verdict} {outcome.caught_by} in {took:.0f} s ({outcome.run_dir})")
    assert outcome.caught, (outcome.verdict, outcome.caught_by, outcome.run_dir)
    assert outcome.caught_by and any("invalid" in reason for reason in outcome.caught_by)
    assert took < 300
