"""The invariant checks I1-I16 (see the package docstring); one sweep over the trace in time order."""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

from checkers.invariants.logs import LogViews
from checkers.invariants.shutdown_claims import CleanShutdownClaims
from checkers.invariants.timeline import PartitionView, brief, is_controller_event, part_key
from checkers.profiles import derive_profile
from checkers.queue import unreached_keys
from checkers.queue_checker import QueueFindings, find_anomalies

# What each invariant reads (docs/protocol-rules.md section 4, "Checked from"), as event kinds/attributes.
NEEDS: dict[str, str] = {
    "I1": "leader_epoch_start{replica, leo}, hwm{replica, role=leader, hwm}",
    "I2": "controller metadata_applied{isr, elr}, leo{replica, leo}|truncate{to_offset}, hwm{role=leader}",
    "I3": "controller metadata_applied{leader, leader_epoch, isr}, role, isr_proposed{maximal_isr}|isr_updated",
    "I4": "log_summary{replica, hwm, hwm_digest, ranges} at truncations, clean stops and log recovery",
    "I5": "replica metadata_applied{partition_epoch, isr, leader, ...} vs controller metadata_applied; "
          "metadata_offset{broker, offset} vs controller record offsets",
    "I6": "history: ok sends and final-phase polls (final: true)",
    "I7": "history: consumer reads (offset -> value)",
    "I8": "controller metadata_applied{isr, elr, last_known_elr}; spec min_isr; variant kip966",
    "I9": "controller metadata_applied{isr, replicas, elr, last_known_elr}, controller fenced/unfenced/registered",
    "I10": "role{replica, role, leader} (the rest needs replica internals, not in the trace)",
    "I11": "controller metadata_applied{leader, leader_epoch, partition_epoch}, controller registered{broker_epoch}, replica metadata_applied",
    "I12": "hwm{replica, role, leader_epoch, hwm}, leo{replica, leo}, leader_epoch_start{hwm, leo}",
    "I13": "controller registered{broker, broker_epoch, previous_broker_epoch}, leo{replica}, controller metadata_applied, hwm",
    "I14": "history: ok sends with offsets; hwm{role=leader} (key k = partition k of the run's topic)",
    "I15": "history: sends and polls; hwm{role=leader} for reads above the True HWM",
    "I16": "log_summary{replica, ranges: [epoch, start, end, range digest, prefix digest]}",
}
# Invariants no trace can show (reported as "not observable" and left out of the verdict): none left.
NOT_COVERED: dict[str, str] = {}
LOSS_INVARIANTS = ("I1", "I2", "I4", "I6", "I7", "I13", "I15")
MAX_VIOLATIONS = 20


class _Results:
    def __init__(self) -> None:
        self.evaluated: dict[str, int] = defaultdict(int)
        self.violations: dict[str, list] = defaultdict(list)
        self.counts: dict[str, int] = defaultdict(int)
        self.notes: dict[str, str] = {}
        self.stale_leader_starts: list[dict] = []

    def ok(self, inv: str, n: int = 1) -> None:
        self.evaluated[inv] += n

    def bad(self, inv: str, detail: str, events=(), ops=()) -> None:
        self.evaluated[inv] += 1
        self.counts[inv] += 1
        if len(self.violations[inv]) < MAX_VIOLATIONS:
            self.violations[inv].append({"detail": detail, "events": [brief(e) for e in events if e],
                                         "ops": list(ops)})


class TraceSweep:
    """The trace checks as a sweep fed one event at a time, in time order: ``check_invariants`` feeds a
    whole trace, the deterministic simulator feeds each step's events and reads ``violations`` after it."""

    def __init__(self, spec: dict | None = None) -> None:
        self.spec = spec or {}
        self.res = _Results()
        self.events = 0
        self.variant = self.spec.get("variant", "kip966")
        self.min_isr = self.spec.get("min_isr")
        self.parts: dict[tuple, PartitionView] = defaultdict(PartitionView)
        self.fenced: set = set()
        self.last_epoch: tuple | None = None
        self.seen_epochs: dict[Any, tuple] = {}
        self.local_epochs: dict[tuple, tuple[int, int, dict]] = {}
        self.restarted: dict[Any, dict] = {}            # broker -> registration event (I13)
        self.down: set = set()  # brokers between their startup (log recovery) and their next registration
        self.incomplete: dict[tuple, dict] = {}         # (part, broker) -> low leo event after a restart (I13)
        self.logs = LogViews()                           # I4, I5, I16
        self.claims = CleanShutdownClaims()              # I13: registrations claim only real clean stops

    @property
    def violations(self) -> int:
        """How many violations (of any invariant) the events fed so far showed."""
        return sum(self.res.counts.values())

    def verdict(self, ops: list[dict] = (), trace_given: bool = True, loss_status: str = "forbidden",
                queue: QueueFindings | None = None) -> dict[str, Any]:
        """The ``check_invariants`` result for the events fed so far and the history ``ops`` (the history
        checks add to the sweep's results, so ask once, at the end); ``queue``: the queue checker's
        findings for ``ops`` when the caller has them (else the history is analysed here)."""
        self.logs.finish(self.res)
        return _verdict(self.res, self.parts, self.spec, list(ops), self.events, trace_given, loss_status,
                        queue)

    def feed(self, ev: dict) -> None:
        """Take the next trace event and evaluate the invariants it can change."""
        self.events += 1
        variant, min_isr, res = self.variant, self.min_isr, self.res
        parts, fenced, seen_epochs, local_epochs = self.parts, self.fenced, self.seen_epochs, self.local_epochs
        restarted, down, incomplete = self.restarted, self.down, self.incomplete
        kind = ev.get("kind")
        ctl = is_controller_event(ev)
        pk = part_key(ev)
        if ctl:
            self.logs.controller_offset(ev)
        elif kind in ("shutdown", "registered"):
            self.claims.feed(ev, res)
        elif kind == "metadata_offset":
            self.logs.broker_offsets.append(ev)
            return
        if ctl and kind in ("fenced", "unfenced", "registered") and ev.get("broker") is not None:
            b = ev["broker"]
            if kind == "unfenced":
                fenced.discard(b)
            else:
                fenced.add(b)  # C4: a new registration stays fenced until unfenced
            if kind == "registered":
                epoch = ev.get("broker_epoch")
                if epoch is not None:
                    # I11: broker epochs strictly increase and are unique
                    if self.last_epoch is not None and epoch <= self.last_epoch[0]:
                        res.bad("I11", f"broker epoch {epoch} of broker {b} not above {self.last_epoch[0]}",
                                [self.last_epoch[1], ev])
                    elif epoch in seen_epochs and seen_epochs[epoch][0] != b:
                        res.bad("I11", f"broker epoch {epoch} reused", [seen_epochs[epoch][1], ev])
                    else:
                        res.ok("I11")
                    self.last_epoch = (epoch, ev)
                    seen_epochs[epoch] = (b, ev)
                prev = ev.get("previous_broker_epoch")
                if prev is not None and prev != -1 and prev != epoch:
                    restarted[b] = ev
                    # its log as recovered at startup (reported before the registration) may already
                    # show the loss
                    for pk2, v2 in parts.items():
                        got = v2.leo.get(b)
                        if got is not None and got[1].get("reason") == "recovery" and v2.th > 0 and got[0] < v2.th:
                            incomplete[(pk2, b)] = {"registration": ev, "leo": got[1]}
                down.discard(b)
                res.ok("I13")  # the registration was checked: a lossy restart is followed below
            return
        # Log recovery at startup (per partition; the broker's lifecycle "recovered" comes after its
        # registration and is not this) marks the broker as starting up.
        if (kind == "recovered" and ev.get("partition") is not None) or (
                kind == "leo" and ev.get("reason") == "recovery"):
            b = ev.get("replica", ev.get("broker"))
            if b is None and str(ev.get("node", "")).isdigit():
                b = int(ev["node"])
            if b is not None:
                down.add(b)  # starting up: not RUNNING until the controller accepts its registration
        if pk is None:
            if not ctl and kind in ("registered", "recovered") and ev.get("broker") is not None:
                for key in [k for k in local_epochs if k[0] == ev["broker"]]:
                    del local_epochs[key]  # a restarted broker replays metadata from scratch
            return
        view = parts[pk]
        if ctl and kind == "metadata_applied":
            self.logs.controller_state(pk, ev, res)
            _check_controller_state(view, ev, variant, min_isr, fenced, res)
            view.ctl = ev
            _check_members_complete(view, pk, variant, res, incomplete, trigger=ev, down=down)
            _check_quorum_superset(view, variant, min_isr, res)
            return
        replica = ev.get("replica")
        if replica is None:
            return
        if kind == "log_summary":
            self.logs.summary(pk, ev, res)
            return
        if kind == "metadata_applied":
            self.logs.replica_state(pk, ev, res)
            key = (replica, pk)
            le, pe = ev.get("leader_epoch"), ev.get("partition_epoch")
            if le is not None and pe is not None:
                prev = local_epochs.get(key)
                if prev is not None and (pe < prev[1] or le < prev[0]):
                    res.bad("I11", f"replica {replica} local LE/PE went back {prev[:2]} -> {(le, pe)}",
                            [prev[2], ev])
                else:
                    res.ok("I11")
                local_epochs[key] = (le, pe, ev)
            if ev.get("isr") is not None:
                view.local_isr[replica] = list(ev["isr"])
        elif kind == "role":
            view.role[replica] = (ev.get("role"), ev.get("leader_epoch"))
            if ev.get("role") == "leader" and "leader" in ev:
                if ev["leader"] != replica:
                    res.bad("I10", f"replica {replica} in leader role with local leader {ev['leader']}", [ev])
                else:
                    res.ok("I10")
        elif kind == "leader_epoch_start":
            view.role[replica] = ("leader", ev.get("leader_epoch"))
            leo = ev.get("leo")
            if leo is None and replica in view.leo:
                leo = view.leo[replica][0]
            ctl_now = view.ctl
            current = ctl_now is None or (ctl_now.get("leader") == replica
                                          and ctl_now.get("leader_epoch") == ev.get("leader_epoch"))
            if not current:
                # A replica taking a leadership the controller has already moved past (e.g. replaying old
                # metadata after a restart): I1 is about the controller's current leader, so not judged.
                res.stale_leader_starts.append(brief(ev))
            if leo is not None:
                view.leo[replica] = (leo, ev)
            if leo is not None and current:
                # I1: a leader's log holds everything below the True HWM
                if view.th > 0 and leo < view.th:
                    res.bad("I1", f"replica {replica} became leader (LE {ev.get('leader_epoch')}) with LEO {leo}"
                            f" < True HWM {view.th}", [ev, view.th_event])
                else:
                    res.ok("I1")
            if ev.get("hwm") is not None and leo is not None:
                if ev["hwm"] > leo:
                    res.bad("I12", f"new leader {replica} HWM {ev['hwm']} > LEO {leo}", [ev])
                else:
                    res.ok("I12")
        elif kind in ("leo", "truncate"):
            leo = ev.get("leo") if kind == "leo" else ev.get("to_offset")
            if leo is None:
                return
            view.leo[replica] = (leo, ev)
            if replica in restarted:
                reg = restarted.pop(replica)
                if view.th > 0 and leo < view.th:
                    incomplete[(pk, replica)] = {"registration": reg, "leo": ev}
            if (pk, replica) in incomplete and leo >= view.th:
                del incomplete[(pk, replica)]
            _check_members_complete(view, pk, variant, res, incomplete, trigger=ev, only=replica, down=down)
        elif kind == "hwm":
            hwm = ev.get("hwm")
            if hwm is None:
                return
            if ev.get("role", "leader") == "leader":
                le = ev.get("leader_epoch")
                prev = view.leader_hwm.get(replica)
                if prev is not None and prev[0] == le and hwm < prev[1]:
                    res.bad("I12", f"leader {replica} lowered its HWM {prev[1]} -> {hwm} in LE {le}", [prev[2], ev])
                else:
                    res.ok("I12")
                own_leo = view.leo.get(replica)
                if own_leo is not None and hwm > own_leo[0]:
                    res.bad("I12", f"leader {replica} HWM {hwm} > its LEO {own_leo[0]}", [own_leo[1], ev])
                view.leader_hwm[replica] = (le, hwm, ev)
                if hwm > view.th:
                    view.th = hwm
                    view.th_event = ev
                    view.hwm_series.append((ev["time"], hwm))
        elif kind in ("isr_proposed", "isr_updated", "isr_rollback"):
            isr = ev.get("maximal_isr") if kind == "isr_proposed" else ev.get("isr")
            if isr is not None:
                view.local_isr[replica] = list(isr)
        if kind in ("leader_epoch_start", "isr_proposed", "isr_updated", "isr_rollback", "metadata_applied") \
                and view.ctl is not None and view.ctl.get("leader") == replica:
            _check_quorum_superset(view, variant, min_isr, res)  # I3 when the leader's own view changes


def _check_controller_state(view, ev, variant, min_isr, fenced, res) -> None:
    isr = list(ev.get("isr") or [])
    elr = list(ev.get("elr") or [])
    lkelr = list(ev.get("last_known_elr") or [])
    replicas = list(ev.get("replicas") or [])
    prev = view.ctl
    # I11: each committed change has PE = previous + 1; LE never decreases and bumps on a leader change
    pe, le, leader = ev.get("partition_epoch"), ev.get("leader_epoch"), ev.get("leader")
    if prev is not None and pe is not None and prev.get("partition_epoch") is not None:
        ppe, ple = prev["partition_epoch"], prev.get("leader_epoch")
        if pe != ppe + 1:
            res.bad("I11", f"partition epoch {ppe} -> {pe} (expected +1, C2)", [prev, ev])
        elif le is not None and ple is not None and le < ple:
            res.bad("I11", f"leader epoch went back {ple} -> {le}", [prev, ev])
        elif leader != prev.get("leader") and le is not None and ple is not None and le <= ple:
            res.bad("I11", f"leader changed {prev.get('leader')} -> {leader} without an LE bump (C2)", [prev, ev])
        else:
            res.ok("I11")
    if "isr" not in ev:
        return
    # I9: controller sanity
    if variant == "v3.5":
        if not isr:
            res.bad("I9", "v3.5: the ISR became empty (C6 keeps the last member)", [ev])
        elif any(b in fenced for b in isr) and len(isr) > 1:
            res.bad("I9", f"v3.5: fenced member(s) {[b for b in isr if b in fenced]} in ISR {isr}", [ev])
        else:
            res.ok("I9")
    else:
        problems = []
        if set(isr) & set(elr):
            problems.append(f"ELR {elr} intersects ISR {isr}")
        if not set(isr) <= set(replicas) or not set(elr) <= set(replicas):
            problems.append(f"ISR {isr} / ELR {elr} not within replicas {replicas}")
        if min_isr is not None and len(isr) >= min_isr and (elr or lkelr):
            problems.append(f"|ISR| >= MinISR {min_isr} but ELR {elr} / LKELR {lkelr} not empty")
        if any(b in fenced for b in isr):
            problems.append(f"fenced member(s) {[b for b in isr if b in fenced]} in ISR {isr}")
        if problems:
            res.bad("I9", "K1: " + "; ".join(problems), [ev])
        else:
            res.ok("I9")
        # I8: MinISR recovery quorum. At least MinISR, not exactly: when one change drops several replicas
        # below MinISR all of them enter the ELR (K2 as the TLA+ and Kafka's PartitionChangeBuilder do it),
        # so the LKELR can outgrow MinISR; recovery stays lossless while fewer than MinISR of them lost data.
        if min_isr is not None and not isr and not elr:
            if len(lkelr) < min_isr:
                res.bad("I8", f"ISR and ELR empty but |LKELR {lkelr}| < MinISR {min_isr}", [ev])
            else:
                res.ok("I8")
        elif min_isr is not None:
            res.ok("I8")


def _check_members_complete(view, pk, variant, res, incomplete, trigger, only=None, down=frozenset()) -> None:
    ctl = view.ctl
    if ctl is None:
        return
    members = list(ctl.get("isr") or [])
    if variant != "v3.5":
        members += list(ctl.get("elr") or [])
    leader = ctl.get("leader")
    for b in members if only is None else [only]:
        if b not in members or b in down:  # I2 is about running brokers only (run(b))
            continue
        got = view.leo.get(b)
        if got is None or view.th <= 0:
            continue
        if got[0] < view.th:
            res.bad("I2", f"replica {b} in ISR/ELR with LEO {got[0]} < True HWM {view.th}",
                    [got[1], ctl, view.th_event])
        else:
            res.ok("I2")
    # I13: an incomplete replica after a restart must stay out of ISR/ELR and leadership
    for (p, b), info in list(incomplete.items()):
        if p != pk or (only is not None and b != only):
            continue
        if b in members or leader == b:
            res.bad("I13", f"replica {b} restarted with LEO {info['leo'].get('leo', info['leo'].get('to_offset'))}"
                    f" < True HWM {view.th} yet is in ISR/ELR or leader", [info["registration"], info["leo"], ctl])
            del incomplete[(p, b)]
        else:
            res.ok("I13")


def _check_quorum_superset(view, variant, min_isr, res) -> None:
    ctl = view.ctl
    leader = ctl.get("leader")
    if leader is None or leader < 0 or "isr" not in ctl:
        return
    role = view.role.get(leader)
    local = view.local_isr.get(leader)
    if role is None or local is None or role[0] != "leader" or role[1] != ctl.get("leader_epoch"):
        return
    if variant != "v3.5" and min_isr is not None and len(local) < min_isr:
        return  # K966: only while the leader's ISR has MinISR members (K11)
    if not set(ctl["isr"]) <= set(local):
        res.bad("I3", f"controller ISR {ctl['isr']} not within leader {leader}'s Maximal ISR {local}", [ctl])
    else:
        res.ok("I3")


def _history_checks(ops: list[dict], spec: dict, parts: dict, res: _Results, trace_given: bool,
                    queue: QueueFindings | None) -> None:
    if not any(op.get("f") in ("send", "poll", "txn") for op in ops):
        return
    # The kinds read here depend on no queue option, so any findings of this history serve.
    queue = queue or find_anomalies(spec, ops, {"cycles": False})
    found = queue.anomalies
    a = queue.analysis if trace_given else None
    # I6 (observed): every acknowledged write is readable after the final phase
    if any(op.get("final") is True for op in ops):
        rows = [r for r in found["acked-unreadable"] if not r.get("unreached")]
        unreached = unreached_keys(found["acked-unreadable"])
        for r in rows:
            res.bad("I6", f"ok send {r['value']} of key {r['key']} not readable at offset {r['offset']}",
                    ops=[r["writer"]])
        if unreached:
            # a write of a partition no final read reached is not known to be lost (nor kept)
            res.notes["I6"] = f"no final read reached key(s) {unreached}: their acknowledged writes are unknown"
        elif not rows:
            res.ok("I6")
    # I7 / I15: an offset, once read, keeps its value; realtime order of acknowledged sends
    for r in found["inconsistent-offsets"]:
        res.bad("I7", f"key {r['key']} offset {r['offset']} read with values {r['values']}", ops=r["ops"])
        res.bad("I15", f"offset -> value changed: key {r['key']} offset {r['offset']} {r['values']}", ops=r["ops"])
    for r in found["realtime-order"]:
        res.bad("I15", f"send acknowledged first got offset {r['offsets'][0]} >= later send's {r['offsets'][1]}",
                ops=[r["earlier"], r["later"]])
    if not found["inconsistent-offsets"]:
        res.ok("I7")
    if not found["inconsistent-offsets"] and not found["realtime-order"]:
        res.ok("I15")
    if a is None:
        return
    topics = {pk[0] for pk in parts}
    topic = spec.get("topic") if spec.get("topic") in topics else (next(iter(topics)) if len(topics) == 1 else None)
    if topic is None:
        res.notes["I14"] = "cannot map history keys to trace partitions (several topics, none named in the spec)"
        return
    acks_all = str(spec.get("acks", "all")) in ("all", "-1")
    sent: dict[tuple, set] = defaultdict(set)
    for r in a.recs:
        for k, v, _o in r.sends:
            sent[(k, v)].add(r.type)
    for (k, v), types in sent.items():
        if "ok" in types and "fail" in types:
            res.bad("I14", f"value {v} of key {k} both acknowledged and failed")

    def th_at(k, t):
        view = parts.get((topic, k))
        if view is None or not view.hwm_series:
            return None
        i = bisect.bisect_right(view.hwm_series, (t, float("inf"))) - 1
        return view.hwm_series[i][1] if i >= 0 else 0

    for r in a.recs:
        if r.type != "ok" or r.complete_time is None:
            continue
        if acks_all:
            for k, v, o in r.sends:
                th = th_at(k, r.complete_time)
                if o is None or th is None:
                    continue
                if o >= th:
                    res.bad("I14", f"send {v} acknowledged at offset {o} while the True HWM was {th}", ops=[r.index])
                else:
                    res.ok("I14")
        for k, seq in r.reads.items():
            th = th_at(k, r.complete_time)
            if th is None or not seq:
                continue
            top = max((o for o, _ in seq if o is not None), default=None)
            if top is not None and top >= th:
                res.bad("I15", f"poll read offset {top} of key {k} above the True HWM {th}", ops=[r.index])
            else:
                res.ok("I15")


def check_invariants(spec: dict, ops: list[dict], traces: list[dict], trace_given: bool = True,
                     loss_status: str = "forbidden", queue: QueueFindings | None = None) -> dict[str, Any]:
    """Evaluate every invariant; see the package docstring for the verdict rules. ``queue``: the queue
    checker's findings for ``ops`` when the caller has them (else the history is analysed here)."""
    sweep = TraceSweep(spec)
    for ev in traces:
        sweep.feed(ev)
    return sweep.verdict(ops, trace_given, loss_status, queue)


def _verdict(res: _Results, parts: dict, spec: dict, ops: list[dict], n_events: int, trace_given: bool,
             loss_status: str, queue: QueueFindings | None = None) -> dict[str, Any]:
    _history_checks(ops, spec, parts, res, trace_given and bool(n_events), queue)
    out: dict[str, Any] = {}
    for inv in NEEDS:
        entry: dict[str, Any] = {"needs": NEEDS[inv]}
        if inv in NOT_COVERED:
            entry.update(valid="unknown", covered=False, reason="not observable: " + NOT_COVERED[inv])
        elif inv == "I8" and (spec or {}).get("variant", "kip966") == "v3.5":
            entry.update(valid=True, applicable=False, reason="KIP-966 only")
        elif res.counts.get(inv):
            entry.update(valid=False, count=res.counts[inv], violations=res.violations[inv])
        elif res.evaluated.get(inv):
            entry.update(valid=True, evaluated=res.evaluated[inv])
        else:
            why = res.notes.get(inv) or ("no trace given" if not n_events and inv not in ("I6", "I7", "I15")
                                         else "the events it needs are absent")
            entry.update(valid="unknown", reason=why)
        if inv in LOSS_INVARIANTS and entry["valid"] is False and loss_status != "forbidden":
            entry["status"] = loss_status
        elif entry["valid"] is False:
            entry["status"] = "forbidden"
        out[inv] = entry
    counted = [e for e in out.values() if e.get("covered", True)]
    if any(e["valid"] is False and e["status"] == "forbidden" for e in counted):
        valid: Any = False
    elif any(e["valid"] == "unknown" for e in counted):
        valid = "unknown"
    else:
        valid = True
    if res.stale_leader_starts:
        out["I1"]["stale_leader_starts"] = {"count": len(res.stale_leader_starts),
                                            "examples": res.stale_leader_starts[:5],
                                            "note": "leader_epoch_start for an epoch the controller had left"}
    # Structurally unobservable invariants are named with the reason, plainly, and left out of the verdict:
    # the trace cannot show them on any run, so they say nothing about this one.
    return {"valid": valid, "invariants": out, "events": n_events,
            "not_checkable": {k: e["reason"] for k, e in out.items() if e.get("covered") is False},
            "undecided": {k: e["reason"] for k, e in out.items()
                          if e["valid"] == "unknown" and e.get("covered", True)},
            "violated": [k for k, e in out.items() if e["valid"] is False],
            "known_issues": [k for k, e in out.items() if e.get("status") not in (None, "forbidden")]}


class InvariantChecker:
    """Checker protocol wrapper; with no trace given its verdict is reported but not counted."""

    name = "invariants"

    def __init__(self, trace_given: bool = True, queue: QueueFindings | None = None):
        """``queue``: the queue checker's findings for the history this checker will be given, shared so
        the history is analysed once (``check_run``); without them ``check`` analyses it itself."""
        self.trace_given = trace_given
        self.queue = queue

    def check(self, spec: dict, history: list[dict], traces: list[dict]) -> dict[str, Any]:
        """Run ``check_invariants`` with the loss status of the run's guarantee profile."""
        has_final = any(op.get("final") is True for op in history)
        loss = derive_profile(spec, history, has_final)["statuses"]["lost-write"]
        result = check_invariants(spec, history, traces, self.trace_given, loss, self.queue)
        if not self.trace_given:
            result["counted"] = False
            result["reason"] = "no trace given: protocol invariants not checked (history-only parts listed)"
        return result
