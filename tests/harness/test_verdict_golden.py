"""The same stored runs get the same verdicts as before the verdict was decided in one place.

``golden_verdicts.json`` holds what ``check_store``, ``kraftcheck check`` and ``kraftcheck analyze`` said
of the runs in ``verdict_cases`` with the code as it was (``python -m tests.harness.verdict_cases``).
``DELIBERATE`` lists the few observations that differ on purpose, each with its reason; everything else
must be identical.
"""

import json
from pathlib import Path

from harness.verdict import EXIT_CODES, NO_CLIENT_OPS, word_of
from tests.harness.verdict_cases import cases, observe, write_case

GOLDEN = json.loads((Path(__file__).parent / "golden_verdicts.json").read_text(encoding="utf-8"))
NO_FINAL_READ = GOLDEN["empty-history"]["analyze_notes"][0]

DELIBERATE = {
    # 'kraftcheck check --spec' now counts fault coverage as runs and 'analyze' always did: a spec that
    # asks for faults the history never shows (or never proves) cannot give a valid verdict.
    ("kill-requested-never-attempted", "check_exit"): EXIT_CODES["unknown"],
    ("kill-never-effective", "check_exit"): EXIT_CODES["unknown"],
    # A history without client ops was already unknown; the results now say why.
    ("empty-history", "harness_notes"): [NO_CLIENT_OPS],
    ("empty-history", "analyze_notes"): [NO_CLIENT_OPS, NO_FINAL_READ],
    ("only-malformed-lines", "harness_notes"): [NO_CLIENT_OPS],
    ("only-malformed-lines", "analyze_notes"): [NO_CLIENT_OPS, NO_FINAL_READ],
    # Nothing checked is not valid: a queue checker that saw no ok send or read says unknown (the run's
    # verdict was unknown already, for want of client ops).
    ("empty-history", "checkers"): {"invariants": "unknown", "linear": True, "queue": "unknown"},
    ("only-malformed-lines", "checkers"): {"invariants": "unknown", "linear": True, "queue": "unknown"},
    # tests.support.synth's drop-read drops only a read with reads on both sides in its poll (the first read
    # after a subscribe is compared with nothing), so this case's history is another one: still invalid
    # (queue), but the dropped read is now an internal skip that neither the engine nor I6 sees.
    ("synth-drop-read", "checkers"): {"invariants": "unknown", "linear": True, "queue": False},
    ("synth-drop-read-kill-unproven", "checkers"): {"invariants": "unknown", "linear": True, "queue": False},
    # A missing --history is a usage error naming the flag (exit 2), no longer a harness error.
    ("missing-history", "check_exit"): EXIT_CODES["unknown"],
}


def test_every_golden_case_is_still_built():
    assert set(GOLDEN) == set(cases())
    assert {name for name, _ in DELIBERATE} <= set(GOLDEN)


def test_same_histories_same_verdicts_and_exit_codes(tmp_path):
    differences = {}
    for name, case in cases().items():
        seen = observe(write_case(tmp_path / name, case), case)
        # The recovery checker came after the golden file: none of these histories fails to recover (each
        # has a final read that completed, or none at all), so it is valid wherever it ran and changes no
        # verdict; the other checkers must say what they said.
        if isinstance(seen.get("checkers"), dict):
            assert seen["checkers"].pop("recovery", True) is True, name
        for key, before in GOLDEN[name].items():
            expected = DELIBERATE.get((name, key), before)
            if seen[key] != expected:
                differences[(name, key)] = (expected, seen[key])
        # One set of words: the stored word matches Jepsen's encoding, and each command's exit code
        # follows its own verdict through the one table.
        assert seen["verdict"] == word_of(seen["valid"]), name
        assert seen["analyze_verdict"] == word_of(seen["analyze_valid"]), name
        assert seen["analyze_exit"] == EXIT_CODES[seen["analyze_verdict"]], name
        if seen["check_verdict"] is not None:
            assert seen["check_exit"] == EXIT_CODES[seen["check_verdict"]], name
    assert not differences, differences
