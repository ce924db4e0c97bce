"""Last Replica Standing (docs/protocol-rules.md 5.1, scenario 20): an acknowledged write lost under v3.5,
kept under KIP-966.

Script (roles named after the partition's actual leader L and its followers F1, F2):
1. produce X (``RECORDS`` records, acks=all, idempotent kafka-python producer), every one acknowledged;
2. cut F1 and F2 from the controller only (iptables, both directions): their heartbeats are lost, they
   keep fetching from L. Wait until the controller has fenced both and the ISR is {L} (C6; under
   KIP-966 the last one fenced goes to the ELR, K2);
3. power loss of L (disk nemesis: kill -9, drop every unsynced byte, restart); the flush policy is left
   to the OS (B4), so X was never synced and L comes back with a shorter (empty) log;
4. wait until the controller has dealt with L's new registration: v3.5 re-elects L, the sole ISR member
   (B3 exception, I13 broken) with an empty log; KIP-966 registers it as unclean (no clean-shutdown
   epoch, K4): L leaves the ELR for the LKELR and the partition stays leaderless;
5. heal the partition: F1 and F2 are unfenced. v3.5: they fetch from L, diverge and truncate X away (F3;
   I6 broken). KIP-966: the ELR follower is elected (K3) and X survives;
6. final phase: heal everything, wait for a leader, read the partition from the beginning (final read).

Judgement (``judge``): ``acked_lost`` = values acknowledged in step 1 and absent from the final read. Under
v3.5 the expectation is loss, reported as the known issue (the guarantee profile classifies it as
Last Replica Standing: ``expected`` in this reproduction, ``known-issue`` in any other v3.5 run with lossy
faults). Under KIP-966 the expectation is no loss and a valid verdict.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from checkers.queue.profiles import derive_profile
from harness.checked_spec import CheckedSpec
from harness.spec import RunSpec
from kraftcheck.scenarios import live, observe
from kraftcheck.scenarios.base import Scenario
from kraftcheck.scenarios.checks import acked_values, final_read_values, nemesis_invoke_time
from kraftcheck.scenarios.script import ScenarioError
from workloads.registry import workload_for

RECORDS = 3
TOPIC = "lrs"

RECIPE = ("docs/protocol-rules.md 5.1 / scenario 20: RF 3, MinISR 2, acks=all; produce X; isolate both "
          "followers from the controller until fenced (ISR {leader}); power-loss the leader (unsynced data dropped); "
          "restart it; heal; final read.")

SPEC_OPTIONS: dict[str, Any] = {
    "test_name": "last-replica-standing",
    "workload": "queue",  # the script's sends are the queue workload's ops
    "topic": TOPIC,
    "keys": 1,
    "brokers": 3,
    "replication_factor": 3,
    "min_isr": 2,
    "acks": "all",
    "idempotence": True,
    "unclean_leader_election": False,
    "flush_messages": None,  # B4: flushing left to the OS, so an acknowledged suffix can be unsynced
    "flush_ms": None,
    "nemesis": ["disk", "partition"],
    "concurrency": 1,
    "op_timeout_s": 10.0,
    "recovery_timeout_s": 40.0,
    "final_read_timeout_s": 20.0,
    "broker_session_timeout_ms": 3000,  # fencing (C6) within seconds keeps the reproduction short
    "broker_heartbeat_interval_ms": 500,
    "time_limit_s": 60.0,
}


def roles(cluster: Any, topic: str) -> tuple[int, list[int]]:
    """(leader id, follower ids) of partition 0, from Metadata."""
    info = cluster.partitions(topic)[0]
    leader = int(info["leader"])
    return leader, sorted(int(r) for r in info["replicas"] if int(r) != leader)


def script(runner: Any, run: Any, cluster: Any) -> None:
    """Steps 1-5 of the module docstring (the runner's final phase does step 6)."""

    spec = runner.spec
    topic = spec.topic
    session_s = spec.broker_session_timeout_ms / 1000.0
    leader, followers = roles(cluster, topic)
    lnode = cluster.broker_node(leader)
    fnodes = [cluster.broker_node(f) for f in followers]

    def ctl_state(before: int | None = None) -> dict[str, Any] | None:
        return observe.controller_state(runner.traces(), topic, 0, before)

    full = runner.wait_for(run, "the controller's ISR to hold all three replicas", lambda: (
        (s := ctl_state()) is not None and len(s["isr"]) == 3 and s["leader"] == leader, s), 20)
    runner.step(run, "roles", f"leader b{leader}, followers {', '.join(fnodes)}; controller: "
                f"{observe.describe_state(full)}", leader=leader, followers=followers, state=full)

    # 1. Produce X with acks=all: each record is acknowledged only once the whole ISR has it (L3, L5).
    client = workload_for(spec.workload).client_factory(spec, cluster, run, None)(0)
    acked: list[list[int]] = []
    try:
        for value in range(1, RECORDS + 1):
            done = runner.client_op(run, client, 0, {"f": "send", "value": [0, value]}, lnode)
            if done["type"] != "ok":
                raise ScenarioError(f"send of X value {value} was not acknowledged: {done.get('error')}")
            acked.append(done["value"][1])
    finally:
        client.close()
    runner.step(run, "produce", f"X acknowledged (acks=all): [offset, value] {acked}", acked=acked)

    # 2. Followers lose the controller only: heartbeats dropped (C6 fences them), fetching continues.
    edges = [e for f in fnodes for e in live.to_controllers(cluster, f)]
    cut = runner.fault(run, "start-partition", {"topology": "followers-controller", "edges": edges})
    runner.step(run, "isolate-followers", f"{', '.join(fnodes)} cut from the controller "
                f"({cut['value'].get('rules')} iptables rules, probes {cut['value'].get('probes_during')})")

    def fenced_to_leader() -> tuple[bool, Any]:
        events = runner.traces()
        state = observe.controller_state(events, topic, 0)
        fenced = observe.fenced_brokers(events)
        done = state is not None and state["isr"] == [leader] and set(followers) <= fenced
        return done, {"state": observe.describe_state(state), "fenced": sorted(fenced)}

    seen = runner.wait_for(run, f"the controller to fence {followers} and shrink the ISR to [{leader}]",
                           fenced_to_leader, 3 * session_s + 15)
    isolated = ctl_state()
    runner.step(run, "followers-fenced", f"controller fenced {seen['fenced']}: {seen['state']}",
                state=isolated)

    # 3 + 4. Power loss of the last ISR member: kill -9, unsynced bytes dropped, restart (B4).
    crash_ns = time.monotonic_ns()
    lost = runner.fault(run, "power-loss", {"nodes": [lnode]})
    ev = lost["value"]
    runner.step(run, "power-loss-leader",
                f"{lnode}: kill -9 pid {ev.get('killed', {}).get(lnode)}, dropped "
                f"{ev.get('dropped_bytes', {}).get(lnode)} unsynced bytes, LEO {ev.get('leo_before', {}).get(lnode)}"
                f" -> {ev.get('leo_after', {}).get(lnode)}, restarted pid {ev.get('started', {}).get(lnode)}",
                dropped_bytes=ev.get("dropped_bytes"), leo_before=ev.get("leo_before"),
                leo_after=ev.get("leo_after"))

    def leader_dealt_with() -> tuple[bool, Any]:
        # After the new registration the controller either re-elects L (v3.5, sole ISR member) or
        # moves it from the ELR to the LKELR and leaves the partition leaderless (K966, K4).
        events = [e for e in runner.traces() if e.get("time", 0) >= crash_ns]
        registered = any(e.get("kind") == "registered" and e.get("source") == "controller"
                         and e.get("broker") == leader for e in events)
        state = observe.controller_state(events, topic, 0)
        done = registered and state is not None and (
            state["leader"] == leader or leader in state["last_known_elr"])
        return done, {"registered": registered, "state": observe.describe_state(state)}

    after = runner.wait_for(run, f"b{leader}'s re-registration to be handled by the controller",
                            leader_dealt_with, 3 * session_s + 20)
    restarted = ctl_state()
    runner.step(run, "leader-restarted", f"b{leader} re-registered: controller {after['state']}", state=restarted)

    # 5. Heal the partition: the followers are unfenced again (C5).
    healed = runner.fault(run, "stop-partition", {})
    runner.step(run, "heal-partition", f"rules removed: {healed['value'].get('removed')}; probes "
                f"{healed['value'].get('probes_after')}")

    # Recovery as the controller sees it (not a follower's stale Metadata): everyone unfenced, a leader,
    # and the full replica set back in the ISR - so every follower has fetched from the new leader in
    # its epoch and done whatever truncation divergence (F3) demanded before the final read.
    def recovered() -> tuple[bool, Any]:
        events = runner.traces()
        state = observe.controller_state(events, topic, 0)
        fenced = observe.fenced_brokers(events)
        done = (state is not None and state["leader"] >= 0 and not fenced
                and set(state["isr"]) == set(state["replicas"]))
        return done, {"state": observe.describe_state(state), "fenced": sorted(fenced)}

    back = runner.wait_for(run, "every replica back in the ISR under a leader", recovered,
                           spec.recovery_timeout_s)
    runner.step(run, "recovered", f"controller: {back['state']}", state=ctl_state())


def judge(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
          events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Decisive facts (from the stored history and trace) and whether the variant's expectation held."""
    variant = spec.variant
    topic = spec.topic
    # A fault begins at its invocation (the completion waits for probes and restarts).
    times = {s["step"]: s.get("time") for s in steps}
    crash_t = nemesis_invoke_time(ops, "power-loss", times.get("power-loss-leader"))
    heal_t = nemesis_invoke_time(ops, "stop-partition", times.get("heal-partition"))
    roles_step = next((s for s in steps if s["step"] == "roles"), {})
    leader = roles_step.get("leader")
    acked = acked_values(ops)
    read_done, read = final_read_values(ops)
    lost = [[o, v] for o, v in acked if read.get(o) != v]
    facts: dict[str, Any] = {"acknowledged X [offset, value]": acked,
                             "final read [offset, value]": sorted([o, v] for o, v in read.items()),
                             "acknowledged and lost": lost}
    if crash_t is not None:
        before = observe.controller_state(events, topic, 0, before=crash_t)
        facts["controller state before the crash"] = observe.describe_state(before)
        facts["ISR before the crash"] = before["isr"] if before else None
        if variant == "kip966":
            facts["ELR before the crash"] = before["elr"] if before else None
    power = next((s for s in steps if s["step"] == "power-loss-leader"), {})
    if power:
        facts["crashed leader LEO before / after power loss"] = [power.get("leo_before"), power.get("leo_after")]
        facts["unsynced bytes dropped"] = power.get("dropped_bytes")
    restart = next((s for s in steps if s["step"] == "leader-restarted"), {})
    if restart:
        facts["controller state after the restart"] = observe.describe_state(restart.get("state"))
    won = observe.elections(events, topic, 0, after=crash_t) if crash_t is not None else []
    if won:
        facts["elections after the crash"] = [
            f"b{e['leader']} ({e['type']}, LE {e['leader_epoch']}, from ISR {e['previous_isr']})" for e in won]
        first = won[0]
        start = observe.leadership_start(events, topic, 0, first["leader"], first["leader_epoch"])
        facts["elected leader"] = first["leader"]
        facts["LEO of the elected leader when it took over"] = start.get("leo") if start else None
    else:
        facts["elections after the crash"] = []
    cuts = observe.truncations(events, topic, 0, after=heal_t) if heal_t is not None else []
    if cuts:
        facts["truncations after the heal"] = [f"b{c['replica']}: LEO {c['from_leo']} -> {c['to_offset']}"
                                                for c in cuts]
    final_state = observe.controller_state(events, topic, 0)
    facts["controller state at the end"] = observe.describe_state(final_state)

    queue = (results.get("checkers") or {}).get("queue") or {}
    profile_status = ((results.get("profile") or {}).get("statuses") or {}).get("lost-write")
    # The same history judged as an ordinary run (not marked as a reproduction): what the guarantee
    # profile says about this loss in any run with this configuration and these faults.

    ordinary = replace(CheckedSpec.of(spec), scenario=None, test_name=None)
    general = derive_profile(ordinary, ops, read_done)
    facts["guarantee profile for acked-write loss"] = {
        "this reproduction": profile_status, "an ordinary run with these faults": general["statuses"]["lost-write"],
        "why": general["reasons"]["lost-write"]}
    loss_kinds = [k for k in queue.get("anomaly_types") or [] if k in ("lost-write", "acked-unreadable", "unseen")]
    lines = []
    if variant == "v3.5":
        expectation = ("acknowledged X lost (Last Replica Standing): the restarted leader is re-elected with a "
                       "shorter log and the followers truncate to it")
        met = read_done and bool(lost) and bool(loss_kinds) and (not won or won[0]["leader"] == leader)
        label = ("KNOWN ISSUE: Last Replica Standing (docs/protocol-rules.md 5.1; I1, I6, I7, I13) - "
                 f"acknowledged writes lost by design of v3.5; guarantee profile: {profile_status} in this reproduction, "
                 f"{general['statuses']['lost-write']} in any other v3.5 run with lossy faults") if lost else None
    else:
        expectation = "no acknowledged write lost: an ELR member is elected after the heal (K3, K9); verdict valid"
        met = read_done and not lost and not loss_kinds and results.get("valid") is True
        label = None
    lines.append(f"scenario last-replica-standing ({variant}): expectation {'met' if met else 'NOT met'}: "
                 f"{expectation}")
    if label:
        lines.append(label)
    for key in ("ISR before the crash", "ELR before the crash", "elections after the crash",
                "LEO of the elected leader when it took over", "truncations after the heal",
                "acknowledged and lost"):
        if key in facts:
            lines.append(f"  {key}: {facts[key]}")
    return {"expectation": expectation, "expectation_met": bool(met), "label": label, "facts": facts,
            "acked_lost": lost, "loss_anomalies": loss_kinds, "profile_lost_write": profile_status,
            "lines": lines}


SCENARIOS = [Scenario(
    name="last-replica-standing",
    summary="acked write lost after power loss of the last ISR member (v3.5); kept with KIP-966",
    reproduces="PROTOCOL.md 5.1 Last Replica Standing (catalog 20); seed 004 replication algorithm",
    recipe=RECIPE,
    variants=("v3.5", "kip966"),
    expected={"v3.5": "expected-failure", "kip966": "valid"},
    spec_options=dict(SPEC_OPTIONS),
    script=script,
    judge=judge,
    aliases=("lrs",),
)]
