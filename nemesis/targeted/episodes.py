"""Scripted episodes that open the windows of three bugs Kafka shipped, played against the live cluster.

``episodes`` ``{"episodes": [zombie-follower, fast-failover, elr-slip] (all three, in that order, when
absent), "pick": N}`` plays each named episode on a partition of its own topic (``kraftcheck-episodes``, one
partition on three brokers, created on first use) and heals it before the next. The episode writes its own
records into each window (a burst of ``BURST`` with acks=1, so the leader of the moment appends them at
once): the workload's clients write too slowly under load to be sure to land in a window of a second, and
records of their own would confuse the workload's checkers, while the invariants read every partition's
trace, this topic's included. The episodes are those of ``simulator.historical_episodes``, translated to the faults a real cluster
takes: leadership moved by a reassignment that only reorders the replicas followed by a preferred election
of that one partition (the admin API), lag made with one-way cuts and a broker cut off from the controller
(``nemesis.net``'s rules), crashes with kill -9 and clean stops with SIGTERM. Nothing here knows which design
the core runs: the correct core goes through the same episodes and must stay valid.

- ``zombie-follower`` (the window of KAFKA-6880, closed by KIP-320's leader epoch in every fetch): ``a`` is
  made leader; follower ``b`` is cut off from the controller (it keeps fetching from ``a``, whom it still
  takes for the leader); ``c``'s fetches to ``a`` are dropped while ``a`` takes writes and until ``c`` is
  made leader (``a`` truncates those writes, ``b`` keeps them); once ``c``'s ISR has dropped the
  stale ``b``, ``a`` is made leader again and takes new writes, which ``b`` fetches on top of the records
  ``a`` truncated when no epoch fences its fetches. ``b`` stays cut off for ``stale_s``, then the cut heals.
  ``b`` is never the lowest broker id, so brokers do not name it as the node admin requests go to.
- ``fast-failover`` (KAFKA-6361, fixed by KIP-279): ``a`` leads; ``b``'s fetches to ``a`` are dropped while
  ``a`` takes writes and until ``b`` leads; nobody's fetches reach ``b``; ``b`` is made leader (with the shorter log) and takes
  writes nobody fetches; ``a`` is made leader again within ``hold_s``. ``b``'s last epoch is one ``a`` never
  had, and answering its epoch lookup with the start of ``a``'s next epoch lets ``b`` keep its records.
- ``elr-slip`` (KIP-966's ELR setting forgotten on the unclean-registration path): kill -9 a follower and
  wait until it leaves the ISR, kill -9 the other follower and wait until the ISR is below MinISR (it enters
  the ELR), stop the leader cleanly (the ISR is empty, the ELR holds the two last members), then restart the
  crashed ELR member, whose registration is unclean, and after ``settle_s`` the others. A correct controller
  only takes the unclean broker out of the ELR and elects the cleanly stopped one when it is back; one
  that builds that change with ELR off wipes the ELR and the last-known ELR.

Within its op: every cut is removed and every node it stopped is started again before it completes.

Evidence, per episode: the roles, each leadership move (reassignment and election errors, the leader and
epoch read back), the cuts and their heals (``nemesis.net``'s proof), the ISR states waited for, the kills,
stops and restarts; ``effective`` when every step took (the leaders read back are the ones asked for, the
ISR reached the states waited for, the cuts were proven and healed, the nodes run again). The op is
effective when every episode was.
"""

from __future__ import annotations

import random
import time
from typing import Any

from kafka import KafkaProducer

from nemesis.admin import AdminNemesis
from nemesis.base import restart_nodes
from nemesis.targeted.netmember import NetMember
from nemesis.targeted.plans import EPISODES
from nemesis.targets import broker_node

POLL_S = 0.05
TOPIC = "kraftcheck-episodes"
BURST = 20  # records the episode writes into each of its windows


def episode_roles(episode: str, replicas: list[int], rng: random.Random) -> tuple[int, int, int] | None:
    """The broker ids ``(a, b, c)`` an episode plays with on a partition of ``replicas`` (None with fewer
    than three). In ``zombie-follower`` the stale follower ``b`` is never the lowest id: brokers name the
    lowest unfenced broker as the node admin requests go to, and those must keep reaching the controller.
    In ``elr-slip`` ``a`` is the leader stopped last and ``b`` the ELR member restarted uncleanly."""
    if len(replicas) < 3:
        return None
    if episode not in EPISODES:
        raise ValueError(f"unknown episode {episode!r}; known: {', '.join(EPISODES)}")
    ids = sorted(replicas)[:3] if episode == "zombie-follower" else list(replicas[:3])
    if episode == "zombie-follower":
        b = rng.choice(ids[1:])
        a, c = rng.sample([r for r in ids if r != b], 2)
        return a, b, c
    a, b, c = rng.sample(ids, 3)
    return a, b, c


class EpisodesNemesis(NetMember):
    """episodes (see the module docstring)."""

    FS = {"episodes"}

    def __init__(self, stale_s: float = 4.0, hold_s: float = 1.0, settle_s: float = 6.0,
                 wait_timeout_s: float = 25.0, move_timeout_s: float = 8.0) -> None:
        super().__init__()
        self.stale_s = stale_s
        self.hold_s = hold_s
        self.settle_s = settle_s
        self.wait_timeout_s = wait_timeout_s
        self.move_timeout_s = move_timeout_s
        self.admin = AdminNemesis()
        self.down: set[str] = set()
        self.producer: Any = None

    def invoke(self, run: Any, op: dict) -> dict:
        """Play the op's episodes one after the other (module docstring); evidence as the op's value."""
        value = dict(op.get("value") or {})
        rng = random.Random(value.get("pick", 0))
        topic = value.get("episode_topic") or TOPIC
        self._ensure_topic(run, topic)
        played = []
        for episode in value.get("episodes") or EPISODES:
            try:
                evidence = self._play(run, episode, topic, rng)
            except Exception as exc:  # a broken step is evidence; the heal below still runs
                evidence = {"episode": episode, "effective": False, "error": f"{type(exc).__name__}: {exc}"}
                self.admin.teardown(run)
            evidence["healed"] = self._heal(run)
            evidence["effective"] = bool(evidence.get("effective")) and evidence["healed"]["effective"]
            played.append(evidence)
        self._close_producer()
        out = {"topic": topic, "played": played, "effective": bool(played) and all(p["effective"] for p in played)}
        return {**op, "type": "ok", "value": {**value, **out}}

    def _play(self, run: Any, episode: str, topic: str, rng: random.Random) -> dict:
        # The previous episode's replicas may still be catching up: wait for a partition whose every replica
        # is back in the ISR (an episode needs all three).
        deadline = time.monotonic() + self.wait_timeout_s
        while True:
            partitions = run.cluster.partitions(topic)
            live = sorted(p for p, s in partitions.items()
                          if s["leader"] >= 0 and len(s["isr"]) >= 3 and set(s["isr"]) == set(s["replicas"]))
            if live or time.monotonic() >= deadline:
                break
            time.sleep(POLL_S * 10)
        if not live:
            return {"episode": episode, "effective": False, "skipped": "no partition with a full ISR"}
        partition = rng.choice(live)
        roles = episode_roles(episode, partitions[partition]["replicas"], rng)
        if roles is None:
            return {"episode": episode, "partition": partition, "effective": False, "skipped": "fewer than 3 replicas"}
        play = {"zombie-follower": self._zombie, "fast-failover": self._fast_failover, "elr-slip": self._elr_slip}
        steps: list[dict] = []
        ok = play[episode](run, topic, partition, roles, steps)
        a, b, c = roles
        return {"episode": episode, "partition": partition, "roles": {"a": a, "b": b, "c": c}, "steps": steps,
                "effective": ok}

    # -- the episodes --------------------------------------------------------------------------
    def _zombie(self, run: Any, topic: str, p: int, roles: tuple[int, int, int], steps: list[dict]) -> bool:
        a, b, c = roles
        na, nb, nc = (self._node(run, x) for x in roles)
        ok = self._lead(run, topic, p, [a, c, b], steps)
        controller = run.cluster.active_controller()
        ok &= self._cut(run, "b-from-controller", [[nb, controller], [controller, nb]], steps)
        ok &= self._cut(run, "c-fetches-to-a", [[nc, na]], steps)
        self._write(run, topic, p, "a-only-but-b", steps)  # a takes writes that b fetches and c does not
        # c is elected while its fetches are still dropped (healed first, it would catch up before the
        # election); the cut heals once c leads, and a, following c, truncates what c lacks; b keeps it
        ok &= self._lead(run, topic, p, [c, a, b], steps)
        ok &= self._uncut(run, [[nc, na]], steps)
        self._write(run, topic, p, "c-leads", steps)
        # c's ISR drops the stale b after one lag window; a (back in the ISR) is then electable
        ok &= self._wait_isr(run, topic, p, lambda isr: b not in isr and a in isr, "b-out-a-in", steps)
        ok &= self._lead(run, topic, p, [a, c, b], steps)  # a again; b still fetches on its old epoch
        self._write(run, topic, p, "a-again", steps)
        time.sleep(self.stale_s)
        return ok

    def _fast_failover(self, run: Any, topic: str, p: int, roles: tuple[int, int, int], steps: list[dict]) -> bool:
        a, b, c = roles
        na, nb, nc = (self._node(run, x) for x in roles)
        ok = self._lead(run, topic, p, [a, b, c], steps)
        ok &= self._cut(run, "b-fetches-to-a", [[nb, na]], steps)
        self._write(run, topic, p, "a-not-b", steps)  # a takes writes b lacks
        ok &= self._cut(run, "fetches-to-b", [[na, nb], [nc, nb]], steps)
        ok &= self._lead(run, topic, p, [b, a, c], steps)  # b leads with the shorter log, unseen
        ok &= self._uncut(run, [[nb, na]], steps)  # only now: healed earlier, b would catch up first
        self._write(run, topic, p, "b-only", steps)  # b takes writes of its own, nobody fetches them
        ok &= self._lead(run, topic, p, [a, b, c], steps)  # a again: b must truncate b's epoch
        ok &= self._uncut(run, [[na, nb], [nc, nb]], steps)
        self._write(run, topic, p, "a-again", steps)
        time.sleep(self.hold_s)
        return ok

    def _elr_slip(self, run: Any, topic: str, p: int, roles: tuple[int, int, int], steps: list[dict]) -> bool:
        a, b, c = roles
        na, nb, nc = (self._node(run, x) for x in roles)
        ok = self._lead(run, topic, p, [a, b, c], steps)
        ok &= self._kill(run, nc, steps)
        ok &= self._wait_isr(run, topic, p, lambda isr: c not in isr and a in isr and b in isr, "c-out", steps)
        ok &= self._kill(run, nb, steps)
        ok &= self._wait_isr(run, topic, p, lambda isr: isr == [a], "below-min-isr", steps)
        run.cluster.stop_node(na)  # a clean stop: a stays electable from the ELR
        self.down.add(na)
        stopped = not run.host.is_running(na)
        steps.append({"step": "stop", "node": na, "stopped": stopped})
        ok &= stopped
        ok &= self._start(run, nb, steps)  # the crashed ELR member registers uncleanly
        time.sleep(self.settle_s)
        ok &= self._start(run, na, steps)
        ok &= self._start(run, nc, steps)
        ok &= self._wait_isr(run, topic, p, lambda isr: a in isr, "a-back", steps, required=False)
        return ok

    # -- steps ---------------------------------------------------------------------------------
    @staticmethod
    def _node(run: Any, broker_id: int) -> str:
        return broker_node(run.cluster, broker_id)

    def _lead(self, run: Any, topic: str, p: int, order: list[int], steps: list[dict]) -> bool:
        """Make ``order[0]`` the leader: reorder the replicas, then a preferred election of ``p``."""
        step: dict[str, Any] = {"step": "lead", "order": order}
        step["reassign_error"] = self._ask(run, lambda: self.admin.alter(run, topic, {p: order}, True).get(p, "NO_ANSWER"))
        reordered = self._wait(lambda s: s["replicas"] == order, run, topic, p, self.move_timeout_s)

        def elect() -> list:
            response = self.admin.admin(run).elect_leaders(0, {topic: [p]}, timeout_ms=self.admin.request_timeout_ms,
                                                           raise_errors=False)
            return [part.error_code for r in response.replica_election_results for part in r.partition_result]

        step["elect_errors"] = self._ask(run, elect)
        state = self._wait(lambda s: s["leader"] == order[0], run, topic, p, self.move_timeout_s)
        step.update({"reordered": reordered is not None, "leader": (state or {}).get("leader"),
                     "leader_epoch": (state or {}).get("leader_epoch")})
        steps.append(step)
        return state is not None

    def _ensure_topic(self, run: Any, topic: str) -> None:
        """Create the episodes' own topic (one partition on three brokers) unless it exists."""
        try:
            if run.cluster.partitions(topic):
                return
        except Exception:
            pass
        try:
            run.cluster.create_topic(topic, 1, 3)
        except Exception:
            pass  # created meanwhile, or not now: the episode then reports no partition

    def _write(self, run: Any, topic: str, p: int, window: str, steps: list[dict]) -> None:
        """Write ``BURST`` records to the episode's partition (acks=1: the leader appends them at once, which
        is all a window needs) and wait up to ``hold_s`` for the answers; the count acknowledged is evidence."""
        acked = 0
        try:
            if self.producer is None:
                self.producer = KafkaProducer(bootstrap_servers=run.cluster.bootstrap_servers(), acks=1,
                                              linger_ms=0, retries=5, retry_backoff_ms=50, request_timeout_ms=3000,
                                              metadata_max_age_ms=1000, max_block_ms=3000)
            futures = [self.producer.send(topic, b"%s-%d" % (window.encode(), i), partition=p) for i in range(BURST)]
            self.producer.flush(timeout=self.hold_s + 2)
            acked = sum(1 for f in futures if f.succeeded())
        except Exception as exc:
            steps.append({"step": "write", "window": window, "acked": acked, "error": f"{type(exc).__name__}: {exc}"})
            self._close_producer()
            return
        steps.append({"step": "write", "window": window, "acked": acked})

    def _close_producer(self) -> None:
        if self.producer is not None:
            try:
                self.producer.close(timeout=2)
            except Exception:
                pass
            self.producer = None

    def _ask(self, run: Any, call: Any) -> Any:
        """``call()`` on the admin client, once more on a fresh client if it fails (a client still bound to a
        broker an earlier fault restarted); the second failure's text is the answer."""
        for attempt in (1, 2):
            try:
                return call()
            except Exception as exc:
                self.admin.teardown(run)
                if attempt == 2:
                    return f"{type(exc).__name__}: {exc}"
        return None

    def _cut(self, run: Any, name: str, edges: list[list[str]], steps: list[dict]) -> bool:
        done = self.net.invoke(run, {"f": "start-partition", "value": {"topology": name, "edges": edges, "add": True}})
        steps.append({"step": "cut", "name": name, "edges": edges, "proof": done["value"].get("probes_during"),
                      "effective": done["value"].get("effective")})
        return bool(done["value"].get("effective"))

    def _uncut(self, run: Any, edges: list[list[str]], steps: list[dict]) -> bool:
        done = self.net.invoke(run, {"f": "stop-partition", "value": {"edges": edges}})
        effective = done["value"].get("effective", True) is not False
        steps.append({"step": "uncut", "edges": edges, "effective": effective})
        return effective

    def _kill(self, run: Any, node: str, steps: list[dict]) -> bool:
        pid = run.cluster.kill_node(node)
        self.down.add(node)
        steps.append({"step": "kill", "node": node, "pid": pid})
        return pid is not None and not run.host.is_running(node)

    def _start(self, run: Any, node: str, steps: list[dict]) -> bool:
        try:
            pid = run.cluster.restart_node(node)
        except Exception as exc:
            steps.append({"step": "start", "node": node, "error": f"{type(exc).__name__}: {exc}"})
            return False
        self.down.discard(node)
        steps.append({"step": "start", "node": node, "pid": pid})
        return True

    def _wait_isr(self, run: Any, topic: str, p: int, predicate: Any, name: str, steps: list[dict],
                  required: bool = True) -> bool:
        state = self._wait(lambda s: predicate(sorted(s["isr"])) if name == "below-min-isr" else predicate(s["isr"]),
                           run, topic, p, self.wait_timeout_s)
        steps.append({"step": "wait", "for": name, "isr": (state or {}).get("isr"), "reached": state is not None})
        return state is not None or not required

    @staticmethod
    def _wait(predicate: Any, run: Any, topic: str, p: int, timeout_s: float) -> dict | None:
        """The partition's state once ``predicate`` holds for it (None if not within ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                state = run.cluster.partitions(topic).get(p)
            except Exception:
                state = None
            if state is not None and predicate(state):
                return state
            if time.monotonic() >= deadline:
                return None
            time.sleep(POLL_S)

    def _heal(self, run: Any) -> dict:
        """Remove every cut and start every node the episode stopped."""
        net = self.net.heal_all(run)
        started, errors = restart_nodes(run, sorted(self.down))
        self.down -= set(started)
        out = {"net": net.get("effective", True) is not False, "started": started,
               "effective": net.get("effective", True) is not False and not errors}
        if errors:
            out["errors"] = errors
        return out

    def heal_all(self, run: Any) -> dict:
        """Remove every cut and restart what is still down."""
        return self._heal(run)

    def teardown(self, run: Any) -> None:
        """Remove every rule and close the admin client; never raises."""
        super().teardown(run)
        self.admin.teardown(run)
        self._close_producer()
