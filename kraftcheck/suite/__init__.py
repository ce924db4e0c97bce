"""Suites: scenarios and randomized runs over the product of variants, backends and fault mixes (Jepsen's
``test-all``), each an ordinary run in one store, judged against what each cell is expected to show.

Theory of operation. ``plan`` turns a named suite (``smoke``: a few minutes, what CI runs; ``seeds``:
every scenario of the seeds, Last Replica Standing also on docker; ``full``: everything, for a published
report; ``systems``: other systems beside the reference implementation; ``modes``: the queue workload
subscribing, transactional and both) or a single scenario / workload, plus the options, into cells; ``execute`` runs them one by one
into the suite's store root; ``outcome`` classifies each run (valid / expected failure / invalid /
unknown / harness error), matches it against the cell's expectation and derives the exit code. A known
issue the protocol variant documents (Last Replica Standing on v3.5) is an *expected failure*: shown,
explained, and not a reason for a red suite; only outcomes that are not the expected ones are.

Store layout (stable; ``kraftcheck publish`` reads it):

    <suite root>/suite.json                    the summary below
    <suite root>/<test name>/<UTC start>/      each run, as ``kraftcheck run`` / ``scenario`` leave it:
                                               spec.json, history.jsonl, trace.jsonl, results.json,
                                               report.html, harness.log, nodes/...

``suite.json`` (``format`` 1): ``suite`` (name), ``command``, ``seed`` (cell seeds are drawn from it),
``options`` (variants, backends, nemesis mixes, test_count, time_limit_s as given, null when not),
``store``, ``started_utc``, ``finished_utc``, ``finished`` (false while running or when interrupted),
``environment`` (git_commit, git_dirty, python, machine, host), ``summary`` (cells, run, matched,
by_outcome, exit_code) and ``cells``, one object per cell:

    id            "name/system/mix/backend#repeat", unique in the suite; a workload in a mode other than the
                  plain one is named with it: "queue[subscribe,txn]/kip966/kill+partition/local#1"
    kind          "scenario" | "workload";  name: the scenario or workload name
    variant       "v3.5" | "kip966";  backend: "local" | "docker"
    system        the variant for the reference implementation, else "<sut>-<setting>" (tansu-sqlite)
    nemesis       fault families of the run (a scenario's own);  nemesis_mix: the same joined by "+"
    repeat        1..test_count;  seed: the run's seed;  options: extra spec options (time_limit_s)
    expected      "valid" | "expected-failure";  accepted: the outcomes that count as expected
    outcome       "valid" | "expected-failure" | "invalid" | "unknown" | "harness-error" (null: not run)
    matched       outcome in accepted;  verdict: results.json's "valid";  exit_code: the run's
    run_dir       the run directory relative to the suite root;  replay: the command that repeats it
    duration_s    wall time of the run;  error: the harness error, if any
    label         a scenario's known-issue explanation when it reproduced one;  reproduces: the seed
                  section a scenario reproduces
"""

from kraftcheck.suite.outcome import OUTCOMES
from kraftcheck.suite.plan import Cell, Entry, PlanError, expand, named_suites

__all__ = ["OUTCOMES", "Cell", "Entry", "PlanError", "expand", "named_suites"]
