"""Controller fail-over: how long the metadata quorum is without an active controller after the active one
crashes, and how long acks=all writes go unacknowledged meanwhile (prints figures, asserts nothing).

Two modes:

- ``--mode sim`` (default): the deterministic simulator, a quorum of three controllers and three brokers
  with the simulator's timers (``SimOptions``: election timeout 150 ms, fetch timeout 300 ms, broker
  session 1 500 ms, heartbeats every 300 ms). Each seed runs a steady stream of acks=all writes to one
  partition (one every 20 ms) and crashes the active controller at 2 000 ms (restarted 1 500 ms later);
  the same schedule without the crash is the baseline. Times are simulated milliseconds, so the figures
  are the protocol's, not the machine's.
- ``--mode real``: a loopback cluster of real processes (``reference_impl.server.local_cluster``): three
  controllers, three brokers, a topic of RF 3 and MinISR 2, a confluent-kafka producer (acks=all) sending
  one record every 10 ms; the active controller is killed (SIGKILL) ``--kills`` times, restarted after
  each fail-over. Times are wall-clock (the nodes stamp their trace with CLOCK_MONOTONIC, the clock this
  script reads).

Per fail-over:

- **fail-over**: from the crash to the new active controller (its ``controller_active`` trace event: the
  epoch-start record of its quorum epoch committed, Q13, so this is also the first change the new
  controller commits);
- **metadata gap** (real mode): from the crash until a CreateTopics (a metadata change through a broker,
  forwarded to the controller) succeeds;
- **write gap**: the longest interval without an acknowledged write among writes around the crash (from
  the last acknowledgement before the crash to the first after a gap closes), and how many writes failed.

Usage: ``python bench/bench_failover.py [--mode sim|real] [--seeds N] [--kills N] [--no-pre-vote]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CRASH_MS = 2000
RESTART_MS = 3500
DURATION_MS = 6000
WRITE_EVERY_MS = 20


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank (nan when there are no values)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def write_gap(acks: list[float], fails: list[float], crash: float, until: float) -> tuple[float, int]:
    """The longest interval between consecutive acknowledgement times that ends after ``crash`` (and
    starts before ``until``), and how many writes failed in [crash, until]."""
    ordered = sorted(acks)
    gap = 0.0
    for before, after in zip(ordered, ordered[1:], strict=False):
        if after >= crash and before <= until:
            gap = max(gap, after - before)
    return gap, sum(1 for t in fails if crash <= t <= until)


def summary(label: str, values: list[float], unit: str = "ms") -> str:
    """``label p50 X p99 Y max Z (n)``."""
    return (f"{label:<34} p50 {percentile(values, 0.5):8.1f} {unit}  p99 {percentile(values, 0.99):8.1f} {unit}  "
            f"max {max(values, default=float('nan')):8.1f} {unit}  (n={len(values)})")


# -- the simulator -------------------------------------------------------------------------------------

def sim_trial(seed: int, pre_vote: bool, crash: bool) -> dict[str, Any]:
    """One simulated schedule; fail-over and write-gap figures in simulated ms."""
    from simulator import SimOptions
    from simulator.runner import run_schedule
    from simulator.schedule import Schedule

    options = SimOptions(controllers=3, duration_ms=DURATION_MS, pre_vote=pre_vote)
    events: list[dict[str, Any]] = [{"at": t, "do": "produce", "key": 0}
                                    for t in range(300, DURATION_MS, WRITE_EVERY_MS)]
    if crash:
        events += [{"at": CRASH_MS, "do": "crash", "node": "active", "episode": 0},
                   {"at": RESTART_MS, "do": "restart", "node": "active", "episode": 0}]
    events.sort(key=lambda e: e["at"])
    result = run_schedule(Schedule(seed, options, tuple(events)), keep_trace=True)
    ms = 1_000_000
    active = [e for e in result.trace or [] if e.get("kind") == "controller_active" and e["time"] > CRASH_MS * ms]
    acks = [op["time"] / ms for op in result.ops or [] if op.get("f") == "send" and op["type"] == "ok"]
    fails = [op["time"] / ms for op in result.ops or [] if op.get("f") == "send" and op["type"] in ("fail", "info")]
    gap, failed = write_gap(acks, fails, CRASH_MS, CRASH_MS + 3000)
    fenced = [e for e in result.trace or [] if e.get("kind") == "fenced" and e.get("source") == "controller"
              and e["time"] > CRASH_MS * ms]
    return {"failover": (active[0]["time"] / ms - CRASH_MS) if active else None, "gap": gap, "failed": failed,
            "finding": result.finding, "fenced": len({e.get("broker") for e in fenced})}


def run_sim(seeds: int, pre_vote: bool) -> None:
    """``seeds`` simulated fail-overs and as many baselines."""
    started = time.monotonic()
    trials = [sim_trial(s, pre_vote, True) for s in range(seeds)]
    base = [sim_trial(s, pre_vote, False) for s in range(seeds)]
    took = time.monotonic() - started
    print(f"simulator: 3 controllers, 3 brokers, pre-vote {'on' if pre_vote else 'off'}, {seeds} seeds "
          f"({took:.1f} s wall); crash of the active controller at {CRASH_MS} ms, a write every {WRITE_EVERY_MS} ms")
    failovers = [t["failover"] for t in trials if t["failover"] is not None]
    print(summary("fail-over (crash -> new active)", failovers))
    print(summary("write gap with the crash", [t["gap"] for t in trials]))
    print(summary("write gap without (baseline)", [t["gap"] for t in base]))
    print(f"{'writes failed in the 3 s after it':<34} mean {sum(t['failed'] for t in trials) / len(trials):.2f} "
          f"(baseline {sum(t['failed'] for t in base) / len(base):.2f}); runs with a broker fenced after the "
          f"crash: {sum(1 for t in trials if t['fenced'])}")
    missing = sum(1 for t in trials if t["failover"] is None)
    findings = [t["finding"] for t in trials + base if t["finding"] is not None]
    print(f"no new active controller in {missing} run(s); findings: {len(findings)}")


# -- a real cluster ------------------------------------------------------------------------------------

class Writer(threading.Thread):
    """acks=all writes, one every ``every_s``, with their acknowledgement (or failure) times."""

    def __init__(self, bootstrap: str, topic: str, every_s: float) -> None:
        super().__init__(daemon=True)
        import confluent_kafka

        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                                  "linger.ms": 0, "message.timeout.ms": 10000,
                                                  "enable.idempotence": False})
        self.topic, self.every_s = topic, every_s
        self.acks: list[float] = []
        self.fails: list[float] = []
        self.stopping = threading.Event()

    def _done(self, err: Any, _msg: Any) -> None:
        (self.fails if err is not None else self.acks).append(time.monotonic() * 1000)

    def run(self) -> None:
        n = 0
        while not self.stopping.is_set():
            n += 1
            try:
                self.producer.produce(self.topic, value=str(n).encode(), partition=0, on_delivery=self._done)
            except BufferError:
                pass
            self.producer.poll(0)
            time.sleep(self.every_s)
        self.producer.flush(15)


def run_real(kills: int) -> None:
    """``kills`` fail-overs of a loopback cluster."""
    from kafka.admin import KafkaAdminClient, NewTopic

    from reference_impl.server.local_cluster import LocalCluster

    with tempfile.TemporaryDirectory(prefix="kraftcheck-bench-failover-") as root:
        cluster = LocalCluster(root, controller_ids=(1001, 1002, 1003), broker_props={"min.insync.replicas": "2"})
        try:
            cluster.start(60)
            admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=5000)
            admin.create_topics([NewTopic("bench", 1, 3, topic_configs={"min.insync.replicas": "2"})])
            time.sleep(2)
            writer = Writer(cluster.bootstrap, "bench", 0.01)
            writer.start()
            time.sleep(2)
            rows = []
            for k in range(kills):
                old = cluster.active_controller()
                old_epoch = max(e["epoch"] for e in cluster.trace(old) if e.get("kind") == "controller_active")
                crash = time.monotonic() * 1000
                cluster.kill_node(old)
                new_active = None
                meta = None
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and (new_active is None or meta is None):
                    if new_active is None:
                        for node in cluster.controllers.values():
                            got = [e for e in cluster.trace(node) if e.get("kind") == "controller_active"
                                   and e["epoch"] > old_epoch]
                            if got:
                                new_active = got[0]["time"] / 1e6
                    if meta is None:
                        try:
                            admin.create_topics([NewTopic(f"probe-{k}-{int(time.monotonic() * 1000)}", 1, 1)])
                            meta = time.monotonic() * 1000
                        except Exception:
                            time.sleep(0.02)
                time.sleep(3)
                cluster.start_node(old)
                time.sleep(4)  # the restarted voter catches up before the next kill
                gap, failed = write_gap(writer.acks, writer.fails, crash, crash + 5000)
                rows.append({"failover": None if new_active is None else new_active - crash,
                             "meta": None if meta is None else meta - crash, "gap": gap, "failed": failed})
                print(f"kill {k + 1}: controller {old.node_id} (epoch {old_epoch}); fail-over "
                      f"{rows[-1]['failover'] if rows[-1]['failover'] is None else round(rows[-1]['failover'])} ms, "
                      f"CreateTopics after {rows[-1]['meta'] if meta is None else round(rows[-1]['meta'])} ms, "
                      f"write gap {gap:.0f} ms, {failed} writes failed")
            writer.stopping.set()
            writer.join(20)
            admin.close()
        finally:
            cluster.close()
    print(f"real cluster: 3 controllers, 3 brokers, {kills} kills of the active controller; load "
          f"{os.getloadavg()[0]:.2f}")
    print(summary("fail-over (kill -> new active)", [r["failover"] for r in rows if r["failover"] is not None]))
    print(summary("metadata gap (kill -> CreateTopics)", [r["meta"] for r in rows if r["meta"] is not None]))
    print(summary("acks=all write gap", [r["gap"] for r in rows]))


def main() -> int:
    """Parse the arguments and run the chosen mode."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=("sim", "real"), default="sim")
    p.add_argument("--seeds", type=int, default=200, help="simulated fail-overs (sim mode)")
    p.add_argument("--kills", type=int, default=5, help="kills of the active controller (real mode)")
    p.add_argument("--no-pre-vote", action="store_true", help="sim mode: elections without pre-vote")
    args = p.parse_args()
    if args.mode == "sim":
        run_sim(args.seeds, not args.no_pre_vote)
    else:
        run_real(args.kills)
    return 0


if __name__ == "__main__":
    sys.exit(main())
