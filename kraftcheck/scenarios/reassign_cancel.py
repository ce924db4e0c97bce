"""Seed 000 section 4.5, cancelling a reassignment: the revert, and the refusal when a revert would need an
unclean election (``reassign-cancel``).

Six brokers, topic with partition 0 on [1, 2, 3] and partition 1 on [4, 5, 6], MinISR 2, unclean election
disabled (the common case the seed names).

**Revert** (partition 0): broker 4 is held back from the leader, so the move [1, 2, 3] -> [1, 2, 4] stays
in its grow state (adding [4], removing [3]). Cancelling it (AlterPartitionReassignments with null
replicas) reverts in one change (C21): replicas [1, 2, 3] again, adding and removing cleared, the ISR
without the adding replicas (here unchanged: 4 never joined), PE+1. Broker 4 deletes the replica it had
started (T1).

**Refusal** (partition 1): broker 3 is cut from every other broker, so the move [4, 5, 6] -> [1, 2, 3]
cannot complete; brokers 1 and 2 catch up and join the ISR. Then brokers 4, 5 and 6 are cut from the
controller and fenced (C6): the ISR is {1, 2}, led by 1 or 2, and holds none of the original replicas. A
cancel would revert to [4, 5, 6] with an ISR of no original replica, which only an unclean election could
lead (C21: too few originals in the ISR, v3.5: none, KIP-966: fewer than MinISR; both hold here), so the
controller refuses it with INVALID_REPLICA_ASSIGNMENT and commits nothing. After the heal the move
completes to [1, 2, 3].

Both variants expect the same; both runs must be valid.
"""

from __future__ import annotations

from typing import Any

from harness.spec import RunSpec
from kraftcheck.scenarios import live, observe
from kraftcheck.scenarios.base import COMMON, Scenario
from kraftcheck.scenarios.checks import check, first, no_acked_loss, same_set, verdict
from kraftcheck.scenarios.live import both_ways, expect_effective

TOPIC = "cancel"
REFUSED = "InvalidReplicationAssignmentError"  # kafka-python's name for INVALID_REPLICA_ASSIGNMENT


def script(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of the module docstring."""
    p0, p1 = live.PartitionWatch(runner, run, TOPIC, 0), live.PartitionWatch(runner, run, TOPIC, 1)
    p0.until("partition 0: ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == [1, 2, 3] and s["leader"] == 1, 30)
    p1.until("partition 1: ISR [4, 5, 6] under leader 4", lambda s, e: s["isr"] == [4, 5, 6] and s["leader"] == 4, 30)
    acked = live.produce(runner, run, cluster, [1, 2, 3], partition=0) + \
        live.produce(runner, run, cluster, [4, 5, 6], partition=1)
    runner.step(run, "produce", f"acknowledged [offset, value] {acked}", acked=acked)

    # -- revert ------------------------------------------------------------------------------------
    runner.fault(run, "start-partition", {"topology": "hold-b4", "edges": both_ways("b4", "b1")})
    expect_effective(runner.admin(run, "reassign", {"topic": TOPIC, "targets": {0: [1, 2, 4]}}),
                     "AlterPartitionReassignments partition 0 -> [1, 2, 4]")
    grown = p0.until("partition 0 in its grow state (adding [4])", lambda s, e: s["adding"] == [4], 15)
    runner.step(run, "p0-grow", observe.describe_assignment(grown), state=grown)
    cancel = expect_effective(runner.admin(run, "cancel-reassignment", {"topic": TOPIC, "partition": 0}),
                              "cancel of partition 0's move")
    reverted = p0.until("partition 0 reverted", lambda s, e: not s["adding"] and not s["removing"], 15)
    runner.step(run, "p0-reverted", f"cancel answered {cancel.get('error')}; {observe.describe_assignment(reverted)}",
                state=reverted, answer=cancel.get("error"), admin_view=live.admin_view(cluster, TOPIC)[0])
    runner.fault(run, "stop-partition", {})
    p0.until_event("b4 to delete the replica the revert removed (T1)", "log_deleted", 30,
                   after_ns=reverted["time"], topic=TOPIC, partition=0, replica=4)
    runner.step(run, "p0-adding-replica-deleted", "b4 deleted its log of partition 0")

    # -- refusal -----------------------------------------------------------------------------------
    hold3 = [e for b in ("b1", "b2", "b4", "b5", "b6") for e in both_ways("b3", b)]
    runner.fault(run, "start-partition", {"topology": "hold-b3", "edges": hold3})
    expect_effective(runner.admin(run, "reassign", {"topic": TOPIC, "targets": {1: [1, 2, 3]}}),
                     "AlterPartitionReassignments partition 1 -> [1, 2, 3]")
    joined = p1.until("brokers 1 and 2 to join partition 1's ISR (3 held back)",
                      lambda s, e: s["adding"] == [1, 2, 3] and {1, 2} <= set(s["isr"]), 30)
    runner.step(run, "p1-catch-up", observe.describe_assignment(joined), state=joined)
    fence = [e for b in ("b4", "b5", "b6") for e in live.to_controllers(cluster, b)]
    runner.fault(run, "start-partition", {"topology": "fence-4-5-6", "edges": fence, "add": True})
    no_original = p1.until("brokers 4-6 fenced: partition 1's ISR holds no original replica",
                           lambda s, e: not set(s["isr"]) & {4, 5, 6} and s["leader"] in (1, 2), 25)
    runner.step(run, "p1-originals-fenced", observe.describe_assignment(no_original), state=no_original)
    refused = runner.admin(run, "cancel-reassignment", {"topic": TOPIC, "partition": 1, "expect": REFUSED,
                                                        "via": ["b1", "b2"]})["value"]
    after = p1.state()
    runner.step(run, "p1-cancel-refused", f"cancel answered {refused.get('error')}; still "
                f"{observe.describe_assignment(after)}", answer=refused.get("error"), state=after,
                cancel_time_ns=live.now_ns())

    runner.fault(run, "stop-partition", {})
    done = p1.until("partition 1's move to complete after the heal",
                    lambda s, e: s["replicas"] == [1, 2, 3] and not s["adding"] and not s["removing"], 40)
    runner.step(run, "p1-complete", observe.describe_assignment(done), state=done)


def judge(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
          events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of the module docstring against the stored trace and history."""
    topic = spec.topic
    st = {s["step"]: s for s in steps}
    s0 = observe.controller_states(events, topic, 0)
    s1 = observe.controller_states(events, topic, 1)
    cancels = [op for op in ops if op.get("process") == "nemesis" and op.get("f") == "cancel-reassignment"
               and op.get("type") == "ok"]
    answers = {(op.get("value") or {}).get("partition"): (op.get("value") or {}).get("error") for op in cancels}
    grow_t = (st.get("p0-grow") or {}).get("time")
    grow = first(s0, lambda s: s["adding"] == [4] and (grow_t is None or s["time"] <= grow_t))
    reverted = first(s0, lambda s: grow is not None and s["time"] > grow["time"] and not s["adding"])
    g, r = grow or {}, reverted or {}
    deleted4 = observe.replica_events(events, "log_deleted", topic, 0, replica=4)
    view = (st.get("p0-reverted") or {}).get("admin_view") or {}

    fenced_t = (st.get("p1-originals-fenced") or {}).get("time")
    refused_t = (st.get("p1-cancel-refused") or {}).get("time")
    before_cancel = [s for s in s1 if fenced_t is not None and s["time"] <= fenced_t]
    pre = before_cancel[-1] if before_cancel else None
    changed = [s for s in s1 if pre is not None and refused_t is not None and pre["time"] < s["time"] <= refused_t]
    done = first(s1, lambda s: s["replicas"] == [1, 2, 3] and not s["adding"] and not s["removing"])
    p = pre or {}
    checks = [
        check("partition 0 grows: adding [4], removing [3]", grow and same_set(g["replicas"], [1, 2, 3, 4])
              and g["removing"] == [3], "RS {1,2,3,4} AR [4] RR [3]", observe.describe_assignment(grow), "C18"),
        check("the cancel is accepted", 0 in answers and answers[0] is None, "no error", answers.get(0), "C21"),
        check("the revert restores [1,2,3] and clears adding/removing", reverted
              and r["replica_order"] == [1, 2, 3] and r["isr"] == [1, 2, 3] and r["leader"] == 1,
              "RS [1,2,3] AR [] RR [] ISR {1,2,3} leader 1", observe.describe_assignment(reverted), "C21"),
        check("the revert is one change (PE+1)", reverted and grow and r["partition_epoch"] == g["partition_epoch"] + 1,
              f"PE {(g.get('partition_epoch') or 0) + 1}", observe.describe_assignment(reverted), "C2"),
        check("admin clients see no reassignment after the cancel", view and view.get("listed") is None
              and view.get("metadata_replicas") == [1, 2, 3], "ListPartitionReassignments empty, replicas [1,2,3]",
              view),
        check("the replica the revert removed is deleted", bool(deleted4), "log_deleted on b4 for partition 0",
              bool(deleted4), "T1"),
        check("partition 1: the ISR holds no original replica before the cancel", pre and not set(p["isr"]) & {4, 5, 6}
              and p["adding"] == [1, 2, 3], "ISR within {1,2}, adding [1,2,3]", observe.describe_assignment(pre),
              "C21"),
        check("the cancel that would need an unclean election is refused", answers.get(1) == REFUSED,
              REFUSED, answers.get(1), "C21"),
        check("the refused cancel commits nothing", pre is not None and not changed, "no partition change",
              [observe.describe_assignment(s) for s in changed], "C21"),
        check("after the heal the move completes to [1,2,3]", done is not None, "RS [1,2,3] AR [] RR []",
              observe.describe_assignment(done), "C17"),
        no_acked_loss(ops, 0),
        no_acked_loss(ops, 1),
    ]
    facts = {"partition 0 states": [observe.describe_assignment(s) for s in s0],
             "partition 1 states": [observe.describe_assignment(s) for s in s1],
             "cancel answers by partition": answers}
    return verdict(spec.scenario, spec.variant, EXPECTATION, checks, facts, results)


EXPECTATION = ("a cancel reverts partition 0's move to [1,2,3] in one change; partition 1's cancel, whose revert "
               "would need an unclean election (no original replica in the ISR), is refused with "
               "INVALID_REPLICA_ASSIGNMENT and changes nothing; valid")

SCENARIOS = [Scenario(
    name="reassign-cancel",
    summary="cancel reverts a pending move; refused when the revert would need an unclean election",
    reproduces="seed 000 section 4.5 (canceling a reassignment); PROTOCOL.md C21",
    recipe="6 brokers; p0 [1,2,3] -> [1,2,4] held back, cancelled; p1 [4,5,6] -> [1,2,3] with 3 held back, "
           "4-6 fenced, cancelled",
    variants=("v3.5", "kip966"),
    expected={"v3.5": "valid", "kip966": "valid"},
    spec_options={**COMMON, "test_name": "reassign-cancel", "topic": TOPIC, "keys": 2, "brokers": 6,
                  "replication_factor": 3},
    script=script,
    judge=judge,
    assignment={0: [1, 2, 3], 1: [4, 5, 6]},
)]
