"""Broker lifecycle on a live cluster: registration gating and controlled shutdown (PROTOCOL.md catalog 12
and 28; C3-C9, B1-B4, K4).

**Registration gating** (``registration-gating``): broker 3 is killed (kill -9) and started again at
once. Its new incarnation asks to register while the controller still holds the old registration
unfenced: refused, DUPLICATE_BROKER_REGISTRATION (C3), and retried. When the old session expires the
controller fences it (C6) and the next attempt is accepted with a larger broker epoch (C4); the broker
is unfenced once caught up (C5) and the leader adds it back (L15). (The seed's third case, the same
incarnation's retry being accepted, needs a registration answer lost in transit; a live cluster does not
produce that on demand.)

**Controlled shutdown** (``controlled-shutdown``): leader 1 gets SIGTERM while a client keeps writing
with acks=all. It heartbeats want_shutdown; the controller puts it in CONTROLLED_SHUTDOWN and moves its
leaderships to other ISR members (C8), and only then lets it go (SHUTDOWN_NOW: fenced, C9). The broker
flushes, writes its clean-shutdown marker (B4, K4) and exits 0. Started again it registers at once (its
old registration is already fenced) with a larger epoch; under KIP-966 its registration carries the
previous epoch from the marker, so it is not treated as unclean (K4). No acknowledged write is lost.

Both scenarios expect the same on both variants; both runs must be valid.
"""

from __future__ import annotations

import threading
from typing import Any

from harness.spec import RunSpec
from kraftcheck.scenarios import live, observe
from kraftcheck.scenarios.base import COMMON, Scenario
from kraftcheck.scenarios.checks import check, no_acked_loss, verdict
from workloads import queue

GATING_TOPIC, SHUTDOWN_TOPIC = "gating", "shutdown"

# -- registration gating --------------------------------------------------------------------------------


def script_gating(runner: Any, run: Any, cluster: Any) -> None:
    """Registration gating (module docstring)."""
    watch = live.PartitionWatch(runner, run, GATING_TOPIC)
    watch.until("ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == [1, 2, 3] and s["leader"] == 1, 30)
    acked = live.produce(runner, run, cluster, [1, 2, 3])
    runner.step(run, "produce", f"acknowledged [offset, value] {acked}", acked=acked)
    killed_at = live.now_ns()
    killed = runner.fault(run, "kill", {"nodes": ["b3"]})["value"]
    started = runner.fault(run, "start", {"nodes": ["b3"]})["value"]
    runner.step(run, "restarted", f"b3 killed (pid {killed.get('killed', {}).get('b3')}) and started at once "
                f"(pid {started.get('started', {}).get('b3')})")
    refused = watch.until_event("the new incarnation to be refused (C3)", "registration_failed", 20,
                                after_ns=killed_at, broker=3)
    runner.step(run, "refused", f"registration refused: {refused.get('error')}")
    accepted = watch.until_event("the new incarnation to be registered (C4)", "registered",
                                 runner.spec.broker_session_timeout_ms / 1000 + 15, after_ns=killed_at,
                                 source="controller", broker=3)
    back = watch.until("broker 3 back in the ISR", lambda s, e: s["isr"] == [1, 2, 3], 30)
    runner.step(run, "rejoined", f"registered with epoch {accepted.get('broker_epoch')}; "
                f"{observe.describe_state(back)}", state=back)


def judge_gating(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
                 events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of registration gating against the stored trace."""
    kill_t = next((op["time"] for op in ops if op.get("f") == "kill" and op.get("type") == "invoke"), None)
    epochs = observe.broker_epochs(events, 3)
    regs = observe.events_of(events, "registered", source="controller", broker=3, after=kill_t)
    accepted = regs[0] if regs else {}
    fences = observe.events_of(events, "fenced", source="controller", broker=3, after=kill_t)
    fence = fences[0] if fences else {}
    refused = observe.events_of(events, "registration_failed", broker=3, after=kill_t)
    refused_before = [e for e in refused if fence and e["time"] < fence["time"]]
    unfenced = observe.events_of(events, "unfenced", source="controller", broker=3, after=accepted.get("time"))
    states = observe.controller_states(events, spec.topic, 0)
    back = [s for s in states if accepted and s["time"] > accepted["time"] and 3 in s["isr"]]
    old = epochs[0] if epochs else None
    checks = [
        check("the new incarnation is refused while the old registration is unfenced", bool(refused_before)
              and all(e.get("error") == "DUPLICATE_BROKER_REGISTRATION" for e in refused_before),
              "DUPLICATE_BROKER_REGISTRATION before the fence", sorted({e.get("error") for e in refused_before}), "C3"),
        check("the old session is fenced when it expires", bool(fence) and fence.get("broker_epoch") == old,
              f"fenced epoch {old}", fence.get("broker_epoch"), "C6"),
        check("then the registration is accepted with a larger epoch", bool(accepted) and bool(fence)
              and accepted["time"] > fence["time"] and old is not None and accepted.get("broker_epoch", -1) > old,
              f"epoch > {old} after the fence", {"epochs": epochs}, "C4"),
        check("the new incarnation is unfenced and added back", bool(unfenced) and bool(back),
              "unfenced, then in the ISR", {"unfenced": bool(unfenced),
                                            "ISR": observe.describe_state(back[0]) if back else None}, "C5, L15"),
        no_acked_loss(ops),
    ]
    facts = {"broker 3 epochs": epochs, "refused registrations": len(refused),
             "controller states": [observe.describe_state(s) for s in states]}
    return verdict(spec.scenario, spec.variant, EXPECT_GATING, checks, facts, results)


EXPECT_GATING = ("a restarted broker's new incarnation is refused (DUPLICATE_BROKER_REGISTRATION) until its old "
                 "session is fenced, then registered with a larger epoch, unfenced and re-added; valid")

# -- controlled shutdown --------------------------------------------------------------------------------


class SteadyWriter:
    """A client writing acks=all records one after another in a thread until stopped (process 0)."""

    def __init__(self, runner: Any, run: Any, cluster: Any):
        self.runner, self.run = runner, run
        self.client = queue.client_factory(runner.spec, cluster, run)(0)
        self.outcomes: list[str] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._write, name="kraftcheck-writer", daemon=True)

    def _write(self) -> None:
        value = 1000
        while not self._stop.is_set():
            value += 1
            done = self.runner.client_op(self.run, self.client, 0, {"f": "send", "value": [0, value]}, None)
            self.outcomes.append(done["type"])
            self._stop.wait(0.05)

    def stop(self) -> None:
        """Stop writing and close the client."""
        self._stop.set()
        self.thread.join(30)
        self.client.close()


def script_shutdown(runner: Any, run: Any, cluster: Any) -> None:
    """Controlled shutdown (module docstring)."""
    watch = live.PartitionWatch(runner, run, SHUTDOWN_TOPIC)
    watch.until("ISR [1, 2, 3] under leader 1", lambda s, e: s["isr"] == [1, 2, 3] and s["leader"] == 1, 30)
    writer = SteadyWriter(runner, run, cluster)
    writer.thread.start()
    try:
        runner.wait_for(run, "a few acknowledged writes", lambda: (writer.outcomes.count("ok") >= 5, writer.outcomes[-3:]),
                        20)
        stopped = runner.fault(run, "stop", {"nodes": ["b1"]})["value"]
        moved = watch.until("leadership to move away from broker 1", lambda s, e: s["leader"] in (2, 3), 20)
        runner.step(run, "shut-down", f"b1 stopped, exit code {stopped.get('exit_codes', {}).get('b1')}; "
                    f"controller: {observe.describe_state(moved)}", exit_code=stopped.get("exit_codes", {}).get("b1"),
                    state=moved)
        restarted_at = live.now_ns()
        runner.fault(run, "start", {"nodes": ["b1"]})
        registered = watch.until_event("broker 1 to register again", "registered", 20, after_ns=restarted_at,
                                       source="controller", broker=1)
        back = watch.until("broker 1 back in the ISR", lambda s, e: s["isr"] == [1, 2, 3], 30)
        runner.step(run, "restarted", f"registered with epoch {registered.get('broker_epoch')} (previous "
                    f"{registered.get('previous_broker_epoch')}); {observe.describe_state(back)}", state=back)
        runner.wait_for(run, "writes to continue after the restart", lambda: (
            writer.outcomes[-3:] == ["ok"] * 3, writer.outcomes[-3:]), 20)
    finally:
        writer.stop()
    runner.step(run, "writes", f"{writer.outcomes.count('ok')} acknowledged, {writer.outcomes.count('info')} "
                f"indeterminate, {writer.outcomes.count('fail')} failed", outcomes={
                    t: writer.outcomes.count(t) for t in ("ok", "info", "fail")})


def judge_shutdown(spec: RunSpec, steps: list[dict[str, Any]], ops: list[dict[str, Any]],
                   events: list[dict[str, Any]], results: dict[str, Any]) -> dict[str, Any]:
    """Checks of controlled shutdown against the stored trace and history."""
    topic = spec.topic
    stop_t = next((op["time"] for op in ops if op.get("f") == "stop" and op.get("type") == "invoke"), None)
    start_t = next((op["time"] for op in ops if op.get("f") == "start" and op.get("type") == "invoke"), None)
    entered = [e for e in observe.events_of(events, "broker_registration_change", source="controller", broker=1,
                                            after=stop_t) if e.get("in_controlled_shutdown")]
    fences = observe.events_of(events, "fenced", source="controller", broker=1, after=stop_t)
    fence = fences[0] if fences else {}
    moves = [e for e in observe.elections(events, topic, 0, after=stop_t) if e.get("previous_leader") == 1]
    move = moves[0] if moves else {}
    clean = observe.events_of(events, "shutdown", node_name="b1", after=stop_t, before=start_t)
    step = next((s for s in steps if s["step"] == "shut-down"), {})
    epochs = observe.broker_epochs(events, 1)
    regs = observe.events_of(events, "registered", source="controller", broker=1, after=start_t)
    reg = regs[0] if regs else {}
    refused = observe.events_of(events, "registration_failed", broker=1, after=start_t)
    checks = [
        check("the controller puts broker 1 in controlled shutdown", bool(entered), "in_controlled_shutdown true",
              len(entered), "C8"),
        check("its leadership moves to another ISR member before it is let go", bool(move) and bool(fence)
              and move["time"] <= fence["time"] and move.get("type") == "clean" and move.get("leader") in (2, 3),
              "a clean election away from 1, then the fence", {"election": move, "fenced": bool(fence)}, "C8, C9"),
        check("the broker shuts down cleanly", any(e.get("clean") for e in clean) and step.get("exit_code") == 0,
              "shutdown clean, exit 0", {"clean": [e.get("clean") for e in clean], "exit": step.get("exit_code")},
              "B4"),
        check("restarted, it registers at once with a larger epoch", bool(reg) and not refused and len(epochs) >= 2
              and epochs[-1] > epochs[0], "no refusal, epoch grows", {"epochs": epochs, "refused": len(refused)},
              "C3, C4"),
        no_acked_loss(ops),
    ]
    if spec.variant == "kip966":
        checks.append(check("its registration carries the previous epoch from the clean-shutdown marker",
                            bool(reg) and reg.get("previous_broker_epoch") == epochs[0], f"previous {epochs[:1]}",
                            reg.get("previous_broker_epoch"), "K4"))
    writes = next((s.get("outcomes") for s in steps if s["step"] == "writes"), {})
    facts = {"writes during the run": writes, "broker 1 epochs": epochs, "elections": observe.elections(events, topic, 0),
             "controller states": [observe.describe_state(s) for s in observe.controller_states(events, topic, 0)]}
    return verdict(spec.scenario, spec.variant, EXPECT_SHUTDOWN, checks, facts, results)


EXPECT_SHUTDOWN = ("the leader's SIGTERM moves its leadership to an ISR member before it is fenced; it exits cleanly, "
                   "re-registers at once with a larger epoch, and no acknowledged write is lost; valid")

SCENARIOS = [
    Scenario(
        name="registration-gating",
        summary="a restarted broker's new incarnation is refused until its old session is fenced",
        reproduces="PROTOCOL.md catalog 12 (registration gating); seed 004 broker epochs",
        recipe="3 brokers; kill -9 broker 3 and start it at once; wait for the fence and the new registration",
        variants=("v3.5", "kip966"),
        expected={"v3.5": "valid", "kip966": "valid"},
        spec_options={**COMMON, "test_name": "registration-gating", "topic": GATING_TOPIC, "brokers": 3,
                      "replication_factor": 3, "nemesis": ["kill"], "broker_session_timeout_ms": 6000},
        script=script_gating,
        judge=judge_gating,
        assignment={0: [1, 2, 3]},
        needs_root_locally=False,
        aliases=("catalog-12",),
    ),
    Scenario(
        name="controlled-shutdown",
        summary="SIGTERM to the leader: leadership moves before the broker is let go; nothing acknowledged lost",
        reproduces="PROTOCOL.md catalog 28 (controlled shutdown), C8/C9, B4, K4",
        recipe="3 brokers, a client writing acks=all; SIGTERM leader 1, then start it again",
        variants=("v3.5", "kip966"),
        expected={"v3.5": "valid", "kip966": "valid"},
        spec_options={**COMMON, "test_name": "controlled-shutdown", "topic": SHUTDOWN_TOPIC, "brokers": 3,
                      "replication_factor": 3, "nemesis": ["stop"], "broker_session_timeout_ms": 6000},
        script=script_shutdown,
        judge=judge_shutdown,
        assignment={0: [1, 2, 3]},
        needs_root_locally=False,
        aliases=("catalog-28",),
    ),
]
