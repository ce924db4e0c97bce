"""A stale broker epoch in an AlterPartition is refused (PROTOCOL.md catalog 10, C3, C4, C14) -
``stale-broker-epoch``.

Catalog 10: out-of-sync broker 3 catches up; the leader proposes it with the broker epoch of that fetch,
E3; 3 crashes losing unflushed data and re-registers with E3'; the proposal reaches the controller after
that and is refused (C14: the supplied epoch is not the registered one), and 3 comes back only after a
full catch-up under E3'. A leader checks epochs itself before proposing (KIP-903), so the proposal has to
be in flight across the crash. The script holds it there:

1. three brokers, leader 1, replica lag 2 s, broker session 12 s. Broker 3 is cut from the leader and
   shrunk out of the ISR (ISR {1, 2}); it is also cut from the controller, whose session for it will
   expire (that is what lets a new incarnation register, C3);
2. a few seconds before that, broker 1's requests to the controller are held (dropped, so TCP keeps
   retransmitting them): its metadata view stops, and what it sends waits;
3. broker 3 may fetch again: it catches up under E3 and the leader proposes ISR {1, 2, 3} carrying E3;
   the proposal waits in broker 1's TCP retransmission queue;
4. broker 3 loses power (kill -9, unsynced bytes dropped, restart) and may reach the controller again.
   Its new incarnation is registered with a larger epoch E3' once the controller has fenced the old
   session (C3, C4; if it asks before that, it is refused and retries - ``registration-gating`` shows
   that deterministically);
5. broker 1's link is restored, well within its own session: the proposal arrives carrying E3 and is
   refused, INELIGIBLE_REPLICA (C14), committing nothing;
6. everything heals; broker 3 catches up under E3' and the leader adds it back (L15).

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

TOPIC = "stale-epoch"
SESSION_MS = 12_000


def script(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of the module docstring."""
    watch = live.PartitionWatch(runner, run, TOPIC)
    _, shrunk = live.b3_out_of_isr_after_writes(runner, run, cluster, watch)
    isolated_at = time.monotonic()
    runner.fault(run, "start-partition", {"topology": "b3-from-controller", "edges": live.to_controllers(cluster, "b3"),
                                          "add": True})
    runner.step(run, "shrunk", f"controller: {observe.describe_state(shrunk)}; b3 cut from the controller",
                state=shrunk)
    time.sleep(max(0.0, isolated_at + SESSION_MS / 1000 - 4.0 - time.monotonic()))
    runner.fault(run, "start-partition", {"topology": "hold-b1-requests", "edges": live.from_controllers_oneway(cluster, "b1"),
                                          "add": True})
    held_at = live.now_ns()
    runner.step(run, "b1-held", "b1 -> controller dropped: broker 1's view stops, its requests wait")

    runner.fault(run, "stop-partition", {"edges": both_ways("b1", "b3")})
    proposal = watch.until_event("the leader to propose broker 3 (L15)", "isr_proposed", 15, after_ns=held_at,
                                 topic=TOPIC, partition=0, replica=1)
    runner.step(run, "proposed", f"leader 1 proposes {proposal.get('proposed')} with broker 3's fetch epoch")

    lost = runner.fault(run, "power-loss", {"nodes": ["b3"]})["value"]
    runner.fault(run, "stop-partition", {"edges": live.to_controllers(cluster, "b3")})
    runner.step(run, "b3-power-loss", f"b3: dropped {lost.get('dropped_bytes', {}).get('b3')} unsynced bytes, "
                f"LEO {lost.get('leo_before', {}).get('b3')} -> {lost.get('leo_after', {}).get('b3')}, restarted")
    registered = watch.until_event("broker 3's new incarnation to register (C3, C4)", "registered",
                                   SESSION_MS / 1000 + 10, after_ns=held_at, source="controller", broker=3)
    watch.until_event("broker 3's new incarnation to be unfenced (C5)", "unfenced", 15, after_ns=registered["time"],
                      source="controller", broker=3)
    runner.step(run, "b3-registered", f"controller registered broker 3 with epoch {registered.get('broker_epoch')}")

    runner.fault(run, "stop-partition", {"edges": live.from_controllers_oneway(cluster, "b1")})
    refusal = watch.until_event("the held proposal to be refused (C14)", "alter_partition_rejected", 20,
                                after_ns=registered["time"], source="controller", topic=TOPIC, partition=0)
    runner.step(run, "refused", f"AlterPartition {refusal.get('proposed')} refused {refusal.get('error')}: "
                f"{refusal.get('message')}", refusal={k: refusal.get(k) for k in ("error", "message", "proposed")})
    runner.fault(run, "stop-partition", {})
    back = watch.until("broker 3 back in the ISR", lambda s, e: s["isr"] == [1, 2, 3], 40)
    runner.step(run, "rejoined", f"controller: {observe.describe_state(back)}", state=back)


def judge(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
          events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of the module docstring against the stored trace and history."""
    topic = spec.topic
    crash_t = next((op["time"] for op in ops if op.get("f") == "power-loss" and op.get("type") == "invoke"), None)
    epochs = observe.broker_epochs(events, 3)
    regs = observe.events_of(events, "registered", source="controller", broker=3, after=crash_t)
    new_reg = regs[0] if regs else {}
    old_fence = observe.events_of(events, "fenced", source="controller", broker=3, before=new_reg.get("time"))
    refused_regs = observe.events_of(events, "registration_failed", broker=3, after=crash_t,
                                     before=new_reg.get("time"))
    proposals = [e for e in observe.replica_events(events, "isr_proposed", topic, 0, replica=1, before=crash_t)
                 if 3 in (e.get("proposed") or [])]
    refusals = observe.ap_refusals(events, topic, 0, after=new_reg.get("time"))
    refusal = refusals[0] if refusals else {}
    proposed_epoch = next((e for b, e in (refusal.get("proposed") or []) if b == 3), None)
    states = observe.controller_states(events, topic, 0)
    refused_t = refusal.get("time")
    leaked = [s for s in states if crash_t is not None and crash_t <= s["time"]
              and (refused_t is None or s["time"] <= refused_t) and 3 in s["isr"]]
    back = first([s for s in states if refused_t is not None and s["time"] > refused_t], lambda s: 3 in s["isr"])
    old_epoch, new_epoch = (epochs[0] if epochs else None), new_reg.get("broker_epoch")
    checks = [
        check("the leader proposes broker 3 before the crash", bool(proposals), "isr_proposed with 3 by b1",
              [e.get("proposed") for e in proposals[-1:]], "L15"),
        check("the new incarnation is registered with a larger epoch once the old session is fenced",
              bool(old_fence) and new_epoch is not None
              and old_epoch is not None and new_epoch > old_epoch, f"epoch > {old_epoch} after a fence",
              {"epochs": epochs, "fenced before": bool(old_fence),
               "refused attempts before": sorted({e.get("error") for e in refused_regs})}, "C3, C4"),
        check("the held proposal carries the old epoch and is refused: INELIGIBLE_REPLICA",
              refusal.get("error") == "INELIGIBLE_REPLICA" and proposed_epoch == old_epoch
              and str(new_epoch) in str(refusal.get("message")),
              f"INELIGIBLE_REPLICA, epoch {old_epoch} != {new_epoch}",
              {k: refusal.get(k) for k in ("error", "message", "proposed")}, "C14, catalog 10"),
        check("the refusal commits nothing", not leaked, "no ISR with 3 between the crash and the refusal",
              [observe.describe_state(s) for s in leaked], "C14"),
        check("broker 3 is re-added after catching up under its new epoch", back is not None, "ISR with 3",
              observe.describe_state(back), "L15, B3"),
        no_acked_loss(ops),
    ]
    facts = {"broker 3 epochs": epochs, "AlterPartition refusals": refusals,
             "registration refusals of broker 3": len(refused_regs),
             "controller states": [observe.describe_state(s) for s in states]}
    return verdict(spec.scenario, spec.variant, EXPECTATION, checks, facts, results)


EXPECTATION = ("broker 3's restarted incarnation registers only after its old session is fenced (a larger epoch); "
               "the leader's proposal carrying the old epoch is refused INELIGIBLE_REPLICA and commits nothing; "
               "3 is re-added after catching up; valid")

SCENARIOS = [Scenario(
    name="stale-broker-epoch",
    summary="a proposal carrying a crashed broker's old epoch is refused (C14)",
    reproduces="PROTOCOL.md catalog 10 (stale broker epoch); seed 004 replication algorithm (broker epochs)",
    recipe="3 brokers; 3 shrunk out and cut from the controller; the leader's requests held; 3 catches up "
           "(proposal held), loses power, re-registers; the proposal is released",
    variants=("v3.5", "kip966"),
    expected={"v3.5": "valid", "kip966": "valid"},
    spec_options={**COMMON, "test_name": "stale-broker-epoch", "topic": TOPIC, "brokers": 3, "replication_factor": 3,
                  "nemesis": ["disk", "partition"], "broker_session_timeout_ms": SESSION_MS,
                  "replica_lag_time_max_ms": 2000, "flush_messages": None, "flush_ms": None},
    script=script,
    judge=judge,
    assignment={0: [1, 2, 3]},
    aliases=("catalog-10",),
)]
