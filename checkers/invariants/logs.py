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

These are the comparisons alone; which summaries and states are compared, and when, is the rules' part
(``rules.py``), and what the trace said last is the state's (``state.py``).
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


def match_prefixes(a: dict, b: dict, res: Any) -> None:
    """I4 between two replicas' summaries ``a`` and ``b`` (events): their logs agree below both HWMs."""
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


def match_epochs(a: dict, b: dict, res: Any) -> None:
    """I16 between two replicas' summaries ``a`` and ``b``: ranges of one epoch with the same extent hold
    the same records."""
    if a.get("log_start") != b.get("log_start"):
        return  # ranges from different starts (retention) are not comparable by digest
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
