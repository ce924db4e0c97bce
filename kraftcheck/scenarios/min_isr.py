"""MinISR gating on a live cluster: the after-append case on v3.5 against KIP-966, then NotEnoughReplicas
(PROTOCOL.md catalog 2, 3 and 4, 13) - ``min-isr``.

Three brokers, leader 1, MinISR 2. A is produced and committed. Both followers are then cut from the leader
and from the controller, and C is sent once with acks=all: the leader still has a full ISR, so it appends
C (L1) and waits for the followers, which never fetch it. The controller fences both followers (C6): ISR
{1}.

- **v3.5 (catalog 3):** the ISR shrink lets the leader commit alone (no L4 gate): the HWM passes C at
  once and C is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND (L5) - nacked, yet committed and readable (L6).
- **KIP-966 (catalog 4):** the follower fenced last goes to the ELR (K2) and the HWM stays frozen while
  the ISR is below MinISR (L4): C is not acknowledged while the ISR is {1}.

Then, still with ISR {1} (catalog 2): D with acks=all is refused at once with NOT_ENOUGH_REPLICAS and
nothing is appended (L1). Healing unfences both followers with the broker epochs they had (C5, C7;
catalog 13) and the leader adds them back once they fetched (L15); under KIP-966 the ELR empties (K1) and
the HWM resumes. The final read holds A and C, never D.

Not covered: catalog 2's acks=1 write under ISR {1}. The history records no acks per send (the checkers
take it from the spec), so an acks=1 record in an acks=all run would be judged by acks=all's rule (I14).

Both variants expect a valid run: a nacked record that is committed anyway is not a violation (L6).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from harness.spec import RunSpec
from kraftcheck.scenarios import live, observe
from kraftcheck.scenarios.base import COMMON, Scenario
from kraftcheck.scenarios.checks import Check, check, final_read_values, first, no_acked_loss, verdict
from kraftcheck.scenarios.live import both_ways

TOPIC = "min-isr"
A, C, D = 201, 202, 203
DATA_CUT = both_ways("b1", "b2") + both_ways("b1", "b3")


def script(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of the module docstring."""
    variant = runner.spec.variant
    watch = live.PartitionWatch(runner, run, TOPIC)
    watch.until("ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == [1, 2, 3] and s["leader"] == 1, 30)
    acked = live.produce(runner, run, cluster, [A])
    runner.step(run, "A-committed", f"A acknowledged at {acked[0]}", acked=acked)

    cut_at = live.now_ns()
    runner.fault(run, "start-partition", {"topology": "followers-from-leader", "edges": DATA_CUT})
    strict = live.SingleShotProducer(cluster, TOPIC, acks="all", timeout_s=30.0)
    outcome: dict[str, Any] = {}
    sender = threading.Thread(target=lambda: outcome.update(
        runner.client_op(run, strict, 1, {"f": "send", "value": [0, C]}, "b1")), name="kraftcheck-send-c")
    sender.start()
    watch.until_event("C appended at the leader (LEO 2)", "leo", 15, after_ns=cut_at, topic=TOPIC, partition=0,
                      replica=1, leo=2)
    runner.step(run, "C-appended", "leader 1 appended C with a full ISR; the followers cannot fetch it")
    runner.fault(run, "start-partition", {"topology": "followers-from-controller", "edges": live.to_controllers(cluster, "b2") + live.to_controllers(cluster, "b3"), "add": True})
    alone = watch.until("both followers fenced: ISR [1]", lambda s, e: s["isr"] == [1], 20)
    runner.step(run, "isr-1", f"controller: {observe.describe_state(alone)}", state=alone)
    if variant == "v3.5":
        sender.join(20)
        runner.step(run, "C-answered", f"C answered {outcome.get('type')} {outcome.get('kafka_error')}",
                    c_outcome={k: outcome.get(k) for k in ("type", "kafka_error")})
    else:
        time.sleep(2.0)  # time for a wrong HWM advance or acknowledgement to show (there must be none)
        runner.step(run, "C-pending", f"C still pending: {not outcome}", pending=not outcome)

    refused = live.SingleShotProducer(cluster, TOPIC, acks="all", timeout_s=10.0)  # C's request is in flight
    d = runner.client_op(run, refused, 2, {"f": "send", "value": [0, D]}, "b1")
    refused.close()
    checked_at = live.now_ns()
    time.sleep(1.0)  # an append of D, had there been one, reaches the trace
    runner.step(run, "not-enough-replicas", f"D (acks=all): {d['type']} {d.get('kafka_error')}",
                d=d.get("kafka_error"), checked_at=runner.history_time(checked_at))

    runner.fault(run, "stop-partition", {})
    back = watch.until("both followers back in the ISR", lambda s, e: s["isr"] == [1, 2, 3], 30)
    sender.join(40)
    strict.close()
    runner.step(run, "healed", f"controller: {observe.describe_state(back)}; C answered {outcome.get('type')} "
                f"{outcome.get('kafka_error')}", state=back, c_outcome={k: outcome.get(k) for k in ("type", "kafka_error")})


def _completion(ops: list[dict[str, Any]], value: int) -> dict[str, Any]:
    return next((op for op in ops if op.get("f") == "send" and op.get("type") != "invoke"
                 and op["value"][1][1] == value), {})


def _invocation(ops: list[dict[str, Any]], value: int) -> dict[str, Any]:
    return next((op for op in ops if op.get("f") == "send" and op.get("type") == "invoke" and op["value"][1] == value),
                {})


def judge(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
          events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of the module docstring (common and per variant)."""
    topic, variant = spec.topic, spec.variant
    st = {s["step"]: s for s in steps}
    isr1_t = (st.get("isr-1") or {}).get("time")
    heal_t = next((op["time"] for op in ops if op.get("f") == "stop-partition" and op.get("type") == "invoke"), None)
    states = observe.controller_states(events, topic, 0)
    alone = first(states, lambda s: s["isr"] == [1])
    recovered = first([s for s in states if heal_t is not None and s["time"] >= heal_t], lambda s: len(s["isr"]) >= 2)
    hwm_b1 = observe.replica_events(events, "hwm", topic, 0, replica=1)
    hwm_alone = [h["hwm"] for h in hwm_b1 if isr1_t is not None and heal_t is not None
                 and alone is not None and alone["time"] <= h["time"] < heal_t]
    c, d = _completion(ops, C), _completion(ops, D)
    d_inv = _invocation(ops, D)
    leo_during_d = [ev["leo"] for ev in observe.replica_events(events, "leo", topic, 0, replica=1,
                                                               after=d_inv.get("time"), before=heal_t)]
    _, read = final_read_values(ops)
    epochs = {b: observe.broker_epochs(events, b) for b in (2, 3)}
    unfenced = {b: [ev["broker_epoch"] for ev in observe.events_of(events, "unfenced", source="controller", broker=b,
                                                                    after=heal_t)] for b in (2, 3)}
    checks: list[Check] = [
        check("both followers fenced: ISR [1]", alone is not None, "ISR [1]", observe.describe_state(alone), "C6"),
        check("D (acks=all, ISR below MinISR) is refused at once", d.get("kafka_error") == "NotEnoughReplicasError"
              and d.get("time", 0) - d_inv.get("time", 0) < 2e9, "NotEnoughReplicasError within 2 s",
              {"answer": d.get("kafka_error"), "after_s": (d.get("time", 0) - d_inv.get("time", 0)) / 1e9}, "L1"),
        check("D appends nothing", d_inv and not leo_during_d, "no LEO change at the leader until the heal",
              leo_during_d, "L1"),
        check("the followers are unfenced with the broker epochs they had", all(
              unfenced[b] and unfenced[b][0] == epochs[b][-1] and len(epochs[b]) == 1 for b in (2, 3)),
              "no new registration; unfence keeps the epoch", {"registered": epochs, "unfenced": unfenced}, "C5, C7"),
        check("the leader adds them back after the heal", recovered is not None, "ISR back to >= 2",
              observe.describe_state(recovered), "L15"),
        check("the final read holds A and C, never D", [read.get(i) for i in range(2)] == [A, C]
              and D not in read.values(), [A, C], read, "L6"),
        no_acked_loss(ops),
    ]
    if variant == "v3.5":
        checks += [
            check("C is nacked NOT_ENOUGH_REPLICAS_AFTER_APPEND", c.get("kafka_error") == "NotEnoughReplicasAfterAppendError"
                  and (heal_t is None or c.get("time", 0) < heal_t), "NotEnoughReplicasAfterAppendError before the heal",
                  c.get("kafka_error"), "L5"),
            check("the leader commits alone with ISR {1}: the HWM passes C", any(h >= 2 for h in hwm_alone),
                  "HWM >= 2 while ISR = {1}", hwm_alone, "L3 (no L4 in v3.5)"),
        ]
    else:
        checks += [
            check("the follower fenced last waits in the ELR", alone is not None and len(alone["elr"]) == 1,
                  "ELR of one follower", observe.describe_state(alone), "K2"),
            check("the HWM is frozen while the ISR is below MinISR", hwm_alone and max(hwm_alone) <= 1
                  or not hwm_alone, "no HWM advance past A", hwm_alone, "L4"),
            check("C is not acknowledged while the ISR is {1}", c.get("type") != "ok" or (recovered is not None
                  and c.get("time", 0) >= recovered["time"]), "no ok before the ISR recovered",
                  {"answer": c.get("type"), "error": c.get("kafka_error")}, "L4, L5"),
            check("after the heal the ELR is empty", recovered is not None and not recovered["elr"],
                  "ELR []", observe.describe_state(recovered), "K1, K2"),
        ]
    facts = {"controller states": [observe.describe_state(s) for s in states],
             "leader HWM while ISR = {1}": hwm_alone,
             "answers": {"C": c.get("kafka_error") or c.get("type"), "D": d.get("kafka_error")}}
    return verdict(spec.scenario, variant, EXPECTATIONS[variant], checks, facts, results)


EXPECTATIONS = {
    "v3.5": ("with ISR {1} the leader commits C alone and nacks it AFTER_APPEND (readable anyway); D with acks=all "
             "is refused NOT_ENOUGH_REPLICAS at once and not appended; valid"),
    "kip966": ("with ISR {1} (ELR one follower) the HWM stays frozen and C is not acknowledged until the ISR "
               "recovers; D is refused NOT_ENOUGH_REPLICAS at once and not appended; valid"),
}

SCENARIOS = [Scenario(
    name="min-isr",
    summary="after-append nack on v3.5 vs a frozen HWM on KIP-966; NotEnoughReplicas with ISR below MinISR",
    reproduces="PROTOCOL.md catalog 2 (NotEnoughReplicas), 3 and 4 (after-append v3.5 / KIP-966), 13 "
               "(fence/unfence); seed 004 replication algorithm",
    recipe="3 brokers; A committed; followers cut from leader and controller, C sent (acks=all); ISR {1}; D "
           "(acks=all); heal",
    variants=("v3.5", "kip966"),
    expected={"v3.5": "valid", "kip966": "valid"},
    spec_options={**COMMON, "test_name": "min-isr", "topic": TOPIC, "brokers": 3, "replication_factor": 3,
                  "nemesis": ["partition"]},
    script=script,
    judge=judge,
    assignment={0: [1, 2, 3]},
    aliases=("not-enough-replicas", "after-append"),
)]
