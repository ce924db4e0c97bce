"""Trace-triggered strikes: wait for a protocol moment in the live trace, then kill -9 or pause a node.

``strike`` ``{"trigger": isr-expand|leader-epoch|reassignment|truncate, "victim": leader|joining|controller,
"action": kill|pause, "provoke": bool, "wait_s": S}``:

1. the member catches up with every node's trace (``tail.TraceTail``; what is already written only
   teaches it who leads, ``triggers.Leaders``);
2. with ``provoke`` it makes the moment likely: for ``isr-expand`` and ``truncate`` it kills a replica
   (a follower, respectively the leader) and restarts it after ``provoke_down_s`` (longer than the broker
   session timeout, so the replica is fenced, leaves the ISR and must come back); for ``leader-epoch`` it
   kills the leader (the next leader starts an epoch); for ``reassignment`` it asks the controller to
   add a replica that must catch up (taking a follower out first when every broker holds one);
3. it polls the traces every few milliseconds and, at the first event that ``triggers.match``es, strikes
   the victim the moment names: the partition's ``leader``, the ``joining`` replica, or the ``controller``.

Lasting: the struck node (and a provoked one still down) stays down or paused until ``end-strike`` (or the
final heal) restarts or resumes it.

Evidence: the triggering event (kind, node, its trace time), the victim and its pid, ``reaction_ms`` (from
the event's time to the signal, both on the kernel's monotonic clock, which nodes and harness share) and
the proof of the strike (the pid gone, or process state ``T``). ``effective``: a trigger was seen and the
victim was struck with proof. No trigger within ``wait_s`` is reported as such, not effective.
"""

from __future__ import annotations

import os
import random
import signal
import time
from typing import Any

from harness.interfaces import Killable, Pausable
from nemesis.admin import AdminNemesis
from nemesis.base import NemesisUnsupported, host_label, restart_nodes
from nemesis.clock import expected_nodes
from nemesis.targeted.aim import aim, broker_ids, node_of, topic_of
from nemesis.targeted.tail import TRACE_FILE, TraceTail
from nemesis.targeted.triggers import KINDS, Leaders, Moment, match

POLL_S = 0.003


def _wait(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


class StrikeNemesis:
    """strike / end-strike (see the module docstring)."""

    FS = {"strike", "end-strike"}

    def __init__(self, wait_s: float = 25.0, provoke_down_s: float = 8.0, poll_s: float = POLL_S):
        self.wait_s = wait_s
        self.provoke_down_s = provoke_down_s
        self.poll_s = poll_s
        self.tail: TraceTail | None = None
        self.leaders = Leaders()
        self.down: set[str] = set()
        self.paused: set[str] = set()
        self.admin = AdminNemesis()

    def fs(self) -> set[str]:
        """The op names handled here."""
        return set(self.FS)

    def setup(self, run: Any) -> None:
        """Refuse when the host cannot signal or pause node processes."""
        for ability in (Killable, Pausable):
            if not isinstance(run.host, ability):
                raise NemesisUnsupported(
                    f"the {host_label(run)} host cannot strike nodes (no {ability.__name__} ability)")

    def _tail(self, run: Any) -> TraceTail:
        if self.tail is None:
            paths = {n: os.path.join(run.host.node_dir(n), TRACE_FILE) for n in expected_nodes(run)}
            self.tail = TraceTail(paths, KINDS)
        return self.tail

    # -- ops -----------------------------------------------------------------------------------
    def invoke(self, run: Any, op: dict) -> dict:
        """Strike on a trace moment, or end the strikes (restart and resume)."""
        value = dict(op.get("value") or {})
        evidence = self._end(run) if op["f"] == "end-strike" else self._strike(run, value)
        return {**op, "type": "ok", "value": {**value, **evidence}}

    def _strike(self, run: Any, value: dict) -> dict:
        trigger = value.get("trigger", "leader-epoch")
        victim = value.get("victim", "leader")
        action = value.get("action", "kill")
        tail = self._tail(run)
        for event in tail.poll():  # catch up: the past only says who leads
            self.leaders.see(event)
        evidence: dict[str, Any] = {"trigger": trigger, "victim": victim, "action": action}
        restart_at, provoked = None, None
        if value.get("provoke", True):
            provoked, restart_at, detail = self._provoke(run, trigger, value)
            evidence["provoked"] = detail
        deadline = time.monotonic() + float(value.get("wait_s", self.wait_s))
        moment = None
        while moment is None and time.monotonic() < deadline:
            for event in tail.poll():
                self.leaders.see(event)
                moment = moment or match(trigger, event, self.leaders)
            if moment is None:
                if restart_at is not None and time.monotonic() >= restart_at:
                    self._restart(run, provoked)
                    restart_at = None
                time.sleep(self.poll_s)
        if moment is None:
            return {**evidence, "nodes": [], "effective": False, "skipped": f"no {trigger} within the wait"}
        return {**evidence, **self._hit(run, moment, victim, action)}

    def _provoke(self, run: Any, trigger: str, value: dict) -> tuple[str | None, float | None, dict]:
        """Make the trigger's moment likely; returns (node to restart, when, evidence)."""
        if trigger == "reassignment":
            try:
                return None, None, self._provoke_reassignment(run, value)
            except Exception as exc:
                # A client still bound to a broker an earlier fault restarted: once more on a fresh one
                # (a first attempt that landed leaves a state the second plans from).
                self.admin.teardown(run)
                detail = self._provoke_reassignment(run, value)
                return None, None, {**detail, "retried": f"{type(exc).__name__}: {exc}"}
        target = "follower" if trigger == "isr-expand" else "leader"
        _, nodes = aim(run, {**value, "target": target})
        if not nodes:
            return None, None, {"skipped": f"no {target} to kill"}
        node = nodes[0]
        pid = run.cluster.kill_node(node)
        self.down.add(node)
        # A leader-epoch moment follows the kill itself; the others need the replica back.
        restart_at = None if trigger == "leader-epoch" else time.monotonic() + self.provoke_down_s
        return node, restart_at, {"killed": {node: pid}}

    def _provoke_reassignment(self, run: Any, value: dict) -> dict:
        """Add a replica that must catch up (the state with ``adding`` is the moment): a broker outside the
        set when there is one, else a follower taken out first and then added back."""
        topic = topic_of(run, value)
        rng = random.Random(value.get("pick", 0))
        state = self.admin.described(run, topic)
        partition = int(value["partition"]) if value.get("partition") is not None else rng.choice(sorted(state))
        replicas, leader = state[partition]["replicas"], state[partition]["leader"]
        outside = [b for b in broker_ids(run) if b not in replicas]
        steps: list[dict] = []
        if not outside:
            follower = rng.choice([r for r in replicas if r != leader] or replicas)
            replicas = [r for r in replicas if r != follower]
            error = self.admin.alter(run, topic, {partition: replicas}, True).get(partition, "NO_ANSWER")
            steps.append({"target": replicas, "error": error})
            _wait(lambda: self.admin.describe(run, topic).get(partition, {}).get("replicas") == replicas, 10.0)
            outside = [follower]
        target = [*replicas, rng.choice(outside)]
        error = self.admin.alter(run, topic, {partition: target}, True).get(partition, "NO_ANSWER")
        steps.append({"target": target, "error": error})
        return {"partition": partition, "reassign": steps}

    def _restart(self, run: Any, node: str | None) -> None:
        if node is None or node not in self.down:
            return
        try:
            run.cluster.restart_node(node)
            self.down.discard(node)
        except Exception:
            pass  # still in self.down: end-strike and the heal retry

    def _hit(self, run: Any, moment: Moment, victim: str, action: str) -> dict:
        """Signal the node ``moment`` points at for ``victim``; evidence of the strike."""
        seen_ns = time.monotonic_ns()
        if victim == "controller":
            node = run.cluster.active_controller()
        else:
            node = node_of(run, moment.leader if victim == "leader" else moment.joining)
        event = {k: moment.event.get(k) for k in ("kind", "node_name", "time", "topic", "partition")}
        out: dict[str, Any] = {"event": event, "nodes": [node] if node else []}
        pid = run.host.pid(node) if node else None
        if pid is None:
            return {**out, "effective": False, "skipped": f"no running {victim} for this moment"}
        sent_ns = time.monotonic_ns()
        if action == "pause":
            run.host.pause(node)
            self.paused.add(node)
            proven = _wait(lambda: run.host.process_state(node, pid) == "T", 5.0)
        else:
            run.host.kill(node, signal.SIGKILL)
            self.down.add(node)
            self.paused.discard(node)
            proven = _wait(lambda: run.host.process_state(node, pid) in (None, "Z") and not run.host.is_running(node),
                           10.0)
        event_ns = moment.event.get("time")
        return {**out, "pid": pid, "per_node": {node: proven},
                "reaction_ms": round((sent_ns - event_ns) / 1e6, 3) if isinstance(event_ns, int) else None,
                "detect_to_signal_ms": round((sent_ns - seen_ns) / 1e6, 3), "effective": proven}

    def _end(self, run: Any) -> dict:
        """Resume what this member paused and restart what it killed."""
        resumed = {}
        for node in sorted(self.paused):
            run.host.resume(node)
            resumed[node] = run.host.process_state(node, run.host.pid(node)) if run.host.pid(node) else None
        self.paused.clear()
        started, errors = restart_nodes(run, sorted(self.down))
        self.down -= set(started)
        running = all(run.host.is_running(n) for n in [*resumed, *started])
        out = {"resumed": resumed, "started": started, "effective": not errors and running,
               "nodes": sorted([*resumed, *started])}
        if errors:
            out["errors"] = errors
        return out

    def heal_all(self, run: Any) -> dict:
        """End every strike (restart and resume)."""
        return self._end(run)

    def teardown(self, run: Any) -> None:
        """Resume paused nodes so teardown can stop them; close the admin client; never raises."""
        for node in list(self.paused):
            try:
                run.host.resume(node)
            except Exception:
                pass
        self.paused.clear()
        self.admin.teardown(run)

