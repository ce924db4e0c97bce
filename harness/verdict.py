"""The verdict of a run: one function decides it, one table turns it into an exit code.

``decide`` weighs everything that bears on a run's verdict:

- **checker results** (``{name: {"valid": True | False | "unknown", ...}}``, Jepsen's encoding). A
  result marked ``"counted": false`` is reported but left out. A counted ``False`` makes the run
  ``invalid``: a proven violation stands whatever else went wrong. A counted result that is not ``True``
  (``"unknown"``, or anything unexpected) makes it at most ``unknown``. With no checker left, nothing
  contradicts validity (the callers add a note when there was nothing to check).
- **fault coverage** (``nemesis.coverage.coverage_table``): a requested fault family that was never
  attempted, or never proven effective, caps the verdict at ``unknown``: the run did not test what it
  was asked to test.
- **harness notes**: what the harness saw that leaves the evidence incomplete (the final read never
  completed, the run was interrupted, the history is missing or empty, a scenario's expectation was not
  met). Each caps the verdict at ``unknown``.
- **a harness error**: the run could not be carried out at all; the verdict is ``unknown`` and the exit
  code is that of a harness error.

The words are ``valid``, ``invalid`` and ``unknown`` everywhere: the CLI, ``results.json`` (its
``verdict`` and ``reasons``) and the report. ``results.json`` also keeps the verdict in Jepsen's
``valid`` encoding (``true`` / ``false`` / ``"unknown"``), which the tools of that ecosystem read and in
which every checker states its own result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

VALID, INVALID, UNKNOWN = "valid", "invalid", "unknown"
HARNESS_ERROR = "harness error"

EXIT_CODES: dict[str, int] = {VALID: 0, INVALID: 1, UNKNOWN: 2, HARNESS_ERROR: 255}
"""The exit-code table: the code of every kraftcheck command that reaches a verdict (and of a harness
error). Commands read it through the names below; those that reach no verdict exit ``EXIT_OK`` when they
did their job, ``EXIT_USAGE`` for bad arguments and ``EXIT_HARNESS_ERROR`` when they could not work.
``reference_impl`` and ``simulator``, which may not import the harness, repeat the codes they use."""

EXIT_VALID = EXIT_CODES[VALID]
EXIT_INVALID = EXIT_CODES[INVALID]
EXIT_UNKNOWN = EXIT_CODES[UNKNOWN]
EXIT_HARNESS_ERROR = EXIT_CODES[HARNESS_ERROR]

EXIT_OK = EXIT_VALID
"""A command that reaches no verdict did what it was asked."""

EXIT_USAGE = EXIT_UNKNOWN
"""Bad arguments (argparse's own code): not a verdict, though it shares the code of ``unknown``."""

NO_CLIENT_OPS = "the history has no client op"
"""The note both check engines make of a history that cannot show anything about the system."""

_JEPSEN: dict[str, bool | str] = {VALID: True, INVALID: False, UNKNOWN: "unknown"}


def word_of(valid: Any) -> str:
    """The word for a value in Jepsen's encoding: True valid, False invalid, anything else unknown."""
    if valid is True:
        return VALID
    if valid is False:
        return INVALID
    return UNKNOWN


def combine(values: Iterable[Any]) -> bool | str:
    """Jepsen's composition of verdicts: any False wins, then anything but True is "unknown", else True
    (an empty sequence is True)."""
    words = {word_of(v) for v in values}
    return _JEPSEN[INVALID if INVALID in words else UNKNOWN if UNKNOWN in words else VALID]


@dataclass(frozen=True)
class Verdict:
    """A run's verdict: its word, why it is not ``valid``, and the caps that ``results.json`` keeps as
    ``harness_notes``."""

    word: str
    reasons: tuple[str, ...] = ()
    caps: tuple[str, ...] = ()
    harness_error: str | None = None

    @property
    def valid(self) -> bool | str:
        """The verdict in Jepsen's encoding."""
        return _JEPSEN[self.word]

    @property
    def exit_code(self) -> int:
        """The verdict's code in ``EXIT_CODES`` (that of a harness error when the harness failed)."""
        return EXIT_CODES[HARNESS_ERROR if self.harness_error else self.word]

    @classmethod
    def of(cls, results: Mapping[str, Any]) -> Verdict:
        """The verdict stored in a results dict (``record``'s keys; Jepsen's ``valid`` when older)."""
        word = results.get("verdict")
        if word not in _JEPSEN:
            word = word_of(results.get("valid"))
        return cls(word, tuple(results.get("reasons") or ()), tuple(results.get("harness_notes") or ()),
                   results.get("harness_error"))


def decide(checkers: Mapping[str, Any], *, coverage: Mapping[str, Mapping[str, Any]] | None = None,
           notes: Iterable[str] = (), harness_error: str | None = None) -> Verdict:
    """The verdict from checker results, fault coverage, harness notes and a harness error (see the
    module docstring for how each weighs). Reasons name each counted checker that is not valid (with
    what it found), then each cap, then the harness error."""
    counted = {name: result for name, result in sorted(checkers.items())
               if not (isinstance(result, Mapping) and result.get("counted", True) is False)}
    values = {name: result.get("valid") if isinstance(result, Mapping) else None
              for name, result in counted.items()}
    caps = tuple([*notes, *coverage_reasons(coverage or {})])
    reasons = [checker_reason(name, counted[name]) for name, value in values.items() if value is not True]
    reasons.extend(caps)
    if harness_error:
        reasons.append(f"harness error: {harness_error}")
    word = word_of(combine(values.values()))
    if word == VALID and (caps or harness_error):
        word = UNKNOWN
    return Verdict(word, tuple(reasons), caps, harness_error)


def checker_reason(name: str, result: Any) -> str:
    """``"queue: invalid (lost-write, duplicate)"``: a checker's word and what it found (for an undecided
    result, what it could not decide and why: ``"invariants: unknown (I3 the events it needs are absent)"``)."""
    if not isinstance(result, Mapping):
        return f"{name}: {UNKNOWN} (no result)"
    undecided = result.get("undecided")
    if isinstance(undecided, Mapping) and undecided:
        undecided = [f"{key} {why}" for key, why in undecided.items()]
    found = (result.get("violated") or result.get("anomaly_types") or result.get("error")
             or result.get("reason") or undecided or "")
    if isinstance(found, list | tuple):
        found = ", ".join(str(f) for f in found)
    return f"{name}: {word_of(result.get('valid'))}" + (f" ({found})" if found else "")


def coverage_reasons(table: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Why fault coverage caps the verdict: each requested family never attempted or never proven."""
    reasons = []
    for family, row in table.items():
        if not row.get("requested"):
            continue
        if not row.get("attempted"):
            reasons.append(f"nemesis {family!r} was requested but never attempted")
        elif not row.get("effective"):
            reasons.append(f"nemesis {family!r} was attempted {row['attempted']} times but never proven "
                           "effective")
    return reasons


def record(results: dict[str, Any], verdict: Verdict) -> dict[str, Any]:
    """Write ``verdict`` into ``results`` (``valid``, ``verdict``, ``reasons``, ``harness_notes`` when there
    are caps, ``harness_error`` when there is one) and return it."""
    results["valid"] = verdict.valid
    results["verdict"] = verdict.word
    results["reasons"] = list(verdict.reasons)
    if verdict.caps:
        results["harness_notes"] = list(verdict.caps)
    else:
        results.pop("harness_notes", None)
    if verdict.harness_error:
        results["harness_error"] = verdict.harness_error
    return results


def add_notes(results: dict[str, Any], notes: Iterable[str]) -> dict[str, Any]:
    """Decide ``results`` again with further harness notes. Its stored caps (``harness_notes``, which
    already hold the coverage reasons) stay; returns ``results`` with the new verdict recorded."""
    verdict = decide(results.get("checkers") or {}, notes=[*results.get("harness_notes", []), *notes],
                     harness_error=results.get("harness_error"))
    return record(results, verdict)


def verdict_lines(results: Mapping[str, Any]) -> list[str]:
    """The verdict as the CLI prints it: ``verdict WORD``, then one indented line per reason."""
    verdict = Verdict.of(results)
    return [f"verdict {verdict.word}", *(f"  {reason}" for reason in verdict.reasons)]
