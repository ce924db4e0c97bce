"""Seed 001: the ZooKeeper-era Phase A / Phase B transition table for ORS {1,2,3} -> TRS {4,5,6},
reproduced step by step on KRaft (``reassign-phase-ab``).

The seed's table (RS, AR, RR, leader, ISR) and what each row becomes on a KRaft controller:

==============  ===============================================  ==============================================
seed row        ZooKeeper controller                             KRaft (PROTOCOL.md C16-C21)
==============  ===============================================  ==============================================
initial         RS {1,2,3} leader 1 ISR {1,2,3}                  the same
A2              RS {4,5,6,1,2,3} AR {4,5,6} RR {1,2,3}           the grow change (C18): the same sets, leader
                (A1 bumped the leader epoch)                     and ISR unchanged, LE unchanged, PE+1
phase B         ISR {1,...,6}: every TRS replica in sync          the leader's AlterPartitions add 4, then 5
                                                                 (ISR grows, nothing else changes); the one
                                                                 that adds the last TRS replica completes
B3, B4, B6      leader 4, then ISR {4,5,6}, then RS {4,5,6}      one committed change (C19): RS [4,5,6], ISR
                                                                 {4,5,6}, leader from TRS, LE+1, PE+1
B5              StopReplica(delete) to RR                        RR replicas delete their logs (T1)
==============  ===============================================  ==============================================

To make "phase B not yet reached" observable, broker 6 is held back from the leader until 4 and 5 are in
the ISR: the move must not complete while a TRS replica is missing (C17), and the leader must stay 1 until
the completion. Both variants expect the same; both runs must be valid.
"""

from __future__ import annotations

from typing import Any

from harness.spec import RunSpec
from kraftcheck.scenarios import live, observe
from kraftcheck.scenarios.base import COMMON, Scenario
from kraftcheck.scenarios.checks import check, first, nemesis_invoke_time, no_acked_loss, same_set, verdict
from kraftcheck.scenarios.live import both_ways, expect_effective

TOPIC = "phase-ab"
ORS, TRS = [1, 2, 3], [4, 5, 6]


def script(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of the module docstring."""
    watch = live.PartitionWatch(runner, run, TOPIC)
    placed = watch.until("ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == ORS and s["leader"] == 1, 30)
    runner.step(run, "initial", f"seed row initial: {observe.describe_assignment(placed)}", state=placed)
    acked = live.produce(runner, run, cluster, [1, 2, 3])
    runner.step(run, "produce", f"acknowledged [offset, value] {acked}", acked=acked)

    runner.fault(run, "start-partition", {"topology": "hold-b6", "edges": both_ways("b6", "b1")})
    expect_effective(runner.admin(run, "reassign", {"topic": TOPIC, "targets": {0: TRS}}),
                     "AlterPartitionReassignments {1,2,3} -> {4,5,6}")
    grown = watch.until("the grow state (row A2)", lambda s, e: s["adding"] == TRS, 15)
    runner.step(run, "A2", f"seed row A2: {observe.describe_assignment(grown)}", state=grown,
                admin_view=live.admin_view(cluster, TOPIC)[0])
    pending = watch.until("4 and 5 in the ISR while 6 is held back",
                          lambda s, e: {4, 5} <= set(s["isr"]) and s["adding"] == TRS, 30)
    runner.step(run, "phase-B-pending", f"TRS not yet in the ISR: {observe.describe_assignment(pending)}",
                state=pending)

    runner.fault(run, "stop-partition", {})
    done = watch.until("the completion (rows B3, B4, B6)",
                       lambda s, e: s["replicas"] == TRS and not s["adding"] and not s["removing"], 30)
    runner.step(run, "B6", f"seed rows B3/B4/B6 in one change: {observe.describe_assignment(done)}", state=done)
    for broker in ORS:
        watch.until_event(f"b{broker} to delete its removed replica (B5, T1)", "log_deleted", 30,
                          after_ns=done["time"], topic=TOPIC, partition=0, replica=broker)
    runner.step(run, "B5", "brokers 1, 2 and 3 deleted their logs")


def judge(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
          events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """The seed's rows against the stored controller states (module docstring table)."""
    topic = spec.topic
    states = observe.controller_states(events, topic, 0)
    t_reassign = nemesis_invoke_time(ops, "reassign", None) or 0
    before = [s for s in states if s["time"] < t_reassign]
    initial = before[-1] if before else None
    after = [s for s in states if s["time"] >= t_reassign]
    grow = first(after, lambda s: s["adding"] == TRS)
    done = first(after, lambda s: same_set(s["replicas"], TRS) and not s["adding"] and not s["removing"])
    pending = [s for s in after if s["adding"] and (done is None or s["time"] < done["time"])]
    last = pending[-1] if pending else None
    i, g, d, lp = initial or {}, grow or {}, done or {}, last or {}
    deleted = {b: bool(observe.replica_events(events, "log_deleted", topic, 0, replica=b,
                                              after=d.get("time"))) for b in ORS}
    growth = [s["isr"] for s in pending]
    checks = [
        check("row initial: RS {1,2,3} leader 1 ISR {1,2,3}", initial and same_set(i["replicas"], ORS)
              and i["leader"] == 1 and same_set(i["isr"], ORS), "RS {1,2,3} AR {} RR {} leader 1 ISR {1,2,3}",
              observe.describe_assignment(initial)),
        check("row A2: RS {4,5,6,1,2,3} AR {4,5,6} RR {1,2,3} leader 1 ISR {1,2,3}", grow
              and same_set(g["replicas"], ORS + TRS) and g["removing"] == ORS and g["leader"] == 1
              and same_set(g["isr"], ORS), "RS {1..6} AR {4,5,6} RR {1,2,3} leader 1 ISR {1,2,3}",
              observe.describe_assignment(grow), "C18"),
        check("A2 on KRaft keeps the leader epoch (A1's bump is ZooKeeper-era) and bumps PE", grow and initial
              and g["leader_epoch"] == i["leader_epoch"] and g["partition_epoch"] == i["partition_epoch"] + 1,
              f"LE {i.get('leader_epoch')} PE {(i.get('partition_epoch') or 0) + 1}", observe.describe_assignment(grow),
              "C2, C18"),
        check("phase B pending: the ISR grows by the leader's AlterPartitions, nothing else changes",
              bool(pending) and all(same_set(s["replicas"], ORS + TRS) and s["adding"] == TRS and s["removing"] == ORS
                                    and s["leader"] == 1 for s in pending) and any({4, 5} <= set(x) for x in growth),
              "RS/AR/RR/leader as in A2; 4 and 5 join the ISR", growth, "C15, C20"),
        check("no completion while a TRS replica is outside the ISR", done is not None and all(
              not set(TRS) <= set(s["isr"]) for s in pending), "every pending ISR misses 6",
              growth, "C17"),
        check("rows B3, B4, B6 are one change: RS {4,5,6}, ISR {4,5,6}, leader from TRS", done
              and d["replica_order"] == TRS and same_set(d["isr"], TRS) and d["leader"] in TRS,
              "RS [4,5,6] AR [] RR [] ISR {4,5,6} leader in {4,5,6} (seed: 4)", observe.describe_assignment(done),
              "C19"),
        check("the completion bumps LE and PE once", done and last and d["leader_epoch"] == lp["leader_epoch"] + 1
              and d["partition_epoch"] == lp["partition_epoch"] + 1,
              f"LE {(lp.get('leader_epoch') or 0) + 1} PE {(lp.get('partition_epoch') or 0) + 1}",
              observe.describe_assignment(done), "C2"),
        check("row B5: the RR replicas delete their logs", all(deleted.values()), "log_deleted on b1, b2, b3",
              deleted, "T1"),
        no_acked_loss(ops),
    ]
    table = [{"seed row": row, "observed": observe.describe_assignment(s)} for row, s in
             (("initial", initial), ("A2", grow), ("phase B (last pending)", last), ("B3+B4+B6", done))]
    facts = {"seed table vs KRaft": table, "every controller state": [observe.describe_assignment(s) for s in states]}
    return verdict(spec.scenario, spec.variant, EXPECTATION, checks, facts, results)


EXPECTATION = ("{1,2,3} -> {4,5,6} passes through the seed's rows: A2 (grow), phase B pending until every TRS "
               "replica is in the ISR, then B3/B4/B6 as one KRaft change with a TRS leader; RR logs deleted; valid")

SCENARIOS = [Scenario(
    name="reassign-phase-ab",
    summary="the Phase A/B table {1,2,3} -> {4,5,6}, row by row, on a KRaft controller",
    reproduces="seed 001 (ZooKeeper-era Phase A / Phase B transition table)",
    recipe="6 brokers, RF 3 on [1,2,3]; reassign to [4,5,6] with 6 held back until 4 and 5 joined the ISR",
    variants=("v3.5", "kip966"),
    expected={"v3.5": "valid", "kip966": "valid"},
    spec_options={**COMMON, "test_name": "reassign-phase-ab", "topic": TOPIC, "brokers": 6, "replication_factor": 3},
    script=script,
    judge=judge,
    assignment={0: list(ORS)},
    aliases=("seed-001",),
)]
