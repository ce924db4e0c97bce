"""Guarantee profiles: which queue anomalies a run's configuration forbids, allows or expects.

A profile maps every anomaly kind of ``checkers/queue.py`` to a status:

* ``forbidden`` - an occurrence makes the run invalid;
* ``allowed`` - the configuration gives no guarantee against it (reported, not a violation);
* ``known-issue`` - a documented protocol weakness of this variant (PROTOCOL.md section 5), reported as
  that issue, not as a bug and not as a harness error;
* ``expected`` - the run is a reproduction of that issue: it should occur (its absence is noted);
* ``unknown`` - it cannot be judged from this history (e.g. ``unseen`` without a final phase).

Spec keys read (as the harness writes them in ``spec.json``; every key is optional):

==========================  =================================================================================
``acks``                    ``"all"`` (or -1), 1, 0. Below ``all`` nothing is durable across elections (L7,
                            section 5.5): the loss family is ``allowed``.
``min_isr``                 int. With ``kip966`` up to min_isr - 1 lossy shutdowns are tolerated (K6, K8).
``variant``                 ``"v3.5"`` or ``"kip966"``.
``unclean_leader_election``  bool. True makes loss ``allowed`` ("declared-unsafe", section 5.4, C12).
``flush_messages``          int|None. 1 = fsync every write: power loss cannot drop acknowledged data (B4).
``nemesis``                 list of fault families requested; the history's nemesis ops say which ran.
``test_name``/``scenario``  ``last-replica-standing`` (or ``lrs``) marks a reproduction: LRS is ``expected``.
``idempotence``             bool. Only with an idempotent producer is ``duplicate`` forbidden (L6).
==========================  =================================================================================

Which faults ran comes from the history: nemesis completions of type ``ok`` (``value.effective`` true when
present) of ``f`` in ``power-loss``/``lose-unsynced`` (lossy: B4) and ``elect-unclean``; when the history
has no nemesis ops, the requested ``nemesis`` families are assumed to have run.

Decision (first match wins) for the **loss family** (anomalies a lost or rewritten log suffix produces):
``acks`` below all -> allowed; unclean election enabled or run -> allowed (declared-unsafe); lossy faults
ran and flushing is not per write: ``v3.5`` -> known-issue (Last Replica Standing, I6/I1/I7, section 5.1)
or expected for an LRS reproduction; ``kip966`` -> forbidden (K9), unless at least ``min_isr`` lossy faults
ran (beyond K6's tolerance) -> allowed; otherwise forbidden. ``G1a`` and ``precommitted-read`` are always
forbidden (a ``fail`` send certainly did not happen; nothing is transactional). ``G0``/``G1c`` are allowed
(Kafka does not isolate producers from each other; Jepsen allows them too). ``unseen`` follows the loss
family when the history has a final phase, else is ``unknown``.
"""

from __future__ import annotations

from typing import Any

from checkers.queue import KINDS

STATUSES = ("forbidden", "allowed", "known-issue", "expected", "unknown")

LOSS_FAMILY = (
    "inconsistent-offsets", "lost-write", "acked-unreadable", "realtime-order", "hwm-regression",
    "poll-skip", "nonmonotonic-poll", "int-poll-skip", "int-nonmonotonic-poll", "nonmonotonic-send",
    "int-nonmonotonic-send", "G0-realtime", "G1c-realtime",
)
LOSSY_FS = ("power-loss", "lose-unsynced")
LRS_NAMES = ("last-replica-standing", "lrs")


def faults_ran(spec: dict, ops: list[dict]) -> dict[str, int]:
    """Count effective fault ops by ``f`` (falls back to the requested families when no nemesis op exists)."""
    counts: dict[str, int] = {}
    saw_nemesis = False
    for op in ops:
        if op.get("process") != "nemesis":
            continue
        saw_nemesis = True
        if op.get("type") != "ok":
            continue
        value = op.get("value")
        if isinstance(value, dict) and value.get("effective") is False:
            continue
        counts[op["f"]] = counts.get(op["f"], 0) + 1
    if not saw_nemesis:
        requested = spec.get("nemesis") or []
        if isinstance(requested, str):
            requested = requested.split(",")
        for fam in requested:
            fam = fam.strip()
            if fam == "disk":
                counts["power-loss"] = counts.get("power-loss", 0) + 1
            elif fam:
                counts[fam] = counts.get(fam, 0) + 1
    return counts


def derive_profile(spec: dict | None, ops: list[dict], has_final: bool) -> dict[str, Any]:
    """The profile for a run: ``{"statuses": {kind: status}, "reasons": {kind: why}, "inputs": {...}}``."""
    spec = spec or {}
    faults = faults_ran(spec, ops)
    acks = str(spec.get("acks", "all"))
    acks_all = acks in ("all", "-1")
    variant = spec.get("variant", "kip966")
    unclean = bool(spec.get("unclean_leader_election")) or faults.get("elect-unclean", 0) > 0
    lossy = sum(faults.get(f, 0) for f in LOSSY_FS)
    flush_every = spec.get("flush_messages") == 1
    min_isr = spec.get("min_isr") or 1
    name = str(spec.get("scenario") or spec.get("test_name") or "").lower()
    lrs_repro = name in LRS_NAMES

    if not acks_all:
        loss, why = "allowed", f"acks={acks}: acknowledged writes are not durable across elections (L7, section 5.5)"
    elif unclean:
        loss, why = "allowed", "unclean leader election enabled or performed: declared-unsafe (C12, section 5.4)"
    elif lossy and not flush_every:
        if variant == "v3.5":
            loss = "expected" if lrs_repro else "known-issue"
            why = (f"v3.5 with {lossy} lossy fault(s): Last Replica Standing can lose acknowledged writes "
                   "(section 5.1/5.2; I1, I6, I7, I13)")
        elif lossy >= min_isr:
            loss, why = "allowed", f"{lossy} lossy faults >= min_isr {min_isr}: beyond KIP-966's tolerance (K6)"
        else:
            loss, why = "forbidden", f"kip966 tolerates {min_isr - 1} lossy shutdown(s) (K6, K9)"
    else:
        loss, why = "forbidden", "acks=all, no unclean election, no lossy fault: committed data must survive (I6, I15)"

    statuses: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for kind in KINDS:
        if kind in LOSS_FAMILY:
            statuses[kind], reasons[kind] = loss, why
        elif kind == "unseen":
            if has_final:
                statuses[kind], reasons[kind] = loss, why + "; checked after the final phase"
            else:
                statuses[kind], reasons[kind] = "unknown", "no final phase: unseen values may still appear"
        elif kind == "duplicate":
            if spec.get("idempotence") is True:
                statuses[kind], reasons[kind] = "forbidden", "idempotent producer dedupes retries (L6)"
            elif loss != "forbidden":
                statuses[kind], reasons[kind] = loss, why
            else:
                statuses[kind], reasons[kind] = "allowed", "non-idempotent producer retries may duplicate"
        elif kind in ("G0", "G1c"):
            statuses[kind], reasons[kind] = "allowed", "producers are not isolated from each other"
        else:  # G1a, precommitted-read
            statuses[kind], reasons[kind] = "forbidden", "a fail send certainly did not happen; no transactions"
    return {"statuses": statuses, "reasons": reasons,
            "inputs": {"acks": acks, "variant": variant, "min_isr": min_isr, "unclean": unclean,
                       "lossy_faults": lossy, "flush_every_write": flush_every, "lrs_reproduction": lrs_repro,
                       "has_final_phase": has_final, "faults": faults}}


def apply_override(profile: dict, override: str | dict | None) -> dict:
    """Apply ``--profile``: ``None``/``"auto"`` keeps it, ``"strict"`` forbids every kind except G0/G1c,
    a dict or ``"kind=status,kind=status"`` string sets individual kinds."""
    if override in (None, "", "auto"):
        return profile
    statuses = dict(profile["statuses"])
    reasons = dict(profile["reasons"])
    if override == "strict":
        for kind in KINDS:
            if kind not in ("G0", "G1c") and statuses[kind] != "unknown":
                statuses[kind], reasons[kind] = "forbidden", "strict profile"
    else:
        if isinstance(override, str):
            pairs = {}
            for part in override.split(","):
                if "=" not in part:
                    raise ValueError(f"profile: expected kind=status, got {part!r}")
                k, v = part.split("=", 1)
                pairs[k.strip()] = v.strip()
            override = pairs
        for kind, status in override.items():
            if kind not in KINDS:
                raise ValueError(f"profile: unknown anomaly kind {kind!r}")
            if status not in STATUSES:
                raise ValueError(f"profile: unknown status {status!r} for {kind}")
            statuses[kind], reasons[kind] = status, "set by --profile"
    return dict(profile, statuses=statuses, reasons=reasons, override=override)
