"""Targeted faults against a real reference cluster on the local backend, each proving its effect."""

import os
import random
import shutil

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from harness.cluster import RefCluster
from harness.context import RunContext
from harness.hosts import make_host
from harness.spec import RunSpec
from nemesis.registry import build_package

pytestmark = pytest.mark.jepsen
TOPIC = "queue"


@pytest.fixture
def cluster_with(tmp_path, state_env):
    """``cluster_with("strike")``: a 3-broker reference cluster with that nemesis package set up, a topic
    ``queue`` of one partition on every broker, and 200 acknowledged records in it."""
    made = []

    def make(names: str):
        spec = RunSpec(time_limit_s=1, backend="local", keys=1, topic=TOPIC, seed=1)
        host = make_host("local", tmp_path / "store")
        run = RunContext(spec=spec, host=host, store_dir=tmp_path / "store", rng=random.Random(1))
        pkg = build_package(names, seed=1)
        cluster = RefCluster(host, run, ready_timeout_s=60)
        made.append((run, pkg, cluster, host))
        pkg.setup(run)
        run.cluster = cluster
        cluster.setup(spec)
        cluster.create_topic(TOPIC, 1, 3)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers(), acks="all")
        for i in range(200):
            producer.send(TOPIC, b"v%d" % i, partition=0)
        producer.flush(30)
        producer.close()
        return run, pkg

    yield make
    for run, pkg, cluster, host in made:
        pkg.heal(run)
        cluster.teardown()
        pkg.teardown(run)
        host.teardown()


@pytest.mark.skipif(not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None, reason="no FUSE")
def test_crash_lossy_restart_loses_unsynced_data_and_then_kills_the_leader(cluster_with):
    run, pkg = cluster_with("crash-lossy")
    done = pkg.execute(run, {"f": "crash-lossy", "value": {"target": "leader", "then": "kill-leader",
                                                            "down_s": 8, "partition": 0}})
    value = done["value"]
    node = value["nodes"][0]
    assert value["effective"] is True, value
    assert value["dropped_bytes"][node] > 0
    assert value["leo_before"][node]["queue-0"] == 200 and value["leo_lowered"][node] is True
    assert run.host.is_running(node) and value["started"][node] != value["killed"][node]
    then = value["then"]
    assert then["effective"] is True and then.get("leader") != node, then
    if "killed" in then:  # the new leader was killed and brought back
        assert then["started"] != then["killed"]


@pytest.mark.skipif(not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None, reason="no FUSE")
def test_crash_lossy_on_the_controller_is_effective_with_nothing_to_drop(cluster_with):
    # the controller syncs every commit: a correct one loses nothing, and the crash and restart are the effect
    run, pkg = cluster_with("crash-lossy")
    done = pkg.execute(run, {"f": "crash-lossy", "value": {"target": "controller", "down_s": 2}})
    value = done["value"]
    assert value["nodes"] == ["controller"] and value["dropped_bytes"]["controller"] == 0, value
    assert value["effective"] is True and run.host.is_running("controller")
    assert value["started"]["controller"] != value["killed"]["controller"]


def test_strand_leaves_an_out_of_sync_follower_alone_and_the_partition_waits_for_its_isr(cluster_with):
    run, pkg = cluster_with("strand")
    done = pkg.execute(run, {"f": "strand", "value": {"partition": 0, "down_s": 4}})
    value = done["value"]
    assert value["effective"] is True, value
    stranded = value["stranded"]
    stranded_id = run.cluster.node_id(stranded)
    assert stranded_id in value["isr_before"] and stranded_id not in value["isr_shrunk"]
    assert stranded not in value["stopped"] and set(value["stopped"]) == set(run.cluster.brokers()) - {stranded}
    # cut off from every other replica, it could not catch up from the next leader while they stopped
    assert value["cut"]["edges"] == 2 * len(value["stopped"])
    assert stranded_id not in value["state_all_down"]["isr"] and value["state_all_down"]["leader"] == -1
    assert all(run.host.is_running(n) for n in run.cluster.brokers())
    assert not run.host.rules_in_place()
    # Unclean election is off: the out-of-sync follower was not elected over the ISR, so the partition
    # still holds every acknowledged record once an ISR member leads again.
    assert run.cluster.wait_recovered(30, TOPIC)
    consumer = KafkaConsumer(bootstrap_servers=run.cluster.bootstrap_servers(), enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=10_000)
    consumer.assign([TopicPartition(TOPIC, 0)])
    values = [m.value for m in consumer]
    consumer.close()
    assert values[:200] == [b"v%d" % i for i in range(200)]


def test_strike_kills_the_new_leader_within_milliseconds_of_its_epoch(cluster_with):
    run, pkg = cluster_with("strike")
    done = pkg.execute(run, {"f": "strike", "value": {"trigger": "leader-epoch", "victim": "leader",
                                                       "action": "kill", "provoke": True, "partition": 0}})
    value = done["value"]
    assert value["effective"] is True, value
    first = next(iter(value["provoked"]["killed"]))
    victim = value["nodes"][0]
    assert value["event"]["kind"] == "leader_epoch_start" and value["event"]["node_name"] == victim != first
    assert value["reaction_ms"] < 250, value  # typically a few ms: poll period plus the signal
    assert not run.host.is_running(victim) and not run.host.is_running(first)
    end = pkg.execute(run, {"f": "end-strike", "value": {}})
    assert end["value"]["effective"] is True and sorted(end["value"]["started"]) == sorted({victim, first})


def test_strike_pauses_the_joining_follower_on_an_isr_expansion(cluster_with):
    run, pkg = cluster_with("strike")
    done = pkg.execute(run, {"f": "strike", "value": {"trigger": "isr-expand", "victim": "joining",
                                                       "action": "pause", "provoke": True, "partition": 0}})
    value = done["value"]
    assert value["effective"] is True, value
    follower = next(iter(value["provoked"]["killed"]))
    assert value["event"]["kind"] == "isr_proposed" and value["nodes"] == [follower]
    assert run.host.process_state(follower, run.host.pid(follower)) == "T"
    end = pkg.execute(run, {"f": "end-strike", "value": {}})
    assert end["value"]["effective"] is True and list(end["value"]["resumed"]) == [follower]


# cancel-midway under a partition depends on the admin client reaching the controller while the joining
# replica is cut off; it failed 2 of 6 times on a loaded machine, so it runs with the slow set only.
@pytest.mark.parametrize("kind,under", [("remove-readd", "kill"),
                                        pytest.param("cancel-midway", "partition", marks=pytest.mark.slow)])
def test_churn_moves_a_replica_under_a_fault(cluster_with, kind, under):
    run, pkg = cluster_with("churn")
    done = pkg.execute(run, {"f": "churn", "value": {"kind": kind, "under": under, "partition": 0}})
    value = done["value"]
    assert value["effective"] is True, value
    assert all(step["error"] is None for step in value["steps"])
    assert value["steps"][-1]["under"]["effective"] is True
    moved = value["moved"]
    assert moved not in value["steps"][0]["read_back"]["replicas"]
    if kind == "cancel-midway":
        assert value["steps"][-1]["cancel"]["was_ongoing"] is not None
        assert value["replicas_after"] == value["steps"][0]["target"]
    else:
        assert sorted(value["replicas_after"]) == sorted(value["replicas_before"])


@pytest.mark.parametrize("kind", ["controller-only", "leader-to-follower"])
def test_cut_drops_exactly_the_targeted_edges(cluster_with, kind):
    run, pkg = cluster_with("cut")
    done = pkg.execute(run, {"f": "start-cut", "value": {"kind": kind, "partition": 0}})
    value = done["value"]
    assert value["effective"] is True, value
    leader, follower = value["leader"], value["follower"]
    if kind == "controller-only":
        assert value["grudge"] == {"controller": [leader], leader: ["controller"]}
        assert run.host.probe(leader, follower) == "refused"  # its peers still reach it
    else:
        assert value["grudge"] == {follower: [leader]}
        assert run.host.probe(leader, "controller") == "refused"
    stop = pkg.execute(run, {"f": "stop-cut", "value": {}})
    assert stop["f"] == "stop-cut" and stop["value"]["effective"] is True


def test_strike_kills_the_controller_on_a_reassignment_step(cluster_with):
    run, pkg = cluster_with("strike")
    done = pkg.execute(run, {"f": "strike", "value": {"trigger": "reassignment", "victim": "controller",
                                                       "action": "kill", "provoke": True, "partition": 0}})
    value = done["value"]
    assert value["effective"] is True, value
    assert value["event"]["kind"] == "metadata_applied" and value["nodes"] == ["controller"]
    assert all(step["error"] is None for step in value["provoked"]["reassign"])
    assert not run.host.is_running("controller")
    end = pkg.execute(run, {"f": "end-strike", "value": {}})
    assert end["value"]["effective"] is True and list(end["value"]["started"]) == ["controller"]


def test_episodes_take_on_the_correct_core_and_lose_nothing(cluster_with):
    run, pkg = cluster_with("episodes")
    done = pkg.execute(run, {"f": "episodes", "value": {"pick": 0}})
    value = done["value"]
    assert [p["episode"] for p in value["played"]] == ["zombie-follower", "fast-failover", "elr-slip"]
    assert value["effective"] is True, value
    zombie, fast, elr = value["played"]
    # leadership went a -> c -> a in the zombie episode, and a -> b -> a in the fast fail-over
    leaders = [s["leader"] for s in zombie["steps"] if s["step"] == "lead"]
    assert leaders == [zombie["roles"][r] for r in "aca"], zombie
    leaders = [s["leader"] for s in fast["steps"] if s["step"] == "lead"]
    assert leaders == [fast["roles"][r] for r in "aba"], fast
    below = next(s for s in elr["steps"] if s.get("for") == "below-min-isr")
    assert below["isr"] == [elr["roles"]["a"]], elr
    assert all(run.host.is_running(n) for n in run.cluster.brokers()) and not run.host.rules_in_place()
    # The correct core elects the cleanly stopped ELR member again and keeps every acknowledged record.
    assert run.cluster.wait_recovered(60, TOPIC)
    consumer = KafkaConsumer(bootstrap_servers=run.cluster.bootstrap_servers(), enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=10_000)
    consumer.assign([TopicPartition(TOPIC, 0)])
    values = [m.value for m in consumer]
    consumer.close()
    assert set(values) >= {b"v%d" % i for i in range(200)}
