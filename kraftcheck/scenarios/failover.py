"""Clean failover with divergence and truncation (PROTOCOL.md section 6, catalog 5; seed 004's replication
algorithm and its log divergence section) - ``clean-failover``.

Three brokers, leader 1, MinISR 2. A is produced with acks=all and committed on all three. Leader 1 is
then cut from its followers, and B is sent to it once (no retries): 1 appends B (LEO 2) but nobody
fetches it, so B stays uncommitted. 1 is also cut from the controller, which fences it and elects 2 or 3
from the ISR (C6, C11; LE+1). On the heal, 1 learns it is a follower in the new epoch (T5), nacks B (L5),
fetches with its last epoch, is told where the logs diverge (L9) and truncates B away (F3: LEO 2 -> 1);
once caught up the new leader adds it back to the ISR (L15). Every log is [A]; the final read sees A and
not B, and B was never acknowledged.

Both variants expect the same; both runs must be valid.
"""

from __future__ import annotations

import threading
from typing import Any

from harness.spec import RunSpec
from kraftcheck.scenarios import live, observe
from kraftcheck.scenarios.base import COMMON, Scenario
from kraftcheck.scenarios.checks import check, final_read_values, first, no_acked_loss, verdict
from kraftcheck.scenarios.live import both_ways

TOPIC = "failover"
A, B = 101, 102


def script(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of the module docstring."""
    watch = live.PartitionWatch(runner, run, TOPIC)
    watch.until("ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == [1, 2, 3] and s["leader"] == 1, 30)
    acked = live.produce(runner, run, cluster, [A])
    runner.wait_for(run, "the followers to learn A is committed", lambda: (
        all(observe.replica_events(runner.traces(), "hwm", TOPIC, 0, replica=r) and
            observe.replica_events(runner.traces(), "hwm", TOPIC, 0, replica=r)[-1]["hwm"] >= 1 for r in (1, 2, 3)),
        None), 15)
    runner.step(run, "A-committed", f"A acknowledged at {acked[0]} and replicated to 1, 2, 3", acked=acked)

    cut_at = live.now_ns()
    runner.fault(run, "start-partition", {"topology": "leader-from-followers",
                                          "edges": both_ways("b1", "b2") + both_ways("b1", "b3")})
    producer = live.SingleShotProducer(cluster, TOPIC, acks="all", timeout_s=30.0)
    outcome: dict[str, Any] = {}
    sender = threading.Thread(target=lambda: outcome.update(
        runner.client_op(run, producer, 1, {"f": "send", "value": [0, B]}, "b1")), name="kraftcheck-send-b")
    sender.start()
    watch.until_event("B appended at leader 1 only (LEO 2)", "leo", 15, after_ns=cut_at, topic=TOPIC, partition=0,
                      replica=1, leo=2)
    runner.step(run, "B-appended", "leader 1 appended B (LEO 2); its followers cannot fetch it")

    runner.fault(run, "start-partition", {"topology": "leader-from-controller", "edges": live.to_controllers(cluster, "b1"),
                                          "add": True})
    elected = watch.until("the controller to fence 1 and elect 2 or 3",
                          lambda s, e: s["leader"] in (2, 3) and 1 not in s["isr"], 20)
    runner.step(run, "failover", f"controller: {observe.describe_state(elected)}", state=elected)

    healed_at = live.now_ns()
    runner.fault(run, "stop-partition", {})
    cut = watch.until_event("broker 1 to truncate B (F3)", "truncate", 30, after_ns=healed_at, topic=TOPIC,
                            partition=0, replica=1)
    back = watch.until("broker 1 back in the ISR", lambda s, e: s["isr"] == [1, 2, 3], 30)
    sender.join(40)
    producer.close()
    runner.step(run, "rejoined", f"b1 truncated LEO {cut.get('from_leo')} -> {cut.get('to_offset')}; B answered "
                f"{outcome.get('type')} {outcome.get('kafka_error')}; {observe.describe_state(back)}",
                b_outcome={k: outcome.get(k) for k in ("type", "kafka_error", "error")}, state=back)


def judge(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
          events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of the module docstring against the stored history and trace."""
    topic = spec.topic
    st = {s["step"]: s for s in steps}
    appended_t = (st.get("B-appended") or {}).get("time")
    failover_t = (st.get("failover") or {}).get("time")
    states = observe.controller_states(events, topic, 0)
    before = [s for s in states if appended_t is not None and s["time"] <= appended_t]
    old = before[-1] if before else {}
    elections = observe.elections(events, topic, 0, after=appended_t)
    won = elections[0] if elections else {}
    leo_b1 = [e["leo"] for e in observe.replica_events(events, "leo", topic, 0, replica=1, before=failover_t)]
    leo_followers = [e["leo"] for r in (2, 3) for e in observe.replica_events(events, "leo", topic, 0, replica=r)
                     if failover_t is None or e["time"] <= failover_t]
    truncations = observe.truncations(events, topic, 0, after=failover_t)
    b1_cut = [t for t in truncations if t["replica"] == 1]
    rejoined = first([s for s in states if failover_t is not None and s["time"] > failover_t],
                     lambda s: s["isr"] == [1, 2, 3])
    b_ops = [op for op in ops if op.get("f") == "send" and op.get("type") != "invoke"
             and (op.get("value") or [None, [None, None]])[1][1] == B]
    _, read = final_read_values(ops)
    checks = [
        check("B reaches the leader's log only", 2 in leo_b1 and all(x <= 1 for x in leo_followers),
              "b1 LEO 2, followers LEO <= 1", {"b1": leo_b1, "followers": leo_followers}, "L2"),
        check("fencing the leader elects another ISR member", won.get("leader") in (2, 3) and won.get("type") == "clean"
              and won.get("leader_epoch") == (old.get("leader_epoch") or 0) + 1,
              f"leader 2 or 3, clean, LE {(old.get('leader_epoch') or 0) + 1}", won, "C6, C11"),
        check("B is never acknowledged", b_ops and all(op["type"] != "ok" for op in b_ops), "no ok completion",
              [(op["type"], op.get("kafka_error")) for op in b_ops], "L5"),
        check("the old leader truncates B after the heal", any(t["from_leo"] == 2 and t["to_offset"] == 1 for t in b1_cut),
              "b1: LEO 2 -> 1", [f"b{t['replica']}: {t['from_leo']} -> {t['to_offset']}" for t in truncations], "F3, L9"),
        check("the old leader is added back once caught up", rejoined is not None and rejoined["leader"] != 1,
              "ISR {1,2,3} under the new leader", observe.describe_state(rejoined), "L15"),
        check("every log is [A]: the final read holds A at offset 0 and not B", read.get(0) == A
              and B not in read.values(), {0: A}, read, "I4"),
        no_acked_loss(ops),
    ]
    facts = {"controller states": [observe.describe_state(s) for s in states], "elections": elections,
             "truncations": truncations}
    return verdict(spec.scenario, spec.variant, EXPECTATION, checks, facts, results)


EXPECTATION = ("A committed, B only on leader 1; fencing 1 elects 2 or 3 (LE+1); B is never acknowledged, 1 "
               "truncates it on rejoining and is re-added to the ISR; every log is [A]; valid")

SCENARIOS = [Scenario(
    name="clean-failover",
    summary="clean failover: the old leader's uncommitted suffix is truncated away on rejoining",
    reproduces="PROTOCOL.md catalog 5 (clean failover); seed 004 replication algorithm, log divergence",
    recipe="3 brokers; A committed; leader cut from followers, B sent once; leader cut from the controller "
           "(fenced, re-election); heal",
    variants=("v3.5", "kip966"),
    expected={"v3.5": "valid", "kip966": "valid"},
    spec_options={**COMMON, "test_name": "clean-failover", "topic": TOPIC, "brokers": 3, "replication_factor": 3,
                  "nemesis": ["partition"]},
    script=script,
    judge=judge,
    assignment={0: [1, 2, 3]},
    aliases=("catalog-5",),
)]
