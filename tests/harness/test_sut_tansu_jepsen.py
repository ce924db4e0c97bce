"""tansu against real nodes (jepsen-marked, short and bounded): several brokers over one PostgreSQL store on
the local backend, exercised through kafka-python (produce, fetch, ListOffsets, consumer groups), and
whole runs on both backends. Skipped, with the reason, when the tansu build is not installed."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from harness import sut_install
from harness.sut import load

pytestmark = pytest.mark.jepsen

TANSU = load("tansu")
INSTALLED = sut_install.installed(TANSU.build_of("postgres"))
needs_tansu = pytest.mark.skipif(not INSTALLED, reason="tansu is not installed: kraftcheck sut install tansu")
needs_postgres = pytest.mark.skipif(not Path("/usr/lib/postgresql").is_dir(),
                                    reason="PostgreSQL is not installed (apt-get install postgresql)")


@pytest.fixture
def tansu_postgres(tmp_path):
    """Three tansu brokers over one PostgreSQL node on the local backend; torn down afterwards."""
    from harness.context import RunContext
    from harness.hosts import make_host
    from harness.spec import RunSpec
    from harness.sut_cluster import SutCluster

    host = make_host("local", tmp_path)
    spec = RunSpec(brokers=3, sut="tansu", sut_setting="postgres", seed=1)
    run = RunContext(spec=spec, host=host, store_dir=tmp_path, rng=random.Random(1))  # type: ignore[arg-type]
    cluster = SutCluster(host, run, TANSU, "postgres", sut_install.binary_path(TANSU.build_of("postgres")),
                         ready_timeout_s=90)
    run.cluster = cluster
    try:
        cluster.setup(spec)
        yield cluster
    finally:
        try:
            cluster.collect_logs(tmp_path / "nodes")
        finally:
            cluster.teardown()
            host.teardown()


@needs_tansu
@needs_postgres
def test_brokers_over_one_postgres_store_serve_one_log(tansu_postgres, tmp_path):
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

    cluster = tansu_postgres
    assert cluster.nodes() == ["store", "b1", "b2", "b3"]
    servers = {node: cluster.address(node) for node in cluster.brokers()}
    cluster.create_topic("smoke", 2, 1)

    # Produce through every broker (idempotent: InitProducerId and the sequence bookkeeping), with headers.
    sent: dict[int, list[bytes]] = {0: [], 1: []}
    stamps = []
    for node, server in servers.items():
        producer = KafkaProducer(bootstrap_servers=[server], acks="all", enable_idempotence=True,
                                 request_timeout_ms=10_000)
        try:
            for i in range(10):
                value = f"{node}-{i}".encode()
                meta = producer.send("smoke", value=value, key=b"k", partition=i % 2,
                                     headers=[("from", node.encode())]).get(timeout=30)
                sent[i % 2].append(value)
                stamps.append(meta.timestamp)
        finally:
            producer.close()
    parts = [TopicPartition("smoke", 0), TopicPartition("smoke", 1)]

    # Every broker reads the same log: ListOffsets (earliest, latest) and Fetch from the start.
    for node, server in servers.items():
        consumer = KafkaConsumer(bootstrap_servers=[server], enable_auto_commit=False,
                                 auto_offset_reset="earliest", consumer_timeout_ms=5000)
        try:
            assert consumer.beginning_offsets(parts) == {parts[0]: 0, parts[1]: 0}, node
            assert consumer.end_offsets(parts) == {p: len(sent[p.partition]) for p in parts}, node
            consumer.assign(parts)
            got: dict[int, list[tuple[int, bytes, list]]] = {0: [], 1: []}
            deadline = time.monotonic() + 30
            while sum(map(len, got.values())) < 30 and time.monotonic() < deadline:
                for tp, records in consumer.poll(timeout_ms=1000).items():
                    got[tp.partition] += [(r.offset, r.value, list(r.headers)) for r in records]
            for p in (0, 1):
                assert [o for o, _, _ in got[p]] == list(range(len(sent[p]))), (node, p)
                assert [v for _, v, _ in got[p]] == sent[p], (node, p)
                assert all(h == [("from", v.split(b"-")[0])] for _, v, h in got[p]), (node, p)
            # ListOffsets by timestamp: the first record at or after the first send's timestamp.
            found = consumer.offsets_for_times({parts[0]: min(stamps)})
            assert found[parts[0]] is not None and found[parts[0]].offset == 0, node
        finally:
            consumer.close()

    # A consumer group: join, consume and commit through one broker; the commit is seen through another.
    member = KafkaConsumer("smoke", bootstrap_servers=[servers["b1"]], group_id="smoke-group",
                           enable_auto_commit=False, auto_offset_reset="earliest", consumer_timeout_ms=5000)
    try:
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 30 and time.monotonic() < deadline:
            seen += sum(len(r) for r in member.poll(timeout_ms=1000).values())
        assert seen == 30
        member.commit()
    finally:
        member.close()
    other = KafkaConsumer(bootstrap_servers=[servers["b3"]], group_id="smoke-group", enable_auto_commit=False)
    try:
        assert {tp.partition: other.committed(tp) for tp in parts} == {0: 15, 1: 15}
    finally:
        other.close()
    admin = KafkaAdminClient(bootstrap_servers=[servers["b2"]], request_timeout_ms=10_000)
    try:
        assert "smoke-group" in {group["group_id"] for group in admin.list_groups()}
        offsets = admin.list_group_offsets({"smoke-group": None})["smoke-group"]
        assert {tp.partition: meta.offset for tp, meta in offsets.items()} == {0: 15, 1: 15}
    finally:
        admin.close()


@needs_tansu
@needs_postgres
def test_stopping_the_store_is_a_fast_shutdown(tansu_postgres):
    """The store stops on its own stop signal (PostgreSQL's fast shutdown), well inside the timeout, while
    brokers hold pooled connections to it (a SIGTERM would wait for them and end in SIGKILL)."""
    cluster = tansu_postgres
    cluster.create_topic("s", 1, 1)
    host = cluster.host
    started = time.monotonic()
    host.stop("store", timeout_s=30)
    took = time.monotonic() - started
    assert not host.is_running("store")
    assert host.exit_code("store") == 0, host.logs("store")[-2000:]
    assert took < 20, took
    assert "fast shutdown request" in host.logs("store")
    cluster.restart_node("store")
    from harness.sut_services import SERVICES
    SERVICES["postgresql"].wait_ready(cluster, "store", 60)


def processes_under(path: Path) -> list[str]:
    """Command lines of live processes that name ``path`` (a node left running after teardown)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmdline:
            found.append(f"{entry.name}: {cmdline}")
    return found


def assert_complete_run(outcome, store_root: Path, nodes: tuple[str, ...]) -> dict:
    """The run ended with a verdict (valid or invalid, not a harness error), left a complete store and no
    node process behind; returns results.json."""
    import json

    results = json.loads((outcome.run_dir / "results.json").read_text())
    print(f"verdict {results['verdict']} store {outcome.run_dir}")
    assert "harness_error" not in results, results.get("harness_error")
    assert results["verdict"] in ("valid", "invalid"), results.get("reasons")
    for name in ("spec.json", "history.jsonl", "results.json", "report.html"):
        assert (outcome.run_dir / name).is_file(), name
    for node in nodes:
        assert (outcome.run_dir / "nodes" / node / "node.log").stat().st_size > 0, node
    assert not processes_under(store_root), processes_under(store_root)
    spec = json.loads((outcome.run_dir / "spec.json").read_text())
    assert spec["sut_facts"]["name"] == "tansu"
    return results


# A seed whose kill and partition schedule aims at brokers only: the random schedule may also pick the
# controller (kill) or the brokers-controller cut (partition), which tansu has no node for, and such an op
# proves nothing, so the verdict would be unknown.
BROKER_ONLY_SEED = 802262953
# With one broker only the clients-brokers cut has an edge to cut: a seed whose 20 s schedule (every 4 s)
# draws that one and kills the broker.
SINGLE_BROKER_SEED = 1910554750


@needs_tansu
@needs_postgres
def test_a_short_postgres_run_with_kill_and_partition(kraftcheck_run, kraftcheck_store):
    outcome = kraftcheck_run(backend="local", sut="tansu", sut_setting="postgres", brokers=3, nemesis="kill,partition",
                             nemesis_interval_s=4, time_limit_s=20, seed=BROKER_ONLY_SEED)
    results = assert_complete_run(outcome, kraftcheck_store, ("store", "b1", "b2", "b3"))
    assert results["checkers"]["invariants"]["applicable"] is False


@needs_tansu
def test_a_short_docker_run_with_kill_and_partition(kraftcheck_run, kraftcheck_store):
    from kraftcheck.commands.run import docker_problem

    problem = docker_problem()
    if problem:
        pytest.skip(problem)
    outcome = kraftcheck_run(backend="docker", sut="tansu", brokers=1, replication_factor=1, min_isr=1,
                             nemesis="kill,partition", nemesis_interval_s=4, time_limit_s=20, seed=SINGLE_BROKER_SEED)
    assert_complete_run(outcome, kraftcheck_store, ("b1",))


@needs_tansu
def test_a_short_docker_postgres_run(kraftcheck_run, kraftcheck_store):
    from kraftcheck.commands.run import docker_problem

    problem = docker_problem()
    if problem:
        pytest.skip(problem)
    outcome = kraftcheck_run(backend="docker", sut="tansu", sut_setting="postgres", brokers=3,
                             nemesis="kill,partition", nemesis_interval_s=4, time_limit_s=20, seed=BROKER_ONLY_SEED)
    assert_complete_run(outcome, kraftcheck_store, ("store", "b1", "b2", "b3"))


@needs_tansu
@needs_postgres
def test_faults_on_the_store_node(tansu_postgres):
    """Writers on every broker while the PostgreSQL node is killed, restarted, paused, cut off from two brokers
    and stopped (the random nemesis aims at brokers; this aims at the store by name). Asserted: the brokers
    live through it, the log has no gaps, and every value acknowledged with an offset is at that offset.
    Producers are made anew after a failed send: tansu answers a send it could not store with
    UNKNOWN_SERVER_ERROR, after which kafka-python's idempotent producer fails every later send.

    Reported, not asserted: tansu 0.6.0's idempotence race. A cut between a broker and the store can leave
    an append's COMMIT in flight while the client retries; the retry's sequence check reads the old
    sequence (no lock: producer_select_for_update.sql has no FOR UPDATE), both appends land, the sequence
    advances twice, and the producer's next batch to that partition is acknowledged as a duplicate (offset
    -1) without being stored. It shows in some runs only (timing); the test prints it when it does."""
    import threading

    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    from harness.sut_services import SERVICES

    cluster = tansu_postgres
    host = cluster.host
    cluster.create_topic("q", 2, 1)
    servers = {node: cluster.address(node) for node in cluster.brokers()}
    acked: dict[int, tuple[int, int]] = {}
    failed: set[int] = set()
    lock, stop = threading.Lock(), threading.Event()

    def producer(node):
        return KafkaProducer(bootstrap_servers=[servers[node]], acks="all", enable_idempotence=True,
                             request_timeout_ms=5000, delivery_timeout_ms=15000, max_block_ms=10000)

    def writer(node, value):
        current = producer(node)
        while not stop.is_set():
            try:
                meta = current.send("q", value=str(value).encode(), partition=value % 2).get(timeout=20)
                with lock:
                    acked[value] = (meta.partition, meta.offset)
            except Exception:
                with lock:
                    failed.add(value)
                current.close(timeout=2)
                time.sleep(0.2)
                try:
                    current = producer(node)
                except Exception:
                    time.sleep(1)
                    continue
            value += 1
        current.close(timeout=5)

    threads = [threading.Thread(target=writer, args=(node, i * 1_000_000)) for i, node in enumerate(servers)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(4)
        cluster.kill_node("store")
        time.sleep(3)
        cluster.restart_node("store")
        SERVICES["postgresql"].wait_ready(cluster, "store", 60)
        time.sleep(3)
        host.pause("store")
        time.sleep(4)
        host.resume("store")
        time.sleep(3)
        for broker in ("b1", "b2"):
            assert host.block(broker, "store") is None and host.block("store", broker) is None
        time.sleep(6)
        host.unblock_all()
        time.sleep(3)
        host.stop("store", timeout_s=20)
        assert host.exit_code("store") == 0
        cluster.restart_node("store")
        SERVICES["postgresql"].wait_ready(cluster, "store", 60)
        time.sleep(4)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    assert all(host.is_running(node) for node in cluster.brokers())

    consumer = KafkaConsumer(bootstrap_servers=[servers["b3"]], enable_auto_commit=False)
    parts = [TopicPartition("q", 0), TopicPartition("q", 1)]
    try:
        ends = consumer.end_offsets(parts)
        consumer.assign(parts)
        consumer.seek_to_beginning()
        log: dict[int, list[tuple[int, int]]] = {0: [], 1: []}
        deadline = time.monotonic() + 60
        while any(len(log[p.partition]) < ends[p] for p in parts) and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=1000).items():
                log[tp.partition] += [(r.offset, int(r.value)) for r in records]
    finally:
        consumer.close()
    where: dict[int, list[tuple[int, int]]] = {}
    for p, records in log.items():
        assert [offset for offset, _ in records] == list(range(ends[parts[p]])), f"partition {p} has gaps"
        for offset, value in records:
            where.setdefault(value, []).append((p, offset))
    assert len(acked) > 300, (len(acked), len(failed))
    # an acknowledgement with an offset names where the value is
    assert {v: a for v, a in acked.items() if a[1] >= 0 and a not in where.get(v, [])} == {}
    twice = {v: w for v, w in where.items() if len(w) > 1}
    unstored = {v: a for v, a in acked.items() if a[1] < 0 and v not in where}
    if twice or unstored:
        print(f"tansu 0.6.0 idempotence race reproduced: in the log twice {twice}; acknowledged as a "
              f"duplicate (offset -1) but never stored {unstored}")
