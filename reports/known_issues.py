"""Known protocol issues: what each is, which rule of which variant allows it, and how a run showed it.

A known issue is a documented weakness of a protocol variant (docs/protocol-rules.md section 5), not a bug of the
implementation under test and not a harness error. The guarantee profile (``checkers.queue.profiles``) marks
the anomalies it produces ``known-issue`` (any run of the variant with the faults that trigger it) or
``expected`` (a scripted reproduction of it); a scenario's judgement (``results["scenario"]``) labels a
reproduction that met its expectation. ``issues_shown`` reads both, so a run is recognised whether it was
scripted or random.

Only Last Replica Standing is known today: it is the one weakness the profile classes this way (its
loss family under v3.5 with lossy faults). ``evidence`` collects from a run what a reader needs to judge
it: the acknowledged writes, those lost, the decisive facts the scenario recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reports.findings import Finding

LRS = "last-replica-standing"
LRS_NAMES = (LRS, "lrs")
LOSS_KINDS = ("lost-write", "acked-unreadable", "unseen")


@dataclass(frozen=True)
class KnownIssue:
    """A documented weakness of one protocol variant."""

    key: str
    title: str
    reference: str
    variant: str
    summary: str
    rule: str
    broken: str
    fixed_by: str


LAST_REPLICA_STANDING = KnownIssue(
    key=LRS,
    title="Last Replica Standing: an acknowledged write is lost",
    reference="docs/protocol-rules.md 5.1 (and 5.2)",
    variant="v3.5",
    summary=("With RF 3, MinISR 2 and acks=all, a write X is acknowledged once all three replicas have it. "
             "Both followers then lose the controller (their fetching goes on) and are fenced: the ISR "
             "shrinks to the leader alone. The leader loses power before its log was flushed, so it comes "
             "back with a shorter log, and X is gone from it."),
    rule=("v3.5, rule B3's exception: a restarted broker's replicas normally rejoin as out-of-sync "
          "followers, but the sole ISR member keeps its place. The controller re-elects the restarted "
          "leader from the frozen ISR {leader} with its shorter log (clean election, new leader epoch); "
          "when the followers are unfenced they fetch from it, find their logs diverge and truncate X away "
          "(F3). Flushing is left to the OS (B4), so an acknowledged suffix can be unsynced."),
    broken="I1 (leader completeness), I6 (no committed loss), I7 (consistent read), I13 (unclean exclusion)",
    fixed_by=("KIP-966: the followers leaving the ISR wait in the ELR (K2), the restarted leader registers "
              "without a clean-shutdown epoch and is purged into the LKELR (K4), and an unfenced ELR member "
              "is elected instead (K3), so every candidate is complete and X survives (K9)."),
)

ISSUES: dict[str, KnownIssue] = {LRS: LAST_REPLICA_STANDING}


def scenario_section(results: dict[str, Any]) -> dict[str, Any]:
    """The scenario's judgement stored in ``results.json`` (empty for a random run)."""
    section = results.get("scenario")
    return section if isinstance(section, dict) else {}


def issues_shown(results: dict[str, Any], found: list[Finding]) -> list[str]:
    """Keys of the known issues the run showed: a scenario reproduction that met its expectation and
    carries a known-issue label, or any finding the profile classes as known (``Finding.known``)."""
    section = scenario_section(results)
    if section.get("name") in LRS_NAMES and section.get("label") and section.get("expectation_met"):
        return [LRS]
    return [LRS] if any(f.known for f in found) else []


def evidence(results: dict[str, Any], found: list[Finding]) -> dict[str, Any]:
    """What a run shows of a known issue: the writes acknowledged and lost, and the decisive facts.

    A scenario records them itself (``facts``); for a random run the lost writes are those the queue
    checker's loss kinds name, and what was acknowledged is not listed beyond them.
    """
    section = scenario_section(results)
    facts = section.get("facts") if isinstance(section.get("facts"), dict) else {}
    if facts:
        return {"acknowledged": facts.get("acknowledged X [offset, value]"),
                "lost": facts.get("acknowledged and lost", section.get("acked_lost")),
                "facts": {k: v for k, v in facts.items()
                          if k not in ("acknowledged X [offset, value]", "acknowledged and lost")},
                "label": section.get("label"), "expectation": section.get("expectation")}
    lost = sorted({(e.get("key"), e.get("offset"), e.get("value")) for f in found
                   if f.checker == "queue" and f.kind in LOSS_KINDS for e in f.examples},
                  key=lambda t: tuple(-1 if x is None else x for x in t))
    return {"acknowledged": None,
            "lost": [{"key": k, "offset": o, "value": v} for k, o, v in lost],
            "facts": {f"{f.checker} {f.kind}": f"{f.count} ({f.status})" for f in found if f.known},
            "label": None, "expectation": None}
