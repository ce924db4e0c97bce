"""A fenced broker in a proposed ISR is refused (PROTOCOL.md catalog 11, C14; catalog 13) -
``fenced-isr-proposal``.

A leader only proposes brokers its own metadata shows unfenced (Kafka's KIP-841 check, which the
reference follows), so the controller's C14 refusal is reached when the leader's metadata lags behind
the controller's. The script makes it lag on purpose:

1. three brokers, leader 1, replica lag 2 s, broker session 10 s. Broker 3 is cut from the leader: it
   stops fetching and the leader shrinks it out of the ISR with an AlterPartition (ISR {1, 2});
2. broker 3 is cut from the controller too, so the controller will fence it when its session expires;
3. shortly before that, broker 1's requests to the controller are dropped: its metadata pulls go
   unanswered (its view stops there) and whatever it sends waits in TCP's retransmission queue;
4. the controller fences broker 3 (C6); broker 1 does not learn it;
5. broker 3 may fetch from the leader again: it catches up and the leader, whose metadata still shows it
   unfenced, proposes ISR {1, 2, 3};
6. broker 1's link to the controller is restored (well within its own session): the proposal arrives
   while broker 3 is still fenced and the controller refuses it, INELIGIBLE_REPLICA (C14), committing
   nothing;
7. everything heals: broker 3 heartbeats again and is unfenced with the broker epoch it had (C5, C7), the
   leader learns it and adds it back (L15).

(On the local backend a cut edge stops connections the sender opens to the receiver; answers on a
connection the receiver opened travel to 127.0.0.1 and cannot be told apart per node, so freezing a
broker's view means holding its requests, not dropping the controller's answers.)

Both variants expect the same; both runs must be valid.
"""

from __future__ import annotations

import time
from typing import Any

from harness.spec import RunSpec
from kraftcheck.scenarios import live, observe
from kraftcheck.scenarios.base import COMMON, Scenario
from kraftcheck.scenarios.checks import check, first, no_acked_loss, verdict
from kraftcheck.scenarios.live import both_ways

TOPIC = "fenced-proposal"
SESSION_MS = 10_000


def script(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of the module docstring."""
    watch = live.PartitionWatch(runner, run, TOPIC)
    _, shrunk = live.b3_out_of_isr_after_writes(runner, run, cluster, watch)
    runner.step(run, "shrunk", f"controller: {observe.describe_state(shrunk)}", state=shrunk)

    isolated_at = time.monotonic()
    runner.fault(run, "start-partition", {"topology": "b3-from-controller", "edges": live.to_controllers(cluster, "b3"),
                                          "add": True})
    # Freeze broker 1's view a few seconds before broker 3's session expires (step 3).
    time.sleep(max(0.0, isolated_at + SESSION_MS / 1000 - 3.0 - time.monotonic()))
    runner.fault(run, "start-partition", {"topology": "hold-b1-requests", "edges": live.from_controllers_oneway(cluster, "b1"),
                                          "add": True})
    runner.step(run, "b1-frozen", "b1 -> controller dropped: broker 1's metadata stops at this point")
    fence = watch.until_event("the controller to fence broker 3 (C6)", "fenced", SESSION_MS / 1000 + 10,
                              source="controller", broker=3)
    runner.step(run, "b3-fenced", f"controller fenced broker 3 (epoch {fence.get('broker_epoch')})")

    runner.fault(run, "stop-partition", {"edges": both_ways("b1", "b3")})
    proposal = watch.until_event("the leader to propose broker 3 again (L15)", "isr_proposed", 15,
                                 after_ns=fence["time"], topic=TOPIC, partition=0, replica=1)
    runner.step(run, "proposed", f"leader 1 proposes {proposal.get('proposed')} (its view: 3 unfenced)")
    runner.fault(run, "stop-partition", {"edges": live.from_controllers_oneway(cluster, "b1")})
    refusal = watch.until_event("the controller to refuse the leader's proposal (C14)", "alter_partition_rejected",
                                20, after_ns=fence["time"], source="controller", topic=TOPIC, partition=0)
    runner.step(run, "refused", f"AlterPartition {refusal.get('proposed')} refused {refusal.get('error')}: "
                f"{refusal.get('message')}", refusal={k: refusal.get(k) for k in ("error", "message", "proposed")})

    runner.fault(run, "stop-partition", {})
    back = watch.until("broker 3 back in the ISR", lambda s, e: s["isr"] == [1, 2, 3], 30)
    runner.step(run, "rejoined", f"controller: {observe.describe_state(back)}", state=back)


def judge(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
          events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of the module docstring against the stored trace and history."""
    topic = spec.topic
    fences = observe.events_of(events, "fenced", source="controller", broker=3)
    fence_t = fences[0]["time"] if fences else None
    refusals = observe.ap_refusals(events, topic, 0, after=fence_t)
    refusal = refusals[0] if refusals else {}
    proposals = [e for e in observe.replica_events(events, "isr_proposed", topic, 0, replica=1, after=fence_t)
                 if 3 in (e.get("proposed") or [])]
    refused_t = refusal.get("time")
    # The leader's view when it made the proposal the controller refused (its held metadata pull may be
    # answered before the held proposal is: they travel on different connections).
    sent = [e for e in proposals if refused_t is None or e["time"] <= refused_t]
    proposed_t = sent[-1]["time"] if sent else refused_t
    b1_view = [e for e in observe.events_of(events, "broker_metadata", node_name="b1", broker=3, before=proposed_t)]
    states = observe.controller_states(events, topic, 0)
    shrunk = first(states, lambda s: s["isr"] == [1, 2])
    unfences = observe.events_of(events, "unfenced", source="controller", broker=3, after=fence_t)
    epochs = observe.broker_epochs(events, 3)
    leaked = [s for s in states if fence_t is not None and fence_t <= s["time"]
              and (refused_t is None or s["time"] <= refused_t) and 3 in s["isr"]]
    back = first([s for s in states if refused_t is not None and s["time"] > refused_t], lambda s: 3 in s["isr"])
    checks = [
        check("the leader shrinks the lagging broker 3 out of the ISR", shrunk is not None
              and (fence_t is None or shrunk["time"] < fence_t), "ISR [1,2] before 3 is fenced",
              observe.describe_state(shrunk), "L14"),
        check("the controller fences broker 3", fence_t is not None, "a fenced event for broker 3",
              [f"epoch {f.get('broker_epoch')}" for f in fences], "C6"),
        check("the leader's metadata still shows broker 3 unfenced", bool(b1_view) and b1_view[-1].get("fenced") is False,
              "b1's last view of broker 3 when it proposed: unfenced",
              [{"fenced": e.get("fenced"), "offset": e.get("offset")} for e in b1_view[-2:]], "KIP-841"),
        check("the leader proposes an ISR with the fenced broker", bool(proposals), "isr_proposed with 3 by b1",
              [e.get("proposed") for e in proposals[:3]], "L15"),
        check("the controller refuses it: INELIGIBLE_REPLICA, broker 3 fenced", refusal.get("error") == "INELIGIBLE_REPLICA"
              and "3" in str(refusal.get("message")) and "fenced" in str(refusal.get("message")),
              "INELIGIBLE_REPLICA (3: fenced)", {k: refusal.get(k) for k in ("error", "message", "proposed")}, "C14"),
        check("the refusal commits nothing", not leaked, "no ISR with 3 while it is fenced",
              [observe.describe_state(s) for s in leaked], "C14"),
        check("healed, broker 3 is unfenced with the broker epoch it had", bool(unfences) and len(epochs) == 1
              and unfences[0].get("broker_epoch") == epochs[0], f"epoch {epochs[:1]}, no new registration",
              {"registered": epochs, "unfenced": [u.get("broker_epoch") for u in unfences]}, "C5, C7"),
        check("and the leader adds it back", back is not None, "ISR with 3 after the heal", observe.describe_state(back),
              "L15"),
        no_acked_loss(ops),
    ]
    facts = {"controller states": [observe.describe_state(s) for s in states],
             "AlterPartition refusals": refusals, "broker 1's view of broker 3": b1_view[-3:]}
    return verdict(spec.scenario, spec.variant, EXPECTATION, checks, facts, results)


EXPECTATION = ("a leader whose metadata lags proposes the fenced broker 3; the controller refuses with "
               "INELIGIBLE_REPLICA and commits nothing; healed, 3 is unfenced with its epoch and re-added; valid")

SCENARIOS = [Scenario(
    name="fenced-isr-proposal",
    summary="a fenced broker in a proposed ISR is refused (C14) when the leader's metadata lags",
    reproduces="PROTOCOL.md catalog 11 (fenced broker in the proposed ISR) and 13 (fence/unfence keeps the "
               "epoch); seed 004 replication algorithm (AlterPartition)",
    recipe="3 brokers; 3 cut from the leader (shrunk out), then from the controller; the leader's requests "
           "to the controller held from before 3 is fenced until it proposed 3 again; heal",
    variants=("v3.5", "kip966"),
    expected={"v3.5": "valid", "kip966": "valid"},
    spec_options={**COMMON, "test_name": "fenced-isr-proposal", "topic": TOPIC, "brokers": 3, "replication_factor": 3,
                  "nemesis": ["partition"], "broker_session_timeout_ms": SESSION_MS, "replica_lag_time_max_ms": 2000},
    script=script,
    judge=judge,
    assignment={0: [1, 2, 3]},
    aliases=("catalog-11",),
)]
