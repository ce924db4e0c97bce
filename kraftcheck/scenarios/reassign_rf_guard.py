"""Seed 003 (KIP-860): AlterPartitionReassignments v1 with ``allowReplicationFactorChange=false``, refused per
partition, and the describe-then-reassign race it guards (``reassign-rf-guard``).

Six brokers, two partitions on [1, 2, 3]. Admin client A moves both to [4, 5, 6] (the seed's example);
broker 6 is held back from the leader, so both moves stay in progress. Admin client B runs concurrently,
as the tool in the KIP does: it describes the topic, sees the intermediate replica set (RF 6, because
Metadata does not say a reassignment is running) and, meaning to keep the replication factor it saw, asks:

1. in one v1 request with the flag false: partition 0 to the six replicas it saw, partition 1 to
   [4, 5, 6]. The controller compares with the in-progress target (size 3, seed 003: "the validation
   compares the targetReplicaSet size of the reassignment to the targetReplicaSet size of the new
   reassignment"): partition 0 is refused with INVALID_REPLICATION_FACTOR and nothing is committed for it,
   partition 1 (same size) is accepted - per partition, in the same request;
2. then without the guard (flag true, what every client sent before KIP-860): partition 1 to the six
   replicas it saw, which is accepted and solidifies RF 6 - the hazard the KIP describes.

After broker 6 is released, partition 0 completes at [4, 5, 6] (RF 3 kept) and partition 1 at RF 6.
Both variants expect the same; both runs must be valid.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from harness.spec import RunSpec
from kraftcheck.scenarios import live, observe
from kraftcheck.scenarios.base import COMMON, Scenario
from kraftcheck.scenarios.checks import check, first, no_acked_loss, same_set, verdict
from kraftcheck.scenarios.live import both_ways, expect_effective
from kraftcheck.scenarios.script import ScenarioError
from nemesis.admin import RF_GUARD_ERROR, AdminNemesis

TOPIC = "rf-guard"
ORIGINAL, TARGET = [1, 2, 3], [4, 5, 6]


class RacingAdmin:
    """Admin client B (module docstring): describe, then reassign to keep the replication factor it saw."""

    def __init__(self, runner: Any, run: Any):
        self.runner, self.run = runner, run
        self.nemesis = AdminNemesis()
        self.seen: dict[int, list[int]] = {}
        self.answers: list[dict[str, Any]] = []
        self.error: str | None = None
        self.thread = threading.Thread(target=self._race, name="kraftcheck-admin-b", daemon=True)

    def _race(self) -> None:
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                seen = {p: s["replicas"] for p, s in self.nemesis.describe(self.run, TOPIC).items()}
                if all(len(r) == 6 for r in seen.values()) and len(seen) == 2:
                    self.seen = seen
                    break
                time.sleep(0.05)
            else:
                self.error = "admin client B never saw the intermediate replica set"
                return
            guarded = self.runner.record_op(self.run, self.nemesis, "reassign", {
                "topic": TOPIC, "targets": {0: self.seen[0], 1: TARGET}, "allow_rf_change": False,
                "expect": {0: RF_GUARD_ERROR, 1: None}, "client": "B"})
            unguarded = self.runner.record_op(self.run, self.nemesis, "reassign", {
                "topic": TOPIC, "targets": {1: self.seen[1]}, "allow_rf_change": True, "client": "B"})
            self.answers = [guarded.get("value") or {}, unguarded.get("value") or {}]
        except Exception as exc:  # reported by the script, which stops the run
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.nemesis.teardown(self.run)


def script(runner: Any, run: Any, cluster: Any) -> None:
    """The steps of the module docstring."""
    p0, p1 = live.PartitionWatch(runner, run, TOPIC, 0), live.PartitionWatch(runner, run, TOPIC, 1)
    for watch in (p0, p1):
        watch.until(f"partition {watch.partition}: ISR [1, 2, 3] under leader 1",
                    lambda s, e: s["isr"] == ORIGINAL and s["leader"] == 1, 30)
    acked = live.produce(runner, run, cluster, [1, 2], partition=0) + live.produce(runner, run, cluster, [3, 4], 1)
    runner.step(run, "produce", f"acknowledged [offset, value] {acked}", acked=acked)
    runner.fault(run, "start-partition", {"topology": "hold-b6", "edges": both_ways("b6", "b1")})

    racer = RacingAdmin(runner, run)
    racer.thread.start()
    a = expect_effective(runner.admin(run, "reassign", {"topic": TOPIC, "targets": {0: TARGET, 1: TARGET},
                                                        "client": "A"}),
                         "client A: AlterPartitionReassignments [1,2,3] -> [4,5,6] for both partitions")
    runner.step(run, "client-A", f"A moved both partitions to {TARGET}: {a.get('errors')}", answer=a.get("errors"))
    racer.thread.join(40)
    if racer.error or len(racer.answers) != 2:
        raise ScenarioError(f"admin client B: {racer.error or 'did not finish'}")
    guarded, unguarded = racer.answers
    runner.step(run, "client-B", f"B saw replicas {racer.seen}; with the guard: {guarded.get('errors')}; "
                f"without: {unguarded.get('errors')}", seen=racer.seen, guarded=guarded.get("errors"),
                unguarded=unguarded.get("errors"))
    if guarded.get("effective") is not True or unguarded.get("effective") is not True:
        raise ScenarioError(f"client B was not answered as the seed says: {guarded.get('errors')}, "
                            f"{unguarded.get('errors')}")

    runner.fault(run, "stop-partition", {})
    done0 = p0.until("partition 0 to complete at RF 3",
                     lambda s, e: s["replicas"] == TARGET and not s["adding"] and not s["removing"], 40)
    done1 = p1.until("partition 1 to complete at RF 6", lambda s, e: len(s["replicas"]) == 6 and not s["adding"]
                     and not s["removing"] and len(s["isr"]) == 6, 40)
    runner.step(run, "complete", f"p0 {observe.describe_assignment(done0)}; p1 {observe.describe_assignment(done1)}",
                p0=done0, p1=done1)


def judge(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
          events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of the module docstring against the stored history and trace."""
    topic = spec.topic
    answers = [op.get("value") or {} for op in ops if op.get("process") == "nemesis" and op.get("f") == "reassign"
               and op.get("type") == "ok"]
    by_client = {"A": [a for a in answers if a.get("client") == "A"], "B": [a for a in answers if a.get("client") == "B"]}
    a = by_client["A"][0] if by_client["A"] else {}
    guarded = next((x for x in by_client["B"] if x.get("allow_rf_change") is False), {})
    unguarded = next((x for x in by_client["B"] if x.get("allow_rf_change") is True), {})
    b_step = next((s for s in steps if s["step"] == "client-B"), {})
    seen = {int(k): v for k, v in (b_step.get("seen") or {}).items()}
    guarded_errors = {int(k): v for k, v in (guarded.get("errors") or {}).items()}
    unguarded_errors = {int(k): v for k, v in (unguarded.get("errors") or {}).items()}
    s0 = observe.controller_states(events, topic, 0)
    s1 = observe.controller_states(events, topic, 1)
    targeted_rf6 = [s for s in s0 if len(s["replicas"]) == 6 and not s["removing"]]
    final0 = first(list(reversed(s0)), lambda s: not s["adding"] and not s["removing"])
    final1 = first(list(reversed(s1)), lambda s: not s["adding"] and not s["removing"])
    f0, f1 = final0 or {}, final1 or {}
    checks = [
        check("client A's moves are accepted", a and all(e is None for e in (a.get("errors") or {}).values()),
              "no error for partitions 0 and 1", a.get("errors"), "C16, C18"),
        check("client B's describe shows the intermediate replica set (RF 6)", len(seen) == 2
              and all(same_set(r, ORIGINAL + TARGET) for r in seen.values()), "{1..6} for both partitions", seen,
              "seed 003 race"),
        check("with the flag false, the RF-changing partition is refused", guarded_errors.get(0) == RF_GUARD_ERROR,
              RF_GUARD_ERROR, guarded_errors.get(0), "KIP-860"),
        check("...and the same-size partition in the same request is accepted", 1 in guarded_errors
              and guarded_errors[1] is None, "no error", guarded_errors.get(1), "KIP-860"),
        check("the refused change commits nothing: partition 0 never targets RF 6", not targeted_rf6,
              "no state with six replicas and nothing to remove", [observe.describe_assignment(s) for s in targeted_rf6],
              "KIP-860"),
        check("partition 0 completes at RF 3", final0 is not None and f0["replica_order"] == TARGET,
              f"RS {TARGET}", observe.describe_assignment(final0), "C17"),
        check("without the guard the race's request is accepted", 1 in unguarded_errors
              and unguarded_errors[1] is None, "no error (the pre-KIP-860 behaviour)", unguarded_errors.get(1),
              "seed 003 race"),
        check("...and solidifies RF 6 on partition 1", final1 is not None and len(f1["replicas"]) == 6,
              "six replicas", observe.describe_assignment(final1), "seed 003 race"),
        no_acked_loss(ops, 0),
        no_acked_loss(ops, 1),
    ]
    facts = {"client B saw (Metadata replicas)": seen, "client B with the guard (v1, flag false)": guarded_errors,
             "client B without the guard": unguarded_errors,
             "partition 0 states": [observe.describe_assignment(s) for s in s0],
             "partition 1 states": [observe.describe_assignment(s) for s in s1]}
    return verdict(spec.scenario, spec.variant, EXPECTATION, checks, facts, results)


EXPECTATION = ("with allowReplicationFactorChange=false the controller refuses, per partition, the reassignment "
               "that would turn the in-progress RF 3 move into RF 6 (INVALID_REPLICATION_FACTOR) and accepts the "
               "same-size one in the same request; without the flag the racing client solidifies RF 6; valid")

SCENARIOS = [Scenario(
    name="reassign-rf-guard",
    summary="KIP-860 allowReplicationFactorChange=false refused per partition; the describe-then-reassign race",
    reproduces="seed 003 (KIP-860 AlterPartitionReassignments v1, the race condition example)",
    recipe="6 brokers, two partitions on [1,2,3]; client A moves both to [4,5,6] (6 held back); client B "
           "describes and re-targets to the six replicas it saw, with the guard, then without",
    variants=("v3.5", "kip966"),
    expected={"v3.5": "valid", "kip966": "valid"},
    spec_options={**COMMON, "test_name": "reassign-rf-guard", "topic": TOPIC, "keys": 2, "brokers": 6,
                  "replication_factor": 3},
    script=script,
    judge=judge,
    assignment={0: list(ORIGINAL), 1: list(ORIGINAL)},
    aliases=("seed-003", "kip-860"),
)]
