"""A small store of runs for the publishing tests, checked by the real checkers (no cluster).

Runs (test / stamp -> what it is):

- ``queue/20261122T100000.000Z``: kip966, kill fault with its heal, a valid synthetic history;
- ``queue/20261122T100100.000Z``: v3.5, partition fault, one acknowledged write removed from every
  read (``tests.support.synth.mutate``: lost-write), so the queue checker finds a forbidden loss: invalid;
- ``last-replica-standing/20261122T100200.000Z``: a v3.5 scenario run whose stored judgement is the
  known issue, reproduced (what ``ScriptedRunner`` writes into ``results.json``);
- ``last-replica-standing/20261122T100300.000Z``: the kip966 run of the same scenario, expectation met;
- ``queue/20261122T100400.000Z``: a run killed before it was checked (no ``results.json``).

Each checked run also gets a small ``trace.jsonl`` (written after checking, so the invariant checker's
verdict does not depend on this hand-written trace) with controller partition states and leader HWMs,
so the report's partition timeline has something to draw.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from harness import store
from kraftcheck.judge import check_store
from tests.support.synth import mutate, synth_history

VALID_RUN = "queue/20261122T100000.000Z"
INVALID_RUN = "queue/20261122T100100.000Z"
LRS_V35 = "last-replica-standing/20261122T100200.000Z"
LRS_KIP966 = "last-replica-standing/20261122T100300.000Z"
KILLED_RUN = "queue/20261122T100400.000Z"

LRS_SECTION = {
    "name": "last-replica-standing", "variant": "v3.5", "recipe": "docs/protocol-rules.md 5.1",
    "expectation": "acknowledged X lost (Last Replica Standing)", "expectation_met": True,
    "label": "KNOWN ISSUE: Last Replica Standing (docs/protocol-rules.md 5.1; I1, I6, I7, I13)",
    "facts": {"acknowledged X [offset, value]": [[0, 1], [1, 2]], "acknowledged and lost": [[0, 1], [1, 2]],
              "ISR before the crash": [1], "elections after the crash": ["b1 (clean, LE 2, from ISR [1])"]},
    "acked_lost": [[0, 1], [1, 2]], "steps": [{"step": "produce", "time": 1_000_000, "summary": "X acked"}],
}


def spec_for(variant: str, nemesis: list[str], **extra) -> dict:
    """A spec as ``build_spec`` writes one (the keys the catalog and the reports read)."""
    return {"test_name": "queue", "workload": "queue", "backend": "local", "variant": variant,
            "nemesis": nemesis, "acks": "all", "min_isr": 2, "replication_factor": 3, "brokers": 3,
            "keys": 2, "seed": 7, "topic": "kraftcheck", "idempotence": True, "time_limit_s": 5.0,
            "created_utc": "2026-11-22T10:00:00+00:00", "kraftcheck_version": "0.1.0",
            "git_commit": "0123456789abcdef0123456789abcdef01234567", "git_dirty": False, "python": "3.11.7",
            **extra}


def with_fault(ops: list[dict], fault: str, heal: str | None, value: dict, heal_value: dict | None = None,
               at: float = 0.3, until: float = 0.6) -> list[dict]:
    """Insert a fault (invoke + ok with evidence) at ``at`` of the history and its heal (if any) at
    ``until``, reindexed."""
    out = [dict(op) for op in ops]
    n = len(out)
    i, j = int(n * at), int(n * until)
    t_i, t_j = out[i]["time"], out[j]["time"]
    inserts = [(i, {"type": "invoke", "process": "nemesis", "f": fault, "value": {}, "time": t_i}),
               (i, {"type": "ok", "process": "nemesis", "f": fault, "value": {**value, "effective": True},
                    "time": t_i + 1})]
    if heal is not None:
        inserts += [(j, {"type": "invoke", "process": "nemesis", "f": heal, "value": None, "time": t_j}),
                    (j, {"type": "ok", "process": "nemesis", "f": heal,
                         "value": {**(heal_value or {}), "effective": True}, "time": t_j + 1})]
    for pos, op in sorted(inserts, key=lambda x: x[0], reverse=True):
        out.insert(pos, op)
    # keep the inserted pairs in invoke -> ok order at the same position
    out.sort(key=lambda op: op["time"])
    for k, op in enumerate(out):
        op["index"] = k
        op.setdefault("node", None)
        op.setdefault("error", None)
    return out


def scaled(ops: list[dict], ns_per_tick: int = 2_000_000) -> list[dict]:
    """Synthetic times are small ticks; spread them over seconds so plots have a time axis."""
    return [dict(op, time=op["time"] * ns_per_tick) for op in ops]


def trace_for(ops: list[dict], topic: str = "kraftcheck") -> list[dict]:
    """Controller states of partition 0 (a leader change at the fault) and the leader's HWM."""
    end = max(op["time"] for op in ops)
    events = [
        {"time": 1, "node": "0", "kind": "metadata_applied", "source": "controller", "topic": topic,
         "partition": 0, "replicas": [1, 2, 3], "isr": [1, 2, 3], "elr": [], "last_known_elr": [], "leader": 1,
         "leader_epoch": 0, "partition_epoch": 0},
        {"time": end // 3, "node": "0", "kind": "metadata_applied", "source": "controller", "topic": topic,
         "partition": 0, "replicas": [1, 2, 3], "isr": [2, 3], "elr": [], "last_known_elr": [], "leader": 2,
         "leader_epoch": 1, "partition_epoch": 1},
        {"time": end // 2, "node": "0", "kind": "metadata_applied", "source": "controller", "topic": topic,
         "partition": 0, "replicas": [1, 2, 3], "isr": [1, 2, 3], "elr": [], "last_known_elr": [], "leader": 2,
         "leader_epoch": 1, "partition_epoch": 2},
    ]
    events += [{"time": end * k // 10, "node": "1" if k < 4 else "2", "kind": "hwm", "topic": topic,
                "partition": 0, "replica": 1 if k < 4 else 2, "role": "leader", "hwm": k * 3, "leader_epoch": 0}
               for k in range(1, 10)]
    return events


def write_run(root: Path, rel: str, spec: dict, ops: list[dict], check: bool = True,
              results_extra: dict | None = None) -> Path:
    """Store one run: spec, history, checked results (plus ``results_extra``), then the trace."""
    run = root / rel
    (run / "nodes" / "b1").mkdir(parents=True)
    (run / "nodes" / "b1" / "node.log").write_text("b1 started\n")
    (run / store.SPEC).write_text(json.dumps(spec))
    with open(run / store.HISTORY, "w") as fh:
        for op in ops:
            fh.write(json.dumps(op) + "\n")
    (run / "harness.log").write_text("harness log\n")
    if check:
        results = check_store(run, spec)
        results.update(results_extra or {})
        store.write_json(run / store.RESULTS, results)
    with open(run / store.TRACE, "w") as fh:
        for ev in trace_for(ops, spec.get("topic", "kraftcheck")):
            fh.write(json.dumps(ev) + "\n")
    return run


def build_store(root: Path) -> Path:
    """Write the five runs of the module docstring under ``root``; return ``root``."""
    base = scaled(synth_history(120, keys=2, concurrency=3, seed=1))
    killed = with_fault(base, "kill", "start", {"nodes": ["b2"], "killed": {"b2": 4242}}, {"nodes": ["b2"]})
    write_run(root, VALID_RUN, spec_for("kip966", ["kill"]), killed)

    lossy, _ = mutate(scaled(synth_history(120, keys=2, concurrency=3, seed=2)), "drop-read", random.Random(3))
    cut = with_fault(lossy, "start-partition", "stop-partition",
                     {"topology": "majority-minority", "grudge": {"b1": ["b2", "b3"], "b2": ["b1"], "b3": ["b1"]}},
                     {"removed": 4})
    write_run(root, INVALID_RUN, spec_for("v3.5", ["partition"]), cut)

    lrs_ops = scaled(synth_history(20, keys=1, concurrency=1, seed=4))
    lrs_ops = with_fault(lrs_ops, "start-partition", "stop-partition",
                         {"topology": "followers-controller",
                          "grudge": {"controller": ["b2", "b3"], "b2": ["controller"], "b3": ["controller"]}},
                         at=0.3, until=0.7)
    lrs_ops = with_fault(lrs_ops, "power-loss", None, {"nodes": ["b1"], "dropped_bytes": {"b1": 356}}, at=0.5)
    lrs_spec = {"test_name": "last-replica-standing", "scenario": "last-replica-standing"}
    write_run(root, LRS_V35, {**spec_for("v3.5", ["disk", "partition"]), **lrs_spec, "seed": 11}, lrs_ops,
              results_extra={"scenario": LRS_SECTION})
    kip_section = {**LRS_SECTION, "variant": "kip966", "label": None,
                   "expectation": "no acknowledged write lost", "acked_lost": [],
                   "facts": {**LRS_SECTION["facts"], "acknowledged and lost": []}}
    write_run(root, LRS_KIP966, {**spec_for("kip966", ["disk", "partition"]), **lrs_spec, "seed": 12}, lrs_ops,
              results_extra={"scenario": kip_section})

    write_run(root, KILLED_RUN, spec_for("kip966", ["kill"]), base[: len(base) // 2], check=False)
    (root / "latest").symlink_to(Path(KILLED_RUN))
    return root
