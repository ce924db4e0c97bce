"""Guarantee profiles: which queue anomalies a run's configuration forbids, allows or expects.

A profile maps every anomaly kind of ``checkers/queue/anomalies.py`` to a status:

* ``forbidden`` - an occurrence makes the run invalid;
* ``allowed`` - the configuration gives no guarantee against it (reported, not a violation);
* ``known-issue`` - a documented protocol weakness of this variant (docs/protocol-rules.md section 5),
  reported as that issue, not as a bug and not as a harness error;
* ``expected`` - the run is a reproduction of that issue: it should occur (its absence is noted);
* ``unknown`` - it cannot be judged from this history (e.g. ``unseen`` without a final phase).

Spec keys read (``harness.checked_spec.CheckedSpec`` lists them with what a missing key means), and what
each does to the profile:

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
``unclean_recoveries``      int, from the trace, not the spec (``CheckedSpec.observed``): K7 recoveries the
                            controller committed. With ``kip966`` and at least ``min_isr`` lossy faults the
                            loss family is ``allowed`` (K7 is always possible data loss, K8).
==========================  =================================================================================

Which faults ran comes from the history: nemesis completions of type ``ok`` (``value.effective`` true when
present) of ``f`` in ``power-loss``/``lose-unsynced``/``crash-lossy`` (lossy: B4) and ``elect-unclean``; when the history
has no nemesis ops, the requested ``nemesis`` families are assumed to have run.

A system under test other than the reference implementation (``sut_facts`` in the spec with ``profile``
``declared``) is judged by the guarantees its setting declares (``harness.sut``), not by the protocol's
rules: a fault kind that ran (``harness.faults.FAULT_GUARANTEE``: crash, power-loss, partition, pause,
clock, admin) and that the setting does not promise acknowledged writes survive makes the loss family
``allowed``, with the setting's own reason; otherwise loss is ``forbidden``. Below ``acks=all`` loss is
allowed for every system.

Decision (first match wins) for the **loss family** of the reference implementation (anomalies a lost or rewritten log suffix produces):
``acks`` below all -> allowed; unclean election enabled or run -> allowed (declared-unsafe); lossy faults
ran and flushing is not per write: ``v3.5`` -> known-issue (Last Replica Standing, I6/I1/I7, section 5.1)
or expected for an LRS reproduction; ``kip966`` -> allowed when the trace shows a K7 recovery and at least
``min_isr`` lossy faults ran (a lossy node that could not catch up before the next loss, because the
partition had no leader, is missing writes beyond any time window), else forbidden (K9) unless within
one window at least ``min_isr`` replicas of one partition had lost unflushed writes (beyond K6/K8's
tolerance) -> allowed; otherwise forbidden.

Loss windows (``loss_windows``): a lossy fault exposes each node it hit (its completion's ``nodes``) from
its invocation until the node has had time to fetch back what it lost: ``power-loss`` and ``crash-lossy``
restart the node inside their op, so the window ends at the op's completion plus ``replica_lag_time_max_ms`` (the time a
restarted replica has to catch up before the leader counts it as lagging, L14); after ``lose-unsynced``
the process keeps running and the loss shows at its next restart, so the window lasts until an ok
``start``/``heal``/``power-loss`` completion naming the node, plus the same allowance (else to the end of
the history). A node's partitions are the keys of its ``leo_before`` evidence when present, else all; a
node whose evidence shows no partition log (the controller) or no dropped byte (``dropped_bytes`` 0) lost
no replica's data and opens no window.
Losses that heal before the next one starts never add up: one replica at a time cannot lose a write
that MinISR replicas acknowledged. Without node names in the history (nemesis ops absent or without
evidence) the total number of lossy faults is compared with ``min_isr`` instead. ``unseen`` follows the loss family when the
history has a final phase, else is ``unknown``.

The rest follows Jepsen's Kafka checker (``jepsen.tests.kafka/allowed-error-types``), with the rule that
applied named in each reason; what the history holds decides between rules (``history_features``):

* ``G1a`` and ``precommitted-read`` are forbidden (a ``fail`` send certainly did not happen; a
  consumer never sees an open transaction's records, its own included), except in a transactional run
  (spec ``txn``) whose consumers read at ``read_uncommitted``: KIP-98 serves them the records of aborted
  and open transactions, so both are allowed there. A committed transaction whose markers never reached a
  partition stays invisible at read_committed: its writes are ``acked-unreadable`` (loss family).
* ``int-send-skip`` is allowed: another producer's record may land between two sends of one transaction.
* ``G0`` is allowed: writes are not isolated (plain sends, and transactions alike: the records of
  concurrent transactions interleave in the log).
* ``G1c`` is allowed when its cycle has a ww edge (the same interleaving seen by a reader: Jepsen allows
  G1c when it infers ww edges, ``:ww-deps``). A G1c or G1c-realtime of wr edges alone is **never**
  allowed (but at ``read_uncommitted``), whatever the profile says (``checkers.queue.checker.judge``): it needs a transaction to read
  another's write that was not committed yet (Jepsen finds exactly these without ``:ww-deps`` and
  reports them).
* with transactions in the history, ``G0-realtime`` and ``G1c-realtime`` (with a ww edge) are allowed when
  the loss family is forbidden: a transaction appends its records when it sends and commits later, so
  the log order of two transactions' writes can run against the real-time order of their commits.
  At ``read_uncommitted`` a cycle of wr edges alone is allowed as well (``checkers.queue.checker.judge``):
  a consumer may read an open transaction's write.
* with ``subscribe`` ops in the history, ``poll-skip`` and ``nonmonotonic-poll`` are allowed when the loss
  family is forbidden: the consumer group may move partitions between polls (Jepsen allows both with
  ``:sub-via :subscribe``).

``apply_override`` also knows ``jepsen``: the statuses under which the verdict is what Jepsen's checker
computes for ``:valid?`` (docs/jepsen-verdicts.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from checkers.queue.anomalies import KINDS
from harness.checked_spec import CheckedSpec
from harness.faults import FAULT_GUARANTEE
from harness.spec import DEFAULTS

STATUSES = ("forbidden", "allowed", "known-issue", "expected", "unknown")

LOSS_FAMILY = (
    "inconsistent-offsets", "lost-write", "acked-unreadable", "realtime-order", "hwm-regression",
    "poll-skip", "nonmonotonic-poll", "int-poll-skip", "int-nonmonotonic-poll", "nonmonotonic-send",
    "int-nonmonotonic-send", "G0-realtime", "G1c-realtime",
)
LOSSY_FS = ("power-loss", "lose-unsynced", "crash-lossy")
# Cycles through real time that a transaction's early appends make legitimate (the loss family otherwise).
TXN_REALTIME_KINDS = ("G0-realtime", "G1c-realtime")
RESTARTING_LOSSY_FS = ("power-loss", "crash-lossy")  # the node is back up when the op completes
DEFAULT_LAG_MS = DEFAULTS["replica_lag_time_max_ms"]  # when a stored spec does not say: the spec's default
LRS_NAMES = ("last-replica-standing", "lrs")
# What Jepsen's Kafka checker lets pass by default (allowed-error-types), in kraftcheck's kinds; G1c and
# G1c-realtime with a ww edge are the ones its :ww-deps mode allows (cycles without one stay forbidden).
JEPSEN_ALLOWED = ("int-send-skip", "G0", "G0-realtime", "G1c", "G1c-realtime")
JEPSEN_SUBSCRIBE_ALLOWED = ("poll-skip", "nonmonotonic-poll")
# kraftcheck's own kinds, which Jepsen's checker does not look for.
NOT_IN_JEPSEN = ("acked-unreadable", "realtime-order", "hwm-regression")
WR_ONLY_RULE = ("a cycle of wr edges alone is never allowed: each of its transactions read another's write "
                "before that one committed (Jepsen reports it as G1c without :ww-deps)")


def faults_ran(spec: CheckedSpec | Mapping | None, ops: list[dict]) -> dict[str, int]:
    """Count effective fault ops by ``f`` (falls back to the requested families when no nemesis op exists)."""
    spec = CheckedSpec.of(spec)
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
        for fam in spec.nemesis:
            fam = fam.strip()
            if fam == "disk":
                counts["power-loss"] = counts.get("power-loss", 0) + 1
            elif fam:
                counts[fam] = counts.get(fam, 0) + 1
    return counts


class LossWindow(NamedTuple):
    """``[start, end)`` (history time) during which ``node`` may lack unflushed writes it had acknowledged
    to its leader; ``partitions``: the partitions it hosted (None: unknown, taken as all)."""

    node: str
    start: int
    end: int
    partitions: frozenset | None


def loss_windows(spec: CheckedSpec | Mapping | None, ops: list[dict]) -> list[LossWindow] | None:
    """The loss windows of a history (see the module docstring), or None when its lossy faults do not
    name their nodes (then only their number is known)."""
    allowance = int(CheckedSpec.of(spec).replica_lag_time_max_ms or DEFAULT_LAG_MS) * 1_000_000
    nemesis = [op for op in ops if op.get("process") == "nemesis"]
    end_of_history = max((op.get("time", 0) for op in ops), default=0)
    invoked: dict[str, int] = {}
    windows: list[LossWindow] = []
    open_unsynced: dict[str, tuple[int, frozenset | None]] = {}
    for op in nemesis:
        f, t = op.get("f"), op.get("time", 0)
        if op.get("type") == "invoke":
            invoked[f] = t
            continue
        value = op.get("value") if isinstance(op.get("value"), dict) else {}
        nodes = [str(n) for n in value.get("nodes") or []]
        if op.get("type") == "ok" and f in ("start", "heal", "power-loss"):
            for node in nodes:  # a restart: an earlier lose-unsynced on the node shows now
                if node in open_unsynced:
                    start, parts = open_unsynced.pop(node)
                    windows.append(LossWindow(node, start, t + allowance, parts))
        if f not in LOSSY_FS or op.get("type") != "ok" or value.get("effective") is False:
            continue
        if not nodes:
            return None
        start = invoked.pop(f, t)
        leo_before = value.get("leo_before") or {}
        dropped = value.get("dropped_bytes") or {}
        for node in nodes:
            keys = leo_before.get(node)
            if (isinstance(keys, dict) and not keys) or dropped.get(node) == 0:
                continue  # no partition log there, or nothing unsynced to lose
            parts = frozenset(_partition_of(k) for k in keys) if isinstance(keys, dict) and keys else None
            if f in RESTARTING_LOSSY_FS:
                windows.append(LossWindow(node, start, t + allowance, parts))
            elif node not in open_unsynced:
                open_unsynced[node] = (start, parts)
    for node, (start, parts) in open_unsynced.items():
        windows.append(LossWindow(node, start, max(start, end_of_history) + allowance, parts))
    return windows


def _partition_of(name: Any) -> Any:
    """A partition named by a log directory (``queue-3``) or a number, as an int when it ends in digits."""
    text = str(name)
    tail = text.rpartition("-")[2]
    return int(tail) if tail.isdigit() else text


def worst_overlap(windows: list[LossWindow]) -> tuple[int, Any, int, list[str]]:
    """The most replicas of one partition inside loss windows at the same moment: ``(count, partition
    (None: every partition), time, nodes)``."""
    partitions = {p for w in windows if w.partitions for p in w.partitions}
    best: tuple[int, Any, int, list[str]] = (0, None, 0, [])
    for part in sorted(partitions, key=str) or [None]:
        mine = [w for w in windows if w.partitions is None or part is None or part in w.partitions]
        for w in mine:  # the overlap is largest at some window's start
            nodes = sorted({o.node for o in mine if o.start <= w.start < o.end})
            if len(nodes) > best[0]:
                best = (len(nodes), part, w.start, nodes)
    return best


def _is_transaction(op: dict) -> bool:
    if op.get("f") == "txn":
        return True
    value = op.get("value")
    return (op.get("f") in ("send", "poll") and isinstance(value, list) and len(value) > 1
            and all(isinstance(m, list) and m and m[0] in ("send", "poll") for m in value))


def history_features(ops: Iterable[dict]) -> dict[str, bool]:
    """What of the history decides between rules: ``transactions`` (an op of ``f`` ``txn``, or a send/poll
    with several micro-ops) and ``subscribe`` (a client ``subscribe`` op)."""
    txn = sub = False
    for op in ops:
        if type(op.get("process")) is not int:
            continue
        if not txn and _is_transaction(op):
            txn = True
        elif op.get("f") == "subscribe":
            sub = True
        if txn and sub:
            break
    return {"transactions": txn, "subscribe": sub}


def derive_profile(spec: CheckedSpec | Mapping | None, ops: list[dict], has_final: bool,
                   features: dict[str, bool] | None = None) -> dict[str, Any]:
    """The profile for a run: ``{"statuses": {kind: status}, "reasons": {kind: why}, "inputs": {...}}``.
    ``features``: ``history_features(ops)`` when the caller has them already."""
    spec = CheckedSpec.of(spec)
    if features is None:
        features = history_features(ops)
    txn, sub = features["transactions"], features["subscribe"]
    faults = faults_ran(spec, ops)
    acks, acks_all = spec.acks, spec.acks_all
    variant = spec.variant
    unclean = spec.unclean_leader_election or faults.get("elect-unclean", 0) > 0
    lossy = sum(faults.get(f, 0) for f in LOSSY_FS)
    flush_every = spec.flush_messages == 1
    min_isr = spec.min_isr or 1
    lrs_repro = spec.run_name in LRS_NAMES
    read_uncommitted = spec.txn and spec.isolation_level == "read_uncommitted"

    declared = declared_system(spec)
    if not acks_all:
        loss, why = "allowed", f"acks={acks}: acknowledged writes are not durable across elections (L7, section 5.5)"
    elif declared is not None:
        loss, why = _declared_loss(declared, faults)
    elif unclean:
        loss, why = "allowed", "unclean leader election enabled or performed: declared-unsafe (C12, section 5.4)"
    elif lossy and not flush_every:
        if variant == "v3.5":
            loss = "expected" if lrs_repro else "known-issue"
            why = (f"v3.5 with {lossy} lossy fault(s): Last Replica Standing can lose acknowledged writes "
                   "(section 5.1/5.2; I1, I6, I7, I13)")
        elif spec.unclean_recoveries and lossy >= min_isr:
            loss, why = "allowed", (
                f"{spec.unclean_recoveries} K7 unclean recover(y/ies) in the trace after {lossy} lossy faults >= "
                f"min_isr {min_isr}: a recovery elects the most complete last-known-ELR member, which may still "
                "miss acknowledged writes when every member lost some (K7: always possible data loss; K8)")
        else:
            loss, why = _kip966_loss(spec, ops, lossy, min_isr)
    else:
        loss, why = "forbidden", "acks=all, no unclean election, no lossy fault: committed data must survive (I6, I15)"

    statuses: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for kind in KINDS:
        if kind in JEPSEN_SUBSCRIBE_ALLOWED and sub and loss == "forbidden":
            statuses[kind], reasons[kind] = "allowed", (
                "consumers subscribe: the group may move partitions between polls, so a position can jump "
                "(Jepsen allows it with :sub-via :subscribe)")
        elif kind in TXN_REALTIME_KINDS and txn and loss == "forbidden":
            statuses[kind], reasons[kind] = "allowed", (
                "transactions: a transaction's records are appended when it sends, not when it commits, so "
                "the log order of two transactions' writes (ww) may run against the real-time order of their "
                "commits (Jepsen allows G0-realtime, and G1c-realtime with :ww-deps)")
        elif kind in LOSS_FAMILY:
            statuses[kind], reasons[kind] = loss, why
        elif kind == "unseen":
            if has_final:
                statuses[kind], reasons[kind] = loss, why + "; checked after the final phase"
            else:
                statuses[kind], reasons[kind] = "unknown", "no final phase: unseen values may still appear"
        elif kind == "duplicate":
            if spec.idempotence is True:
                statuses[kind], reasons[kind] = "forbidden", "idempotent producer dedupes retries (L6)"
            elif loss != "forbidden":
                statuses[kind], reasons[kind] = loss, why
            else:
                statuses[kind], reasons[kind] = "allowed", "non-idempotent producer retries may duplicate"
        elif kind == "int-send-skip":
            statuses[kind], reasons[kind] = "allowed", (
                "another producer's record may land between two sends of one transaction: writes are not "
                "isolated (Jepsen allows int-send-skip)")
        elif kind == "G0":
            statuses[kind], reasons[kind] = "allowed", (
                "transactions: the records of concurrent transactions interleave in the log, writes are not "
                "isolated (Jepsen always allows G0)" if txn else
                "producers are not isolated from each other (Jepsen always allows G0)")
        elif kind == "G1c":
            statuses[kind], reasons[kind] = "allowed", (
                "transactions: a cycle through a ww edge is interleaved unisolated writes (Jepsen allows G1c "
                "with :ww-deps); " + WR_ONLY_RULE if txn else
                "no transaction: no op both sends and reads, so no G1c can arise; " + WR_ONLY_RULE)
        elif read_uncommitted:
            # G1a and precommitted-read: KIP-98 hides aborted and open transactions only at read_committed
            statuses[kind], reasons[kind] = "allowed", (
                "consumers read at read_uncommitted: they are served the records of aborted and open "
                "transactions (KIP-98 isolates only read_committed consumers)")
        elif kind == "G1a":
            statuses[kind], reasons[kind] = "forbidden", "a fail send certainly did not happen (aborted read)"
        else:  # precommitted-read
            statuses[kind], reasons[kind] = "forbidden", (
                "a consumer never sees the records of an open transaction, its own included")
    return {"statuses": statuses, "reasons": reasons,
            "inputs": {"acks": acks, "variant": variant, "system": None if declared is None else {
                           k: declared.get(k) for k in ("name", "setting", "guarantees", "ephemeral")}, "min_isr": min_isr, "unclean": unclean,
                       "lossy_faults": lossy, "flush_every_write": flush_every, "lrs_reproduction": lrs_repro,
                       "has_final_phase": has_final, "faults": faults, "transactions": txn,
                       "isolation_level": spec.isolation_level if spec.txn else None,
                       "subscribe": sub}}



def declared_system(spec: CheckedSpec | Mapping | None) -> dict | None:
    """The ``sut_facts`` of a run whose system is judged by the guarantees it declares (not the reference
    implementation, which the protocol's own rules judge); None otherwise."""
    facts = CheckedSpec.of(spec).sut_facts
    if facts is not None and facts.get("profile") == "declared":
        return dict(facts)
    return None


def _declared_loss(facts: dict, faults: dict[str, int]) -> tuple[str, str]:
    """The loss status of a system judged by its declared guarantees: a fault kind that ran and that the
    setting does not promise acknowledged writes survive makes loss allowed, with the setting's reason; if
    every fault that ran is promised, or none ran, loss is forbidden."""
    system = f"{facts.get('name')} ({facts.get('setting')} setting)"
    promised = set(facts.get("guarantees") or ())
    kinds_ran = sorted({FAULT_GUARANTEE[f] for f in faults if f in FAULT_GUARANTEE})
    unpromised = [kind for kind in kinds_ran if kind not in promised]
    if unpromised:
        reasons = facts.get("not_promised") or {}
        said = "; ".join(f"{kind}: {reasons.get(kind) or 'not declared'}" for kind in unpromised)
        return "allowed", (f"{system} does not promise that acknowledged writes survive {', '.join(unpromised)} "
                           f"faults, and such faults ran ({said})")
    ran = f"the faults that ran ({', '.join(kinds_ran)})" if kinds_ran else "no fault ran"
    return "forbidden", (f"{system} declares that acknowledged writes survive {', '.join(sorted(promised)) or 'nothing'}"
                         f"; {ran}: every acknowledged write must be readable")


def _kip966_loss(spec: CheckedSpec, ops: list[dict], lossy: int, min_isr: int) -> tuple[str, str]:
    """The loss status under KIP-966 with lossy faults: allowed only when at least ``min_isr`` replicas of
    one partition were inside loss windows at the same moment (K6, K8; module docstring)."""
    windows = loss_windows(spec, ops)
    if windows is None:
        if lossy >= min_isr:
            return "allowed", (f"{lossy} lossy faults >= min_isr {min_isr} and the history does not say which "
                               "nodes they hit or when: assumed to overlap, beyond KIP-966's tolerance (K6)")
        return "forbidden", f"kip966 tolerates {min_isr - 1} lossy shutdown(s) (K6, K9)"
    count, part, at, nodes = worst_overlap(windows)
    where = "every partition" if part is None else f"partition {part}"
    if count >= min_isr:
        return "allowed", (f"{count} replicas ({', '.join(nodes)}) of {where} had lost unflushed writes within "
                           f"one window (at {at / 1e9:.1f} s), >= min_isr {min_isr}: beyond KIP-966's tolerance "
                           "(K6, K8); a window lasts from the fault until the node restarted and had "
                           "replica_lag_time_max_ms to catch up")
    return "forbidden", (f"kip966 tolerates fewer than min_isr {min_isr} replicas of a partition losing unflushed "
                         f"writes at once (K6, K8, K9): {lossy} lossy fault(s), at most {count} replica(s) of any "
                         "partition inside one window (a window lasts from the fault until the node restarted "
                         "and had replica_lag_time_max_ms to catch up; losses that heal before the next do not "
                         "add up)")


def jepsen_statuses(profile: dict) -> tuple[dict[str, str], dict[str, str]]:
    """Statuses and reasons under which the verdict is Jepsen's ``:valid?`` for the same history: every
    error type bad except Jepsen's allowed ones (``JEPSEN_ALLOWED``; ``poll-skip`` and
    ``nonmonotonic-poll`` too when consumers subscribe), kraftcheck's own kinds left out of the verdict."""
    sub = profile.get("inputs", {}).get("subscribe", False)
    statuses, reasons = {}, {}
    for kind in KINDS:
        if kind in JEPSEN_ALLOWED:
            statuses[kind], reasons[kind] = "allowed", "jepsen profile: in Jepsen's allowed-error-types"
        elif sub and kind in JEPSEN_SUBSCRIBE_ALLOWED:
            statuses[kind], reasons[kind] = "allowed", (
                "jepsen profile: allowed with :sub-via :subscribe (the history subscribes)")
        elif kind in NOT_IN_JEPSEN:
            statuses[kind], reasons[kind] = "allowed", "jepsen profile: not a Jepsen error type"
        else:
            statuses[kind], reasons[kind] = "forbidden", "jepsen profile: a bad error type for Jepsen"
    return statuses, reasons


def apply_override(profile: dict, override: str | dict | None) -> dict:
    """Apply ``--profile``: ``None``/``"auto"`` keeps it, ``"strict"`` forbids every kind except G0/G1c,
    ``"jepsen"`` judges as Jepsen's Kafka checker does (``jepsen_statuses``), a dict or
    ``"kind=status,kind=status"`` string sets individual kinds."""
    if override in (None, "", "auto"):
        return profile
    statuses = dict(profile["statuses"])
    reasons = dict(profile["reasons"])
    if override == "jepsen":
        statuses, reasons = jepsen_statuses(profile)
    elif override == "strict":
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
