"""Strand: leave a replica that fell out of the ISR as the only live replica of its partition.

``strand`` ``{"partition": P (drawn when absent), "down_s": S}``:

1. one follower of the partition's leader is cut off from every other replica (both ways, through
   ``nemesis.net``), while it still reaches the controller and the clients, until the controller's ISR no
   longer holds it (the leader shrank the ISR after ``replica.lag.time.max.ms``); writes acknowledged from
   then on are on the other replicas only. Cut from the leader alone, it would catch up from whichever
   ISR member leads once the leader has stopped, and rejoin the ISR before the last member stops;
2. every other replica of the partition is stopped (SIGTERM, a controlled shutdown), so no ISR member is
   alive. A clean stop rather than kill -9: under KIP-966 a broker that crashed leaves the ELR when it
   registers again (K4), so after a kill of every ISR member the partition would stay leaderless for good
   with unclean election off, which is KIP-966's design and not what this fault is after;
3. the cut is removed and the stranded follower, out of date, is the only replica left, for ``down_s``
   seconds: with unclean leader election off the partition stays leaderless (C12, K10), with it on (or a
   controller that elects uncleanly anyway) the follower leads and the writes it missed are gone;
4. the stopped replicas are started again. Within its op.

Evidence: the follower, the ISR before the cut and once it was shrunk (``isr_shrunk``), the partition's
state once every other replica was down (``state_all_down``), the stops and restarts, the cut's and the
heal's own evidence. ``effective``: the ISR shrank without the follower, every other replica was stopped
while the follower was still out of the ISR, the cut was removed and the stopped replicas run again.
"""

from __future__ import annotations

import random
import time
from typing import Any

from nemesis.base import restart_nodes
from nemesis.targeted.aim import leader_node, topic_of
from nemesis.targeted.netmember import NetMember
from nemesis.targets import broker_node

POLL_S = 0.5


class StrandNemesis(NetMember):
    """strand (see the module docstring)."""

    FS = {"strand"}

    def __init__(self, down_s: float = 8.0, shrink_timeout_s: float = 40.0) -> None:
        super().__init__()
        self.down_s = down_s
        self.shrink_timeout_s = shrink_timeout_s

    def invoke(self, run: Any, op: dict) -> dict:
        """Strand one follower of the partition (module docstring); evidence as the op's value."""
        value = dict(op.get("value") or {})
        return {**op, "type": "ok", "value": {**value, **self._strand(run, value)}}

    def _strand(self, run: Any, value: dict) -> dict:
        rng = random.Random(value.get("pick", 0))
        topic = topic_of(run, value)
        partition, leader = leader_node(run, topic, rng, value.get("partition"))
        state = self._state(run, topic, partition)
        if leader is None or state is None:
            return {"partition": partition, "effective": False, "skipped": "no leader"}
        replicas = [broker_node(run.cluster, b) for b in state["replicas"]]
        followers = sorted(n for n in replicas if n and n != leader)
        if not followers:
            return {"partition": partition, "effective": False, "skipped": "no follower"}
        stranded = rng.choice(followers)
        stranded_id = run.cluster.node_id(stranded)
        evidence: dict[str, Any] = {"partition": partition, "leader": leader, "stranded": stranded,
                                    "isr_before": state["isr"]}
        others = [n for n in replicas if n and n != stranded]
        edges = [edge for other in others for edge in ([other, stranded], [stranded, other])]
        cut = self.net.invoke(run, {"f": "start-partition", "value": {"topology": "strand", "edges": edges}})
        evidence["cut"] = cut.get("value")
        shrunk = self._wait_out_of_isr(run, topic, partition, stranded_id)
        evidence["isr_shrunk"] = shrunk
        stopped: dict[str, Any] = {}
        if shrunk is not None:
            for node in others:
                stopped[node] = run.host.pid(node)
                run.cluster.stop_node(node)
        down_state = self._state(run, topic, partition) if stopped else None
        evidence["state_all_down"] = down_state
        still_out = down_state is not None and stranded_id not in down_state["isr"]
        healed = self.net.invoke(run, {"f": "stop-partition"})
        evidence["healed"] = healed.get("value")
        evidence["stopped"] = stopped
        all_down = bool(stopped) and all(stopped.values()) and not any(run.host.is_running(n) for n in stopped)
        if stopped:
            time.sleep(float(value.get("down_s", self.down_s)))
        started, errors = restart_nodes(run, stopped)
        evidence["started"] = started
        if errors:
            evidence["errors"] = errors
        evidence["effective"] = bool(
            shrunk is not None and all_down and still_out and not errors
            and (healed.get("value") or {}).get("effective", True) is not False
            and all(run.host.is_running(n) for n in stopped))
        return evidence

    @staticmethod
    def _state(run: Any, topic: str, partition: int | None) -> dict | None:
        try:
            return run.cluster.partitions(topic).get(partition)
        except Exception:
            return None

    def _wait_out_of_isr(self, run: Any, topic: str, partition: int, broker_id: int) -> list[int] | None:
        """The partition's ISR once it no longer holds ``broker_id``; None if that did not happen in time."""
        deadline = time.monotonic() + self.shrink_timeout_s
        while time.monotonic() < deadline:
            state = self._state(run, topic, partition)
            if state is not None and state["isr"] and broker_id not in state["isr"]:
                return state["isr"]
            time.sleep(POLL_S)
        return None
