"""The controller quorum under faults (issue 25; seed 004 1.2.1-1.2.2, rule C1: zombie controllers are
harmless; docs/protocol-rules.md Q14, Q15) on a quorum of three controllers.

**Fail-over in every reassignment phase** (``quorum-failover-reassignment``): seed 000's example 1, the move
[1, 2, 3] -> [1, 2, 4] with broker 4's catch-up held (cut from the leader). The active controller is
killed (kill -9) three times: right after the grow committed (adding [4], removing [3]), during the
catch-up (4 still cut off), and right after the completion. Each time another voter becomes the active
controller and carries on from the committed log: the grow state survives, the AlterPartition that adds 4
completes the move under the third controller in one change (LE+1, PE+1), the completed state survives the
last fail-over, the removed replica deletes its log, nothing acknowledged is lost.

**Broker epochs and fencing survive a fail-over** (``quorum-broker-epoch``): broker 3 is cut from every
controller and fenced (C6); the active controller is killed; the new one still has 3 fenced at its epoch,
and when 3 is healed it is unfenced with the same broker epoch (C5, C7): no broker registers again, no
epoch changes, because registrations and fences are committed records every voter replays (seed 004
1.2.2: "this registration is added to the Raft metadata log which means this information survives
controller fail-overs").

**A deposed controller's late decision is harmless** (``quorum-deposed-controller``): the active controller
is cut from every other node. It goes on believing it leads for a while and, hearing no heartbeats, decides
to fence the brokers (its session timer is shorter than its check-quorum timeout): those fences are
appended to its log but can never commit. Another voter becomes active and the brokers follow it (the new
controller may itself fence a broker that spent its session on the deposed one, and unfences it at its
next heartbeat: that is its own, committed decision); when the old leader is healed it truncates its
uncommitted records (Q9) and never applies them (Q14). No record of the deposed leader's epoch commits
after the cut, the trace's committed prefixes agree (I20), the run is valid (C1).

**Quorum loss and recovery** (``quorum-loss``): two of the three controllers are killed. Without a majority
nothing can commit: a reassignment is refused or times out, and the partition keeps its leader and ISR, so
acks=all writes still succeed (the data plane does not need the controller). When the two are restarted a
voter becomes active again from the committed log, the same reassignment is accepted and completes, and
nothing acknowledged is lost.

Both variants expect the same; every run must be valid.
"""

from __future__ import annotations

from typing import Any

from harness.spec import RunSpec
from kraftcheck.scenarios import live, observe
from kraftcheck.scenarios.base import COMMON, Scenario
from kraftcheck.scenarios.checks import check, first, nemesis_invoke_time, no_acked_loss, same_set, verdict
from kraftcheck.scenarios.live import both_ways

QUORUM = {"controllers": 3, "nemesis": ["kill", "partition", "admin"]}
NO_ADMIN = {"controllers": 3, "nemesis": ["kill", "partition"]}
CUTS_ONLY = {"controllers": 3, "nemesis": ["partition"]}
KILLS_ONLY = {"controllers": 3, "nemesis": ["kill", "admin"]}


def _active(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``controller_active`` events in time order: who became the active controller, in which epoch."""
    return observe.events_of(events, "controller_active")


def wait_new_active(runner: Any, run: Any, after_ns: int, other_than: str | None, what: str,
                    timeout_s: float = 30.0) -> dict[str, Any]:
    """Wait until a controller other than ``other_than`` traces becoming active after ``after_ns``."""
    def probe() -> tuple[bool, Any]:
        fresh = [e for e in _active(runner.traces()) if e.get("time", 0) >= after_ns
                 and e.get("node_name") != other_than]
        return bool(fresh), (fresh[-1] if fresh else None)
    return runner.wait_for(run, what, probe, timeout_s)


def kill_active(runner: Any, run: Any, cluster: Any, label: str) -> tuple[str, dict[str, Any]]:
    """kill -9 the active controller, wait for another to take over, start the killed one again; return the
    killed node's name and the new active controller's ``controller_active`` event."""
    victim = cluster.active_controller()
    killed_at = live.now_ns()
    runner.fault(run, "kill", {"nodes": [victim]})
    new = wait_new_active(runner, run, killed_at, victim, f"a new active controller after killing {victim}")
    runner.fault(run, "start", {"nodes": [victim]})
    runner.step(run, label, f"killed the active controller {victim}; {new.get('node_name')} active in quorum "
                f"epoch {new.get('epoch')} from offset {new.get('offset')}", killed=victim, active=new)
    return victim, new


# -- fail-over in every reassignment phase --------------------------------------------------------------

MOVE_TOPIC = "quorum-move"


def script_failover_reassignment(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of the first scenario of the module docstring."""
    watch = live.PartitionWatch(runner, run, MOVE_TOPIC)
    watch.until("ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == [1, 2, 3] and s["leader"] == 1, 30)
    acked = live.produce(runner, run, cluster, [1, 2, 3])
    runner.step(run, "produce", f"acknowledged [offset, value] {acked}", acked=acked)

    runner.fault(run, "start-partition", {"topology": "hold-b4", "edges": both_ways("b4", "b1")})
    live.expect_effective(runner.admin(run, "reassign", {"topic": MOVE_TOPIC, "targets": {0: [1, 2, 4]}}),
                          "AlterPartitionReassignments [1, 2, 3] -> [1, 2, 4]")
    grown = watch.until("the grow state (adding [4], removing [3])",
                        lambda s, e: s["adding"] == [4] and s["removing"] == [3], 20)
    runner.step(run, "grow", observe.describe_assignment(grown), state=grown)
    kill_active(runner, run, cluster, "failover-grow")
    kill_active(runner, run, cluster, "failover-catch-up")
    held = watch.state()
    runner.step(run, "still-held", f"after two fail-overs: {observe.describe_assignment(held)}", state=held)

    runner.fault(run, "stop-partition", {"edges": both_ways("b4", "b1")})
    done = watch.until("the completion (replicas [1, 2, 4], nothing pending)",
                       lambda s, e: s["replicas"] == [1, 2, 4] and not s["adding"] and not s["removing"], 40)
    runner.step(run, "complete", observe.describe_assignment(done), state=done)
    kill_active(runner, run, cluster, "failover-completed")
    runner.fault(run, "stop-partition", {})
    deleted = watch.until_event("b3 to delete its removed replica (T1)", "log_deleted", 30, after_ns=done["time"],
                                topic=MOVE_TOPIC, partition=0, replica=3)
    runner.step(run, "removed-replica-deleted", f"b3 deleted its log of {MOVE_TOPIC}-0 ({deleted.get('reason')})")


def judge_failover_reassignment(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
                                events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of the first scenario against the stored trace and history."""
    topic = spec.topic
    st = {s["step"]: s for s in steps}
    states = observe.controller_states(events, topic, 0)
    t_reassign = nemesis_invoke_time(ops, "reassign", None)
    after = [s for s in states if t_reassign is not None and s["time"] >= t_reassign]
    grow = first(after, lambda s: s["adding"] == [4])
    done = first(after, lambda s: s["replicas"] == [1, 2, 4] and not s["adding"] and not s["removing"])
    completions = [s for s in after if s["replicas"] == [1, 2, 4] and not s["adding"] and not s["removing"]
                   and s["partition_epoch"] == (done or {}).get("partition_epoch")]
    between = [s for s in after if grow and done and grow["time"] < s["time"] < done["time"]]
    fail_overs = [st.get(k, {}).get("active") for k in ("failover-grow", "failover-catch-up", "failover-completed")]
    epochs = [f.get("epoch") for f in fail_overs if f]
    held = (st.get("still-held") or {}).get("state") or {}
    end_t = (st.get("removed-replica-deleted") or {}).get("time")
    before_end = [s for s in states if end_t is None or s["time"] <= end_t]  # not the final phase's shutdowns
    last = before_end[-1] if before_end else {}
    deleted = observe.replica_events(events, "log_deleted", topic, 0, replica=3,
                                     after=done["time"] if done else None)
    g, d = grow or {}, done or {}
    checks = [
        check("grow to [1,2,3,4], adding [4], removing [3]", grow and same_set(g["replicas"], [1, 2, 3, 4])
              and g["removing"] == [3], "RS {1,2,3,4} AR [4] RR [3]", observe.describe_assignment(grow), "C18"),
        check("three fail-overs, each to a newer quorum epoch", len(epochs) == 3 and epochs == sorted(set(epochs)),
              "3 new active controllers, epochs increasing", [f and (f.get("node_name"), f.get("epoch"))
                                                             for f in fail_overs], "Q3, Q14"),
        check("the grow state survives two fail-overs", held.get("adding") == [4] and held.get("removing") == [3]
              and held.get("partition_epoch") == g.get("partition_epoch"),
              observe.describe_assignment(grow), observe.describe_assignment(held) if held else None, "Q14, C1"),
        check("catch-up and completion are one change under the new controller: LE+1, PE+1, ISR {1,2,4}",
              done and grow and not between and same_set(d["isr"], [1, 2, 4])
              and d["leader_epoch"] == g["leader_epoch"] + 1 and d["partition_epoch"] == g["partition_epoch"] + 1,
              f"LE {(g.get('leader_epoch') or 0) + 1} PE {(g.get('partition_epoch') or 0) + 1}, nothing between",
              {"completion": observe.describe_assignment(done),
               "between": [observe.describe_assignment(s) for s in between]}, "C19"),
        check("the move completes once and the completed state survives the last fail-over",
              len(completions) == 1 and last.get("replicas") == [1, 2, 4] and not last.get("adding"),
              "one completion record; replicas [1,2,4] at the end", [observe.describe_assignment(s) for s in completions]
              + [f"last: {observe.describe_assignment(last)}"], "Q14"),
        check("the removed replica deletes its log", bool(deleted), "log_deleted on b3 after the completion",
              [f"b{e.get('replica')} {e.get('reason') or 'deleted'}" for e in deleted[:1]], "T1"),
        no_acked_loss(ops),
    ]
    facts = {"controller states": [observe.describe_assignment(s) for s in states],
             "active controllers": [(e.get("node_name"), e.get("epoch"), e.get("offset")) for e in _active(events)]}
    return verdict(spec.scenario, spec.variant, EXPECT_REASSIGN, checks, facts, results)


EXPECT_REASSIGN = ("the move grows, survives a fail-over after the grow and one during the held catch-up, "
                   "completes in one change under the third active controller and survives a fail-over after "
                   "the completion; nothing acknowledged is lost; valid")

# -- broker epochs and fencing --------------------------------------------------------------------------

EPOCH_TOPIC = "quorum-epoch"


def script_broker_epoch(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of the second scenario."""
    watch = live.PartitionWatch(runner, run, EPOCH_TOPIC)
    watch.until("ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == [1, 2, 3] and s["leader"] == 1, 30)
    acked = live.produce(runner, run, cluster, [1, 2])
    epochs = {b: observe.broker_epochs(runner.traces(), b) for b in (1, 2, 3)}
    runner.step(run, "registered", f"broker epochs {epochs}; acknowledged {acked}", epochs=epochs, acked=acked)
    runner.fault(run, "start-partition", {"topology": "b3-from-controllers", "edges": live.to_controllers(cluster, "b3")})
    fenced = watch.until("b3 fenced and out of the ISR (C6)",
                         lambda s, e: 3 not in s["isr"] and 3 in observe.fenced_brokers(e), 20)
    runner.step(run, "fenced", observe.describe_state(fenced), state=fenced)
    _, new = kill_active(runner, run, cluster, "failover")
    still = observe.fenced_brokers(runner.traces())
    runner.step(run, "after-failover", f"fenced brokers as committed: {sorted(still)}", fenced=sorted(still))
    healed_at = live.now_ns()
    runner.fault(run, "stop-partition", {})
    watch.until_event("b3 unfenced again (C5)", "unfenced", 30, after_ns=healed_at, source="controller", broker=3)
    back = watch.until("b3 back in the ISR (L15)", lambda s, e: s["isr"] == [1, 2, 3], 30)
    more = live.produce(runner, run, cluster, [3, 4])
    runner.step(run, "rejoined", f"{observe.describe_state(back)}; acknowledged {more}", state=back, acked=more)


def judge_broker_epoch(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
                       events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of the second scenario."""
    st = {s["step"]: s for s in steps}
    before = (st.get("registered") or {}).get("epochs") or {}
    fail_t = (st.get("failover") or {}).get("time")
    regs = {b: observe.broker_epochs(events, b) for b in (1, 2, 3)}
    fenced_after = (st.get("after-failover") or {}).get("fenced") or []
    unfences = observe.events_of(events, "unfenced", source="controller", broker=3, after=fail_t)
    epoch3 = (regs.get(3) or [None])[-1]
    new = (st.get("failover") or {}).get("active") or {}
    checks = [
        check("a fail-over happened while 3 was fenced", bool(new), "a new active controller", new.get("node_name"),
              "Q3"),
        check("no broker registers again: every broker keeps its one epoch", all(len(v) == 1 for v in regs.values())
              and {int(k): v for k, v in before.items()} == regs, before, regs, "C7, Q14"),
        check("the new active controller has 3 fenced", 3 in fenced_after, "3 fenced", fenced_after, "C6, Q14"),
        check("healing unfences 3 at the same epoch", bool(unfences) and unfences[0].get("broker_epoch") == epoch3,
              f"unfenced at epoch {epoch3}", [u.get("broker_epoch") for u in unfences], "C5, C7"),
        no_acked_loss(ops),
    ]
    facts = {"broker epochs": regs, "active controllers": [(e.get("node_name"), e.get("epoch")) for e in _active(events)]}
    return verdict(spec.scenario, spec.variant, EXPECT_EPOCH, checks, facts, results)


EXPECT_EPOCH = ("broker 3 fenced before a fail-over is still fenced under the new active controller and is "
                "unfenced at its same epoch when healed; no broker registers again; valid")

# -- a deposed controller --------------------------------------------------------------------------------

DEPOSED_TOPIC = "quorum-deposed"


def script_deposed(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of the third scenario."""
    watch = live.PartitionWatch(runner, run, DEPOSED_TOPIC)
    watch.until("ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == [1, 2, 3] and s["leader"] == 1, 30)
    acked = live.produce(runner, run, cluster, [1, 2, 3])
    old = cluster.active_controller()
    others = [n for n in cluster.nodes() if n != old]
    cut_at = live.now_ns()
    runner.fault(run, "start-partition", {"topology": "isolate-active-controller",
                                          "edges": [e for n in others for e in both_ways(old, n)]})
    runner.step(run, "isolated", f"the active controller {old} cut from every other node", old=old, acked=acked)
    new = wait_new_active(runner, run, cut_at, old, "another voter to become active")

    def resigned() -> tuple[bool, Any]:
        states = [e for e in observe.events_of(runner.traces(), "quorum_state", after=cut_at)
                  if e.get("node_name") == old and e.get("state") in ("resigned", "prospective", "candidate",
                                                                        "unattached", "follower")]
        return bool(states), (states[0] if states else None)
    gave_up = runner.wait_for(run, f"{old} to stop leading (check-quorum, Q11)", resigned, 30)
    more = live.produce(runner, run, cluster, [4, 5])
    runner.step(run, "deposed", f"{new.get('node_name')} active in epoch {new.get('epoch')}; {old} went "
                f"{gave_up.get('state')}; writes go on: {more}", new=new, acked=more)
    healed_at = live.now_ns()
    runner.fault(run, "stop-partition", {})

    def caught_up() -> tuple[bool, Any]:
        events = runner.traces()
        follows = [e for e in observe.events_of(events, "quorum_state", after=healed_at)
                   if e.get("node_name") == old and e.get("state") == "follower"]
        return bool(follows), (follows[-1] if follows else None)
    back = runner.wait_for(run, f"{old} to follow the new leader", caught_up, 30)
    runner.step(run, "rejoined", f"{old} follows {back.get('leader')} in epoch {back.get('epoch')}")


def judge_deposed(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
                  events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of the third scenario."""
    st = {s["step"]: s for s in steps}
    old = (st.get("isolated") or {}).get("old")
    cut_t = nemesis_invoke_time(ops, "start-partition", (st.get("isolated") or {}).get("time"))
    new = (st.get("deposed") or {}).get("new") or {}
    back_t = (st.get("rejoined") or {}).get("time")
    zombie_epoch = max([e.get("epoch") or 0 for e in observe.events_of(events, "quorum_state", before=cut_t)
                        if e.get("node_name") == old and e.get("state") == "leader"] or [0])
    fences = observe.events_of(events, "fenced", source="controller", after=cut_t, before=back_t)
    zombie_fences = [e for e in fences if e.get("quorum_epoch") == zombie_epoch]
    truncations = [e for e in observe.events_of(events, "quorum_truncate", after=cut_t) if e.get("node_name") == old]
    gave_up = [e for e in observe.events_of(events, "quorum_state", after=cut_t)
               if e.get("node_name") == old and e.get("state") == "resigned"]
    uncommitted = [(e.get("hwm"), e.get("log_end")) for e in gave_up]
    invariants = (results.get("checkers") or {}).get("invariants") or results.get("invariants") or {}
    i20 = ((invariants.get("invariants") or {}).get("I20") or {}).get("valid")
    checks = [
        check("another voter becomes active in a newer epoch", new and (new.get("epoch") or 0) > zombie_epoch,
              f"epoch > {zombie_epoch}", new and (new.get("node_name"), new.get("epoch")), "Q3, Q10"),
        check("the deposed leader's decisions never commit", back_t is not None and not zombie_fences,
              f"no committed record of quorum epoch {zombie_epoch} after the cut",
              [(e.get("broker"), e.get("offset")) for e in zombie_fences], "C1, Q14"),
        check("the deposed leader drops what it appended alone", not any(h < end for h, end in uncommitted)
              or bool(truncations), "its uncommitted tail truncated once healed (Q9)",
              {"resigned with (hwm, log end)": uncommitted,
               "truncations": [(e.get("from_offset"), e.get("to_offset")) for e in truncations]}, "Q9"),
        check("committed prefixes agree on every voter", i20 is not False, "I20 holds", i20, "I20"),
        check("writes go on through the fail-over", bool((st.get("deposed") or {}).get("acked")),
              "acknowledged", (st.get("deposed") or {}).get("acked"), "Q15"),
        no_acked_loss(ops),
    ]
    facts = {"deposed controller": old,
             "fences committed by the new active controller (brokers still heartbeating to the deposed one)":
                 [(e.get("broker"), e.get("quorum_epoch"), e.get("offset")) for e in fences if e not in zombie_fences],
             "active controllers": [(e.get("node_name"), e.get("epoch")) for e in _active(events)]}
    return verdict(spec.scenario, spec.variant, EXPECT_DEPOSED, checks, facts, results)


EXPECT_DEPOSED = ("the isolated active controller is replaced by a voter of a newer epoch, its own decisions "
                  "never commit, it truncates them and follows the new leader once healed; valid")

# -- quorum loss and recovery ------------------------------------------------------------------------------

LOSS_TOPIC = "quorum-loss"


def script_quorum_loss(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of the fourth scenario."""
    watch = live.PartitionWatch(runner, run, LOSS_TOPIC)
    watch.until("ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == [1, 2, 3] and s["leader"] == 1, 30)
    acked = live.produce(runner, run, cluster, [1, 2])
    voters = live.controllers(cluster)
    majority = voters[: len(voters) // 2 + 1]
    lost_at = live.now_ns()
    runner.fault(run, "kill", {"nodes": majority})
    runner.step(run, "quorum-lost", f"killed {majority} of {voters}", killed=majority, acked=acked)
    refused = runner.admin(run, "reassign", {"topic": LOSS_TOPIC, "targets": {0: [1, 2, 4]}})
    during = live.produce(runner, run, cluster, [3, 4])
    frozen = watch.state()
    runner.step(run, "frozen", f"reassignment answered {(refused.get('value') or {}).get('errors')}; writes "
                f"{during}; {observe.describe_assignment(frozen)}", answer=(refused.get("value") or {}).get("errors"),
                state=frozen, acked=during)
    runner.fault(run, "start", {"nodes": majority})
    back = wait_new_active(runner, run, lost_at, None, "an active controller again", 40)
    live.expect_effective(runner.admin(run, "reassign", {"topic": LOSS_TOPIC, "targets": {0: [1, 2, 4]}}),
                          "AlterPartitionReassignments [1, 2, 3] -> [1, 2, 4] after the recovery")
    done = watch.until("the reassignment to complete", lambda s, e: s["replicas"] == [1, 2, 4]
                       and not s["adding"] and not s["removing"], 40)
    runner.step(run, "recovered", f"{back.get('node_name')} active in epoch {back.get('epoch')}; "
                f"{observe.describe_assignment(done)}", active=back, state=done)


def judge_quorum_loss(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
                      events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of the fourth scenario."""
    topic = spec.topic
    st = {s["step"]: s for s in steps}
    lost_t = (st.get("quorum-lost") or {}).get("time")
    back_t = (st.get("recovered") or {}).get("time")
    frozen = (st.get("frozen") or {}).get("state") or {}
    answer = (st.get("frozen") or {}).get("answer")
    during = [s for s in observe.controller_states(events, topic, 0)
              if lost_t is not None and (st.get("frozen") or {}).get("time") is not None
              and lost_t <= s["time"] <= st["frozen"]["time"]]
    done = (st.get("recovered") or {}).get("state") or {}
    checks = [
        check("without a majority the reassignment is not accepted", answer not in (None, {}, [])
              and not frozen.get("adding"), "an error, nothing pending", {"answer": answer,
                                                                         "state": observe.describe_assignment(frozen)},
              "C1, Q14"),
        check("no partition change commits while the quorum is lost", not during, "no committed state",
              [observe.describe_assignment(s) for s in during], "Q8"),
        check("acks=all writes go on: the data plane keeps its leader and ISR",
              bool((st.get("frozen") or {}).get("acked")), "acknowledged", (st.get("frozen") or {}).get("acked"),
              "L1"),
        check("after the recovery the reassignment is accepted and completes", done.get("replicas") == [1, 2, 4]
              and back_t is not None, "replicas [1,2,4]", observe.describe_assignment(done) if done else None,
              "Q14, C17"),
        no_acked_loss(ops),
    ]
    facts = {"active controllers": [(e.get("node_name"), e.get("epoch")) for e in _active(events)]}
    return verdict(spec.scenario, spec.variant, EXPECT_LOSS, checks, facts, results)


EXPECT_LOSS = ("with two of three controllers down no metadata change commits (the reassignment is refused) "
               "while acks=all writes go on; after the restart the reassignment completes; nothing lost; valid")

_BOTH = {"v3.5": "valid", "kip966": "valid"}
SCENARIOS = [
    Scenario(
        name="quorum-failover-reassignment",
        summary="the active controller killed in each phase of a reassignment: it completes once, nothing lost",
        reproduces="issue 25 (controller fail-over); seed 000 example 1; seed 004 1.2.1; C1, Q14",
        recipe="3 controllers, 4 brokers; b4 cut from the leader; move [1,2,3] -> [1,2,4]; kill the active "
               "controller after the grow, during the held catch-up and after the completion",
        variants=("v3.5", "kip966"), expected=dict(_BOTH),
        spec_options={**COMMON, **QUORUM, "test_name": "quorum-failover-reassignment", "topic": MOVE_TOPIC,
                      "brokers": 4, "replication_factor": 3, "time_limit_s": 120.0},
        script=script_failover_reassignment, judge=judge_failover_reassignment, assignment={0: [1, 2, 3]}),
    Scenario(
        name="quorum-broker-epoch",
        summary="a broker's epoch and fencing survive a controller fail-over",
        reproduces="seed 004 1.2.2 (registration survives controller fail-overs); C5, C6, C7, Q14",
        recipe="3 controllers; b3 cut from every controller (fenced); kill the active controller; heal",
        variants=("v3.5", "kip966"), expected=dict(_BOTH),
        spec_options={**COMMON, **NO_ADMIN, "test_name": "quorum-broker-epoch", "topic": EPOCH_TOPIC, "brokers": 3,
                      "replication_factor": 3},
        script=script_broker_epoch, judge=judge_broker_epoch, assignment={0: [1, 2, 3]}),
    Scenario(
        name="quorum-deposed-controller",
        summary="an isolated active controller's late decisions never commit; another voter takes over",
        reproduces="PROTOCOL.md C1 (zombie controllers are harmless); Q9, Q11, Q14",
        recipe="3 controllers; the active controller cut from every node; heal",
        variants=("v3.5", "kip966"), expected=dict(_BOTH),
        spec_options={**COMMON, **CUTS_ONLY, "test_name": "quorum-deposed-controller", "topic": DEPOSED_TOPIC,
                      "brokers": 3, "replication_factor": 3, "broker_session_timeout_ms": 2000},
        script=script_deposed, judge=judge_deposed, assignment={0: [1, 2, 3]}),
    Scenario(
        name="quorum-loss",
        summary="two of three controllers down: metadata frozen, writes go on; recovery from the committed log",
        reproduces="issue 25 (quorum loss and recovery); Q8, Q14",
        recipe="3 controllers, 4 brokers; kill two controllers; a reassignment is refused; restart them; "
               "the reassignment completes",
        variants=("v3.5", "kip966"), expected=dict(_BOTH),
        spec_options={**COMMON, **KILLS_ONLY, "test_name": "quorum-loss", "topic": LOSS_TOPIC, "brokers": 4,
                      "replication_factor": 3, "time_limit_s": 90.0},
        script=script_quorum_loss, judge=judge_quorum_loss, assignment={0: [1, 2, 3]}),
]
