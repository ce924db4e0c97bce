"""Real runs (jepsen-marked): every ``--inject-bug`` is caught by a run of at most five minutes.

Each test makes the run ``kraftcheck selftest --mutants bugs`` makes for one bug (its plan's faults and
time limit) and expects an ``invalid`` verdict naming what caught it. Two representative bugs run in the
plain jepsen set; the rest are also marked ``slow``.

Three bugs are not caught today by any existing fault mix (kill, partition, power loss; runs of 60-90 s
stayed ``valid``): they need a fault in a narrow window (a lossy restart of a broker that is in the ELR,
a controller crash between applying and syncing a record, every ISR member down at once), which is what
the targeted nemeses of issue 14 section 3 are for. They are strict xfails: the day a run catches one,
the test fails until the marker is removed.
"""

from __future__ import annotations

import time

import pytest

from harness.app.commands.selftest import BUG_PLANS, run_bug

pytestmark = pytest.mark.jepsen
REPRESENTATIVE = ("ack-before-replication", "fetch-beyond-hwm")
NOT_CAUGHT_YET = ("skip-unclean-exclusion", "metadata-no-fsync", "unclean-without-opt-in")


def _marks(name: str) -> list:
    marks = [] if name in REPRESENTATIVE else [pytest.mark.slow]
    if name in NOT_CAUGHT_YET:
        marks.append(pytest.mark.xfail(strict=True, reason="needs a targeted fault (issue 14 section 3)"))
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
