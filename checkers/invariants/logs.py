"""I4, I5 and I16: replica logs and broker metadata compared across nodes (see the package docstring).

I4 (log matching) and I16 (epoch-offset uniqueness) read ``log_summary`` events (epoch ranges with
digests, ``reference_impl.protocol.log_summary``): each new summary of a replica is compared with the
latest summary of every other replica of the partition. Committed data never changes, so summaries
taken at different moments are comparable below both HWMs (I4); a record's epoch and offset name one
leader's write, so ranges of one epoch with the same extent must carry the same digest (I16). A summary
carries prefix digests only at its epoch boundaries and its HWM, so two summaries are compared at the
offsets both report (closed epochs below both HWMs, and equal HWMs, as at the end of a run once the
replicas have caught up); a pair with no such offset leaves I4 unevaluated for that pair, unless nothing
is committed in both (both HWMs at the log start): an empty common prefix matches trivially. Likewise a
pair that holds no epoch in common satisfies I16 trivially; ranges of a shared epoch with different extents
cannot be compared by digest and leave I16 unevaluated for that pair.

I5 (metadata log matching) reads the partition states: a replica that applied partition epoch PE must
hold the state the controller committed with that PE (the partition's records are a prefix of the
controller's log); and a broker's last applied metadata offset (``metadata_offset``) never passes the
controller's last committed offset.
"""

from __future__ import annotations

from typing import Any

STATE_FIELDS = ("replicas", "isr", "leader", "leader_epoch", "adding", "removing", "elr", "last_known_elr")


def checkpoints(summary: dict) -> dict[int, str]:
    """Offset -> digest of the log prefix below it, at every offset the summary reports one."""
    out = {r[2]: r[4] for r in summary.get("ranges") or [] if r[4] is not None}
    if summary.get("hwm_digest") is not None:
        out[summary["hwm"]] = summary["hwm_digest"]
    return out


def compare_logs(a: dict, b: dict, res: Any) -> None:
    """Evaluate I4 and I16 between two replicas' summaries ``a`` and ``b`` (events)."""
    if a.get("log_start") != b.get("log_start"):
        return  # prefixes from different starts (retention) are not comparable by digest
    start = a.get("log_start", 0)
    below = min(a.get("hwm", 0), b.get("hwm", 0))
    ca, cb = checkpoints(a), checkpoints(b)
    common = sorted(o for o in ca.keys() & cb.keys() if start < o <= below)
    if below <= start:
        res.ok("I4")  # nothing committed in both logs: the common committed prefix is empty
    elif common:
        bad = next((o for o in common if ca[o] != cb[o]), None)
        if bad is None:
            res.ok("I4")
        else:
            res.bad("I4", f"replicas {a.get('replica')} and {b.get('replica')} differ below offset {bad} "
                          f"(both HWMs >= {bad}: committed records)", [a, b])
    ranges_b = {(r[0], r[1], r[2]): r[3] for r in b.get("ranges") or []}
    if not {r[0] for r in a.get("ranges") or []} & {key[0] for key in ranges_b}:
        res.ok("I16")  # no epoch in common: no record can be claimed by both
        return
    for r in a.get("ranges") or []:
        other = ranges_b.get((r[0], r[1], r[2]))
        if other is None:
            continue
        if other != r[3]:
            res.bad("I16", f"replicas {a.get('replica')} and {b.get('replica')} hold different records in "
                           f"epoch {r[0]} offsets [{r[1]}, {r[2]})", [a, b])
        else:
            res.ok("I16")


def compare_state(replica_ev: dict, ctl_ev: dict, res: Any) -> None:
    """I5: the state a replica applied equals the controller's at the same partition epoch."""
    diff = [f for f in STATE_FIELDS if f in replica_ev and f in ctl_ev and replica_ev[f] != ctl_ev[f]]
    if diff:
        res.bad("I5", f"replica {replica_ev.get('replica')} applied PE {replica_ev.get('partition_epoch')} "
                      f"with {', '.join(f'{f}={replica_ev[f]}' for f in diff)}; the controller committed "
                      f"{', '.join(f'{f}={ctl_ev[f]}' for f in diff)}", [ctl_ev, replica_ev])
    else:
        res.ok("I5")


class LogViews:
    """Per partition: the latest log summary of each replica, the controller's state by partition epoch,
    and replica states waiting for the controller's record (the trace of another process may come later)."""

    def __init__(self) -> None:
        self.summaries: dict[tuple, dict[Any, dict]] = {}
        self.ctl_by_pe: dict[tuple, dict[int, dict]] = {}
        self.waiting: dict[tuple, list[dict]] = {}
        self.ctl_offset = -1
        self.broker_offsets: list[dict] = []

    def summary(self, pk: tuple, ev: dict, res: Any) -> None:
        """A replica's log summary: compare it with the other replicas' latest ones (I4, I16)."""
        latest = self.summaries.setdefault(pk, {})
        for replica, other in latest.items():
            if replica != ev.get("replica"):
                compare_logs(ev, other, res)
        latest[ev.get("replica")] = ev

    def controller_state(self, pk: tuple, ev: dict, res: Any) -> None:
        """A committed partition state: remember it and settle replica states waiting for it (I5)."""
        if ev.get("offset") is not None:
            self.ctl_offset = max(self.ctl_offset, ev["offset"])
        pe = ev.get("partition_epoch")
        if pe is None:
            return
        self.ctl_by_pe.setdefault(pk, {})[pe] = ev
        waiting = self.waiting.get((pk, pe))
        if waiting:
            for rev in waiting:
                compare_state(rev, ev, res)
            del self.waiting[(pk, pe)]

    def replica_state(self, pk: tuple, ev: dict, res: Any) -> None:
        """A replica applied a partition state: compare it with the controller's at its PE (I5)."""
        pe = ev.get("partition_epoch")
        if pe is None:
            return
        ctl = self.ctl_by_pe.get(pk, {}).get(pe)
        if ctl is None:
            self.waiting.setdefault((pk, pe), []).append(ev)
        else:
            compare_state(ev, ctl, res)

    def controller_offset(self, ev: dict) -> None:
        """Any controller record with an offset: the controller's log reaches at least that far."""
        if ev.get("offset") is not None:
            self.ctl_offset = max(self.ctl_offset, ev["offset"])

    def finish(self, res: Any) -> None:
        """At the end: every broker's applied metadata offset lies within the controller's log (I5)."""
        for ev in self.broker_offsets:
            if self.ctl_offset < 0:
                return
            if ev.get("offset", -1) > self.ctl_offset:
                res.bad("I5", f"broker {ev.get('broker')} applied metadata up to offset {ev['offset']}, past "
                              f"the controller's last committed offset {self.ctl_offset}", [ev])
            else:
                res.ok("I5")
        self.broker_offsets = []
