"""Produce throughput and latency of the reference cluster on loopback (prints figures, asserts nothing).

Three configurations, each on a fresh 1-controller + 3-broker cluster with a topic of RF 3 and
min.insync.replicas 2, driven by confluent-kafka (librdkafka, so the client is not the bottleneck):

- ``acks=all`` (idempotent, librdkafka's default with acks=all; and not idempotent): the real cost of
  replication (L5: the answer waits for the HWM to pass the batch);
- ``acks=1``: the leader answers after its local append (L7), followers still replicate;
- ``acks=all + inject.bug=ack-before-replication``: a broker that acks without waiting for replication.

Each configuration reports a throughput run (all records enqueued at once; p50/p99 include the client's
queueing) and an unloaded single-record latency (300 records, one at a time).

Usage: ``python bench/bench_produce.py [--records N] [--size BYTES] [--linger-ms MS]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from reference_impl.server.local_cluster import LocalCluster

PROPS = {"min.insync.replicas": "2"}


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run_one(label: str, acks: str, broker_bug: str | None, records: int, size: int, linger_ms: int,
            idempotence: bool | None = None) -> dict:
    """Start a cluster, produce ``records`` values, stop the cluster; return the figures."""
    import confluent_kafka
    from kafka.admin import KafkaAdminClient

    broker_props = dict(PROPS)
    if broker_bug:
        broker_props["inject.bug"] = broker_bug
    with tempfile.TemporaryDirectory(prefix="kc-bench-") as tmp:
        cluster = LocalCluster(tmp, controller_props=dict(PROPS), broker_props=broker_props)
        try:
            cluster.start(60)
            admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10000)
            admin.create_topics({"bench": {"num_partitions": 1, "replication_factor": 3}})
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                parts = admin.describe_topics(["bench"])[0]["partitions"]
                if parts and len(parts[0]["isr_nodes"]) == 3:
                    break
                time.sleep(0.1)
            admin.close()
            producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "acks": acks,
                                                 "linger.ms": linger_ms, "enable.idempotence": acks == "all" if idempotence is None else idempotence})
            latencies: list[float] = []
            errors = [0]
            payload = b"x" * size

            def done(sent_at: float, err, _msg) -> None:
                if err is None:
                    latencies.append(time.perf_counter() - sent_at)
                else:
                    errors[0] += 1

            # Warm-up: metadata, InitProducerId (idempotence) and connections are not part of the figures.
            producer.produce("bench", value=payload, partition=0)
            producer.flush(30)
            # Unloaded latency: one record at a time, each waited for.
            single: list[float] = []
            for _ in range(300):
                sent = time.perf_counter()
                producer.produce("bench", value=payload, partition=0)
                producer.flush(30)
                single.append(time.perf_counter() - sent)
            start = time.perf_counter()
            for _ in range(records):
                sent = time.perf_counter()
                while True:
                    try:
                        producer.produce("bench", value=payload, partition=0,
                                         on_delivery=lambda err, msg, s=sent: done(s, err, msg))
                        break
                    except BufferError:
                        producer.poll(0.01)
                producer.poll(0)
            producer.flush(300)
            elapsed = time.perf_counter() - start
        finally:
            cluster.close()
    return {"label": label, "records": len(latencies), "errors": errors[0], "seconds": elapsed,
            "rate": len(latencies) / elapsed, "mb_s": len(latencies) * size / elapsed / 1e6,
            "p50_ms": percentile(latencies, 0.5) * 1000 if latencies else float("nan"),
            "p99_ms": percentile(latencies, 0.99) * 1000 if latencies else float("nan"),
            "mean_ms": statistics.fmean(latencies) * 1000 if latencies else float("nan"),
            "one_p50_ms": percentile(single, 0.5) * 1000, "one_p99_ms": percentile(single, 0.99) * 1000}


def main() -> None:
    """Run the three configurations and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--linger-ms", type=int, default=5)
    args = parser.parse_args()
    common = (args.records, args.size, args.linger_ms)
    rows = [run_one("acks=all idempotent", "all", None, *common),
            run_one("acks=all not idempotent", "all", None, *common, idempotence=False),
            run_one("acks=1", "1", None, *common),
            run_one("acks=all idempotent, ack-before-replication", "all", "ack-before-replication", *common),
            run_one("acks=all not idemp., ack-before-replication", "all", "ack-before-replication", *common,
                    idempotence=False)]
    print(f"records={args.records} size={args.size}B linger.ms={args.linger_ms} (1 partition, loopback)")
    print("throughput run: all records enqueued at once (latency includes client queueing);")
    print("single: 300 records one at a time, each flushed (request latency without load)")
    print(f"{'configuration':46} {'acked':>7} {'err':>4} {'rec/s':>8} {'MB/s':>6} {'p50 ms':>8} {'p99 ms':>8}"
          f" {'single p50':>10} {'single p99':>10}")
    for r in rows:
        print(f"{r['label']:46} {r['records']:7d} {r['errors']:4d} {r['rate']:8.0f} {r['mb_s']:6.2f} "
              f"{r['p50_ms']:8.2f} {r['p99_ms']:8.2f} {r['one_p50_ms']:10.2f} {r['one_p99_ms']:10.2f}")


if __name__ == "__main__":
    main()
