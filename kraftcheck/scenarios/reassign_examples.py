"""Seed 000's two worked reassignment examples (section 4.4), on a live cluster.

**Example 1, move one replica** (``reassign-move-one``): replicas [1, 2, 3], broker 3 impaired (cut from
the controller, so it is fenced and leaves the ISR, C6): ISR [1, 2], leader 1. AlterPartitionReassignments
to [1, 2, 4] grows the replica set (C18: replicas {1, 2, 3, 4}, adding [4], removing [3], ISR and leader
unchanged, LE unchanged, PE+1). Broker 4 is held back from the leader for a moment so that the grow state
can be read by an admin client too (ListPartitionReassignments and Metadata), then released: it catches
up, the leader's AlterPartition adds it, and the controller completes in the same change (C19: replicas
{1, 2, 4}, ISR {1, 2, 4}, LE+1, PE+1; no committed state has 4 in the ISR while the move is pending).
Healed, broker 3 learns it is no longer a replica and deletes its log (T1).

**Example 2, RF 5 -> 3 waits for MinISR** (``reassign-rf5-to-3``): replicas {1..5} placed leader-first as
[5, 4, 1, 2, 3], brokers 1-3 cut from the controller (fenced, out of the ISR): ISR [4, 5], leader 5,
MinISR 2. Reassigning to [1, 2, 3] starts but cannot complete (C17: the final ISR, ISR minus removing,
would be empty): removing [4, 5], PE+1, nothing else. Healing broker 1 lets the leader add it (ISR {1, 4,
5}, PE+1) but the final ISR {1} is still below MinISR, so the move stays pending; healing broker 2 adds it
and completes: replicas {1, 2, 3}, ISR {1, 2}, a leader from the new ISR (the old leader 5 is removed),
LE+1, PE+1. Brokers 4 and 5 delete their logs.

Both variants expect the same (the reference applies the MinISR completion rule of the seeds and of
KIP-966 to v3.5 too; PROTOCOL.md 5.8(i)); both runs must be valid.
"""

from __future__ import annotations

from typing import Any

from harness.spec import RunSpec
from kraftcheck.scenarios import live, observe
from kraftcheck.scenarios.base import COMMON, Scenario
from kraftcheck.scenarios.checks import check, first, nemesis_invoke_time, no_acked_loss, same_set, verdict
from kraftcheck.scenarios.live import both_ways, expect_effective

# -- example 1 ------------------------------------------------------------------------------------------

MOVE_TOPIC = "move-one"


def script_move_one(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of example 1 (module docstring)."""
    watch = live.PartitionWatch(runner, run, MOVE_TOPIC)
    placed = watch.until("ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == [1, 2, 3] and s["leader"] == 1, 30)
    runner.step(run, "placed", observe.describe_assignment(placed), state=placed)
    acked = live.produce(runner, run, cluster, [1, 2, 3])
    runner.step(run, "produce", f"acknowledged [offset, value] {acked}", acked=acked)

    runner.fault(run, "start-partition", {"topology": "impair-b3", "edges": live.to_controllers(cluster, "b3")})
    initial = watch.until("b3 fenced and out of the ISR (C6)",
                          lambda s, e: s["isr"] == [1, 2] and 3 in observe.fenced_brokers(e), 20)
    runner.step(run, "initial", f"seed row 1: {observe.describe_assignment(initial)}", state=initial)

    runner.fault(run, "start-partition", {"topology": "hold-b4", "edges": both_ways("b4", "b1"), "add": True})
    answer = expect_effective(runner.admin(run, "reassign", {"topic": MOVE_TOPIC, "targets": {0: [1, 2, 4]}}),
                              "AlterPartitionReassignments [1, 2, 3] -> [1, 2, 4]")
    grown = watch.until("the grow state (adding [4], removing [3])",
                        lambda s, e: s["adding"] == [4] and s["removing"] == [3], 15)
    # Not via b3: a broker cut from the controller answers Metadata from its stale image (seed 003's race).
    view = live.admin_view(cluster, MOVE_TOPIC, via=["b1", "b2"])[0]
    runner.step(run, "grow", f"seed row 2: {observe.describe_assignment(grown)}; admin view {view}",
                state=grown, admin_view=view, answer=answer.get("errors"))

    runner.fault(run, "stop-partition", {"edges": both_ways("b4", "b1")})
    done = watch.until("the completion (replicas [1, 2, 4], nothing pending)",
                       lambda s, e: s["replicas"] == [1, 2, 4] and not s["adding"] and not s["removing"], 30)
    view_after = live.admin_view(cluster, MOVE_TOPIC, via=["b1", "b2"])[0]
    runner.step(run, "complete", f"seed row 5: {observe.describe_assignment(done)}; admin view {view_after}",
                state=done, admin_view=view_after)

    runner.fault(run, "stop-partition", {})
    deleted = watch.until_event("b3 to delete its removed replica (T1)", "log_deleted", 30, after_ns=done["time"],
                                topic=MOVE_TOPIC, partition=0, replica=3)
    runner.step(run, "removed-replica-deleted", f"b3 deleted its log of {MOVE_TOPIC}-0 ({deleted.get('reason')})")


def judge_move_one(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
                   events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of example 1 against the stored trace and history (module docstring)."""
    topic = spec.topic
    states = observe.controller_states(events, topic, 0)
    t_reassign = nemesis_invoke_time(ops, "reassign", None)
    if t_reassign is None:
        return verdict(spec.scenario, spec.variant, EXPECT_MOVE, [check("the reassignment was sent", False,
                       "an AlterPartitionReassignments", "none")], {}, results)
    before = [s for s in states if s["time"] < t_reassign]
    after = [s for s in states if s["time"] >= t_reassign]
    initial = before[-1] if before else None
    grow = first(after, lambda s: s["adding"] == [4])
    done = first(after, lambda s: s["replicas"] == [1, 2, 4] and not s["adding"] and not s["removing"])
    between = [s for s in after if grow and done and grow["time"] <= s["time"] < done["time"] and s is not grow]
    grow_view = next((s.get("admin_view") for s in steps if s["step"] == "grow"), None) or {}
    listed = grow_view.get("listed") or {}
    deleted = observe.replica_events(events, "log_deleted", topic, 0, replica=3,
                                     after=done["time"] if done else None)
    g, i, d = grow or {}, initial or {}, done or {}
    checks = [
        check("seed row 1: replicas [1,2,3], ISR [1,2], leader 1", initial and same_set(i["replicas"], [1, 2, 3])
              and same_set(i["isr"], [1, 2]) and i["leader"] == 1, "RS {1,2,3} ISR {1,2} leader 1",
              observe.describe_assignment(initial), "C6"),
        check("seed row 2: grow to [1,2,3,4], adding [4], removing [3]", grow and same_set(g["replicas"], [1, 2, 3, 4])
              and g["adding"] == [4] and g["removing"] == [3], "RS {1,2,3,4} AR [4] RR [3]",
              observe.describe_assignment(grow), "C18"),
        check("grow leaves ISR, leader and leader epoch unchanged, PE+1", grow and initial
              and g["isr"] == i["isr"] and g["leader"] == i["leader"] and g["leader_epoch"] == i["leader_epoch"]
              and g["partition_epoch"] == i["partition_epoch"] + 1,
              f"ISR {i.get('isr')} leader {i.get('leader')} LE {i.get('leader_epoch')} PE "
              f"{(i.get('partition_epoch') or 0) + 1}", observe.describe_assignment(grow), "C18"),
        check("admin clients see the move in progress", listed.get("adding") == [4] and listed.get("removing") == [3]
              and same_set(grow_view.get("metadata_replicas"), [1, 2, 3, 4]),
              "ListPartitionReassignments adding [4] removing [3]; Metadata replicas {1,2,3,4}", grow_view),
        check("seed row 5: complete to [1,2,4] with ISR [1,2,4]", done and same_set(d["isr"], [1, 2, 4]),
              "RS [1,2,4] ISR {1,2,4} AR [] RR []", observe.describe_assignment(done), "C17"),
        check("catch-up and completion are one change: LE+1, PE+1", done and grow and not between
              and d["leader_epoch"] == g["leader_epoch"] + 1 and d["partition_epoch"] == g["partition_epoch"] + 1,
              f"LE {(g.get('leader_epoch') or 0) + 1} PE {(g.get('partition_epoch') or 0) + 1}, nothing between",
              {"completion": observe.describe_assignment(done),
               "between": [observe.describe_assignment(s) for s in between]}, "C19"),
        check("the removed replica deletes its log", bool(deleted), "log_deleted on b3 after the completion",
              [f"b3 at {e['time'] / 1e9:.2f} s ({e.get('reason')})" for e in deleted[:1]], "T1"),
        no_acked_loss(ops),
    ]
    facts = {"controller states from the initial one on": [observe.describe_assignment(s) for s in states
                                                           if initial is None or s["time"] >= initial["time"]],
             "admin view during the grow phase": grow_view}
    return verdict(spec.scenario, spec.variant, EXPECT_MOVE, checks, facts, results)


EXPECT_MOVE = ("the move grows to {1,2,3,4} (adding [4], removing [3]) and completes to [1,2,4] with ISR {1,2,4} in "
               "the AlterPartition that adds 4 (LE+1, PE+1); the removed replica deletes its log; valid")

# -- example 2 ------------------------------------------------------------------------------------------

RF_TOPIC = "rf5-to-3"
ORIGINAL = [5, 4, 1, 2, 3]
TARGET = [1, 2, 3]


def script_rf5_to_3(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of example 2 (module docstring)."""
    watch = live.PartitionWatch(runner, run, RF_TOPIC)
    placed = watch.until("all five replicas in the ISR under leader 5",
                         lambda s, e: s["isr"] == [1, 2, 3, 4, 5] and s["leader"] == 5, 30)
    runner.step(run, "placed", observe.describe_assignment(placed), state=placed)
    acked = live.produce(runner, run, cluster, [1, 2, 3])
    runner.step(run, "produce", f"acknowledged [offset, value] {acked}", acked=acked)

    cut = [e for b in ("b1", "b2", "b3") for e in live.to_controllers(cluster, b)]
    runner.fault(run, "start-partition", {"topology": "fence-1-2-3", "edges": cut})
    initial = watch.until("brokers 1-3 fenced: ISR [4, 5] under leader 5",
                          lambda s, e: s["isr"] == [4, 5] and s["leader"] == 5, 25)
    runner.step(run, "initial", f"seed row 1: {observe.describe_assignment(initial)}", state=initial)

    answer = expect_effective(runner.admin(run, "reassign", {"topic": RF_TOPIC, "targets": {0: TARGET},
                                                                "via": ["b5"]}),
                              "AlterPartitionReassignments {1..5} -> [1, 2, 3]")
    pending = watch.until("the reassignment to start (removing [4, 5])", lambda s, e: s["removing"] == [4, 5], 15)
    view = live.admin_view(cluster, RF_TOPIC, via=["b5"])[0]
    runner.step(run, "started", f"seed row 2: {observe.describe_assignment(pending)}; admin view {view}",
                state=pending, admin_view=view, answer=answer.get("errors"))

    runner.fault(run, "stop-partition", {"edges": live.to_controllers(cluster, "b1")})
    one = watch.until("broker 1 added to the ISR", lambda s, e: 1 in s["isr"], 25)
    runner.step(run, "catch-up-1", f"seed row 4: {observe.describe_assignment(one)}", state=one)

    runner.fault(run, "stop-partition", {"edges": live.to_controllers(cluster, "b2")})
    done = watch.until("the completion (replicas [1, 2, 3])",
                       lambda s, e: s["replicas"] == [1, 2, 3] and not s["removing"], 25)
    runner.step(run, "complete", f"seed row 6: {observe.describe_assignment(done)}", state=done)

    runner.fault(run, "stop-partition", {})
    for broker in (4, 5):
        watch.until_event(f"b{broker} to delete its removed replica (T1)", "log_deleted", 30, after_ns=done["time"],
                          topic=RF_TOPIC, partition=0, replica=broker)
    full = watch.until("broker 3 back in the ISR", lambda s, e: s["isr"] == [1, 2, 3], 30)
    runner.step(run, "healed", f"b4 and b5 deleted their logs; {observe.describe_assignment(full)}", state=full)


def judge_rf5_to_3(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
                   events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of example 2 against the stored trace and history (module docstring)."""
    topic = spec.topic
    states = observe.controller_states(events, topic, 0)
    t_reassign = nemesis_invoke_time(ops, "reassign", None) or 0
    before = [s for s in states if s["time"] < t_reassign]
    after = [s for s in states if s["time"] >= t_reassign]
    initial = before[-1] if before else None
    started = first(after, lambda s: s["removing"] == [4, 5])
    joined = first(after, lambda s: 1 in s["isr"] and s["removing"])
    done = first(after, lambda s: same_set(s["replicas"], TARGET) and not s["removing"] and not s["adding"])
    pending = [s for s in after if s["removing"] and (done is None or s["time"] < done["time"])]
    last_pending = pending[-1] if pending else None
    i, st, j, d, lp = initial or {}, started or {}, joined or {}, done or {}, last_pending or {}
    started_view = next((s.get("admin_view") for s in steps if s["step"] == "started"), None) or {}
    listed = started_view.get("listed") or {}
    deleted = {b: observe.replica_events(events, "log_deleted", topic, 0, replica=b) for b in (4, 5)}
    checks = [
        check("seed row 1: replicas {1..5}, ISR [4,5], leader 5", initial and same_set(i["replicas"], [1, 2, 3, 4, 5])
              and i["isr"] == [4, 5] and i["leader"] == 5, "RS {1,2,3,4,5} ISR [4,5] leader 5",
              observe.describe_assignment(initial), "C6"),
        check("seed row 2: started, not complete: removing [4,5], adding []", started and st["adding"] == []
              and same_set(st["replicas"], [1, 2, 3, 4, 5]) and st["isr"] == [4, 5] and st["leader"] == 5,
              "RS {1..5} AR [] RR [4,5] ISR [4,5] leader 5", observe.describe_assignment(started), "C17, C18"),
        check("the start leaves LE unchanged, PE+1", started and initial and st["leader_epoch"] == i["leader_epoch"]
              and st["partition_epoch"] == i["partition_epoch"] + 1,
              f"LE {i.get('leader_epoch')} PE {(i.get('partition_epoch') or 0) + 1}", observe.describe_assignment(started),
              "C18"),
        check("admin clients see it pending", listed.get("removing") == [4, 5] and listed.get("adding") == [],
              "ListPartitionReassignments removing [4,5]", started_view),
        check("seed row 4: broker 1 joins, the move stays pending (final ISR {1} < MinISR)", joined
              and same_set(j["isr"], [1, 4, 5]) and j["removing"] == [4, 5] and j["leader"] == 5
              and j["leader_epoch"] == st.get("leader_epoch"), "ISR {1,4,5} RR [4,5] leader 5 LE unchanged",
              observe.describe_assignment(joined), "C17 MinISR"),
        check("no completion while the final ISR is below MinISR", done is not None and all(
              len([r for r in s["isr"] if r not in s["removing"]]) < spec.min_isr for s in pending),
              "every pending state has |ISR \\ removing| < 2",
              [observe.describe_assignment(s) for s in pending], "C17"),
        check("seed row 6: complete to {1,2,3} with ISR {1,2}, leader from the new ISR", done
              and same_set(d["isr"], [1, 2]) and d["leader"] in (1, 2), "RS {1,2,3} ISR {1,2} leader 1 or 2",
              observe.describe_assignment(done), "C17, C18"),
        check("completion moves the leader: LE+1, PE+1", done and last_pending
              and d["leader_epoch"] == lp["leader_epoch"] + 1 and d["partition_epoch"] == lp["partition_epoch"] + 1,
              f"LE {(lp.get('leader_epoch') or 0) + 1} PE {(lp.get('partition_epoch') or 0) + 1}",
              observe.describe_assignment(done), "C2, C19"),
        check("the removed replicas delete their logs", all(deleted.values()), "log_deleted on b4 and b5",
              {f"b{b}": bool(v) for b, v in deleted.items()}, "T1"),
        no_acked_loss(ops),
    ]
    facts = {"controller states from the initial one on": [observe.describe_assignment(s) for s in states
                                                           if initial is None or s["time"] >= initial["time"]],
             "admin view after the start": started_view}
    return verdict(spec.scenario, spec.variant, EXPECT_RF, checks, facts, results)


EXPECT_RF = ("the RF 5 -> 3 move starts (removing [4,5]) but completes only when the final ISR reaches MinISR: "
             "after 1 and 2 joined, to {1,2,3} with ISR {1,2} and a leader from it (LE+1); valid")


SCENARIOS = [
    Scenario(
        name="reassign-move-one",
        summary="move one replica [1,2,3] -> [1,2,4]: grow, catch-up, atomic completion",
        reproduces="seed 000 section 4.4.1 example 1 (moving one replica); catalog 15",
        recipe="RF 3 on 4 brokers; broker 3 fenced (ISR [1,2]); reassign to [1,2,4] with 4 held back, then "
               "released; broker 3 healed",
        variants=("v3.5", "kip966"),
        expected={"v3.5": "valid", "kip966": "valid"},
        spec_options={**COMMON, "test_name": "reassign-move-one", "topic": MOVE_TOPIC, "brokers": 4,
                      "replication_factor": 3},
        script=script_move_one,
        judge=judge_move_one,
        assignment={0: [1, 2, 3]},
        aliases=("seed-000-example-1",),
    ),
    Scenario(
        name="reassign-rf5-to-3",
        summary="RF 5 -> 3 with the ISR inside the removed replicas waits for MinISR before completing",
        reproduces="seed 000 section 4.4.1 example 2 (reducing replication factor); catalog 17",
        recipe="RF 5 placed [5,4,1,2,3]; brokers 1-3 fenced (ISR [4,5], leader 5); reassign to [1,2,3]; "
               "heal 1, then 2, then everything",
        variants=("v3.5", "kip966"),
        expected={"v3.5": "valid", "kip966": "valid"},
        spec_options={**COMMON, "test_name": "reassign-rf5-to-3", "topic": RF_TOPIC, "brokers": 5,
                      "replication_factor": 5},
        script=script_rf5_to_3,
        judge=judge_rf5_to_3,
        assignment={0: list(ORIGINAL)},
        aliases=("seed-000-example-2",),
    ),
]
