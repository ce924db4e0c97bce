"""Seed 002 (KIP-435): the incremental, batched reassignment of one partition from (0, 1, 2, 3, 4) to
(5, 6, 7, 8, 9), under several ``reassignment.parallel.replica.count`` settings (``reassign-incremental``).

Broker ids here start at 1, so the seed's example is (1, 2, 3, 4, 5) -> (6, 7, 8, 9, 10) on ten brokers,
RF 5, MinISR 2, with the controller in ``reassignment.mode=incremental``. Three phases on one cluster, the
parallelism set live (IncrementalAlterConfigs on the cluster-wide broker resource) before each:

1. R = 2, (1..5) -> (6..10): the seed's worked example, step for step and in order:
   (6, 1, 2, 3, 4, 5) "+6, new leader (6) is elected"; (6, 7, 3, 4, 5) "-[1,2] +[7]";
   (6, 7, 8, 9, 5) "-[3,4] +[8,9]"; (6, 7, 8, 9, 10) "-[5] +[10], requested order is matched";
2. R = 1, back to (1..5); 3. R = 3, forward again. For these the seed gives rules, not a table, and
   each step is checked against them: the first step puts the new preferred leader in front and drops
   nothing, after which it is elected; every later step drops at most R replicas and adds at most R; the
   last step is the final target in its requested order.

Each step is an ordinary reassignment (grow, then completion, C16-C21), so the controller's trace shows
every batch as the grow state's adding/removing sets. An admin client polls ListPartitionReassignments
throughout (KIP-435: the current batch is visible there); every batch it saw must be one of the steps'.
Both variants expect the same; both runs must be valid.
"""

from __future__ import annotations

from typing import Any

from harness.spec import RunSpec
from kraftcheck.scenarios import live, observe
from kraftcheck.scenarios.base import COMMON, Scenario
from kraftcheck.scenarios.checks import Check, check, no_acked_loss, verdict
from kraftcheck.scenarios.live import expect_effective

TOPIC = "incremental"
LOW, HIGH = [1, 2, 3, 4, 5], [6, 7, 8, 9, 10]
PHASES = ((2, HIGH), (1, LOW), (3, HIGH))  # (reassignment.parallel.replica.count, final target)
SEED_EXAMPLE = [[6, 1, 2, 3, 4, 5], [6, 7, 3, 4, 5], [6, 7, 8, 9, 5], [6, 7, 8, 9, 10]]
PARALLEL_REPLICAS = "reassignment.parallel.replica.count"


def script(runner: Any, run: Any, cluster: Any) -> None:
    """The three phases of the module docstring."""
    watch = live.PartitionWatch(runner, run, TOPIC)
    placed = watch.until("all five replicas in the ISR under leader 1",
                         lambda s, e: s["isr"] == LOW and s["leader"] == 1, 30)
    runner.step(run, "placed", observe.describe_assignment(placed), state=placed)
    acked = live.produce(runner, run, cluster, [1, 2, 3])
    runner.step(run, "produce", f"acknowledged [offset, value] {acked}", acked=acked)
    for r_count, final in PHASES:
        expect_effective(runner.admin(run, "set-reassignment-mode", {"configs": {PARALLEL_REPLICAS: r_count}}),
                         f"{PARALLEL_REPLICAS}={r_count}")
        # A batch of one replica with little data to copy lasts well under 100 ms: poll at 50 Hz.
        with live.ListingRecorder(cluster, TOPIC, interval_s=0.02) as listings:
            expect_effective(runner.admin(run, "reassign", {"topic": TOPIC, "targets": {0: final}}),
                             f"AlterPartitionReassignments -> {final}")
            done = watch.until(f"the move to {final} to finish (R={r_count})",
                               lambda s, e, f=final: s["replica_order"] == f and not s["adding"] and not s["removing"],
                               90)
            runner.wait_for(run, "ListPartitionReassignments to list nothing",
                            lambda: (listings.seen and listings.seen[-1]["listed"] is None, listings.seen[-1:]), 15)
        batches = [{"time": runner.history_time(x["time"]), "listed": x["listed"]} for x in listings.seen]
        runner.step(run, f"phase-r{r_count}", f"R={r_count}: reached {observe.describe_assignment(done)}; "
                    f"{sum(1 for b in batches if b['listed'])} batches listed", r_count=r_count, final=final,
                    listed=batches, listing_errors=listings.errors)


def committed_steps(states: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The KIP-435 steps as committed, in order. A step that adds replicas is a grow state (adding or
    removing non-empty) and the state that completed it; a step that only drops replicas is one change
    (C18: C17 already holds), seen as a settled state whose replicas differ from the previous one's.
    ``target`` is the replica order the step reached, ``added``/``dropped`` its sets, ``current`` where it
    started."""
    steps: list[dict[str, Any]] = []
    grow, settled = None, None
    for s in states:
        if s["adding"] or s["removing"]:
            grow = grow or s
            continue
        if grow is not None:
            steps.append({"grow": grow, "done": s, "target": s["replica_order"], "added": grow["adding"],
                          "dropped": grow["removing"],
                          "current": settled["replica_order"] if settled is not None else
                          [r for r in grow["replica_order"] if r not in grow["adding"]]})
        elif settled is not None and s["replicas"] != settled["replicas"]:
            steps.append({"grow": s, "done": s, "target": s["replica_order"],
                          "added": sorted(set(s["replicas"]) - set(settled["replicas"])),
                          "dropped": sorted(set(settled["replicas"]) - set(s["replicas"])),
                          "current": settled["replica_order"]})
        grow, settled = None, s
    return steps


def phase_checks(r_count: int, final: list[int], steps: list[dict[str, Any]], states: list[dict[str, Any]],
                 listed: list[dict[str, Any]]) -> list[Check]:
    """The seed's rules for one phase (module docstring)."""
    label = f"R={r_count} ->{final}"
    targets = [s["target"] for s in steps]
    out: list[Check] = []
    if r_count == 2 and final == HIGH:
        out.append(check(f"{label}: the seed's example, step for step", targets == SEED_EXAMPLE, SEED_EXAMPLE,
                         targets, "seed 002"))
    if not steps:
        return out + [check(f"{label}: steps committed", False, "at least one step", "none")]
    head = steps[0]
    out.append(check(f"{label}: the first step puts the new preferred leader in front and drops nothing",
                     head["added"][:1] == [final[0]] and not head["dropped"] and head["target"][0] == final[0],
                     f"+{final[0]} in front, nothing dropped", {"target": head["target"], "added": head["added"],
                                                                 "dropped": head["dropped"]}, "seed 002 step 3.2"))
    second = steps[1]["grow"]["time"] if len(steps) > 1 else None
    elected = [s for s in states if s["time"] > head["done"]["time"] and (second is None or s["time"] < second)
               and s["leader"] == final[0]]
    out.append(check(f"{label}: the new preferred leader is elected after the first step", bool(elected)
                     or head["done"]["leader"] == final[0], f"leader {final[0]} before the next step",
                     [observe.describe_assignment(s) for s in elected[:1]] or head["done"]["leader"], "seed 002"))
    later = [{"dropped": s["dropped"], "added": s["added"]} for s in steps[1:]]
    out.append(check(f"{label}: every later step drops and adds at most R replicas",
                     all(len(s["dropped"]) <= r_count and len(s["added"]) <= r_count for s in later),
                     f"|dropped|, |added| <= {r_count}", later, "seed 002 steps 2-3"))
    out.append(check(f"{label}: the last step is the final target in its requested order", targets[-1] == final,
                     final, targets[-1], "seed 002 step 5"))
    batches = [(b["listed"]["adding"], b["listed"]["removing"]) for b in listed if b["listed"]
               and (b["listed"]["adding"] or b["listed"]["removing"])]
    committed = [(s["added"], s["dropped"]) for s in steps]
    out.append(check(f"{label}: every batch ListPartitionReassignments showed is one of the steps'",
                     bool(batches) and all(b in committed for b in batches),
                     "listed (adding, removing) pairs among the committed steps'", {"listed": batches,
                                                                                     "steps": committed}, "KIP-435"))
    return out


def judge(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
          events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Each phase's committed steps against the seed (module docstring)."""
    topic = spec.topic
    states = observe.controller_states(events, topic, 0)
    reassigns = [op["time"] for op in ops if op.get("process") == "nemesis" and op.get("f") == "reassign"
                 and op.get("type") == "invoke"]
    phases = [s for s in steps if s["step"].startswith("phase-r")]
    checks: list[Check] = []
    facts: dict[str, Any] = {}
    for i, phase in enumerate(phases):
        start = reassigns[i] if i < len(reassigns) else None
        end = phase["time"]
        window = [s for s in states if start is not None and start <= s["time"] <= end]
        found = committed_steps(window)
        checks += phase_checks(phase["r_count"], phase["final"], found, window, phase.get("listed") or [])
        facts[f"R={phase['r_count']} -> {phase['final']}: committed steps"] = [
            f"{s['current']} -> {s['target']} (+{s['added']} -{s['dropped']})" for s in found]
        facts[f"R={phase['r_count']}: batches listed"] = [b["listed"] for b in phase.get("listed") or []]
    if len(phases) != len(PHASES):
        checks.append(check("every phase ran", False, len(PHASES), len(phases)))
    checks.append(no_acked_loss(ops))
    return verdict(spec.scenario, spec.variant, EXPECTATION, checks, facts, results)


EXPECTATION = ("(1..5) -> (6..10) moves in the seed's batches with R=2 ((6,1,2,3,4,5), (6,7,3,4,5), (6,7,8,9,5), "
               "(6,7,8,9,10)), and by the seed's rules with R=1 and R=3; each batch is visible in "
               "ListPartitionReassignments; valid")

SCENARIOS = [Scenario(
    name="reassign-incremental",
    summary="KIP-435 batched reassignment (1..5) -> (6..10) under parallel replica counts 2, 1 and 3",
    reproduces="seed 002 (KIP-435 incremental batched reassignment, the (0..4) -> (5..9) example)",
    recipe="10 brokers, RF 5 on [1..5], reassignment.mode=incremental; R=2 forward, R=1 back, R=3 forward",
    variants=("v3.5", "kip966"),
    expected={"v3.5": "valid", "kip966": "valid"},
    spec_options={**COMMON, "test_name": "reassign-incremental", "topic": TOPIC, "brokers": 10,
                  "replication_factor": 5, "reassignment_mode": "incremental", "nemesis": ["admin"],
                  "recovery_timeout_s": 60.0},
    script=script,
    judge=judge,
    assignment={0: list(LOW)},
    aliases=("seed-002", "kip-435"),
)]
