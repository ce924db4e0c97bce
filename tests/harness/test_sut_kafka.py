"""Apache Kafka as a system under test: the configuration kraftcheck writes uses Kafka's documented names.

No Kafka distribution can be downloaded here, so the live test runs only when ``KRAFTCHECK_KAFKA_DIST`` names
an unpacked one (kafka_2.13-X.Y.Z); everything up to starting the processes is tested without it.
"""

import os
import re
from pathlib import Path

import pytest

from harness.clusters import resolve
from harness.spec import RunSpec
from harness.sut import SutError, load
from harness.sut_cluster import SutCluster

# Kafka's documented broker and controller configuration names that a KRaft cluster needs (the broker
# configs of kafka.apache.org/documentation/#brokerconfigs and the KRaft ones of #kraft_config).
KAFKA_CONFIG_NAMES = {
    "process.roles", "node.id", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
    "listeners", "advertised.listeners", "controller.listener.names", "listener.security.protocol.map",
    "inter.broker.listener.name", "log.dirs", "num.partitions", "default.replication.factor",
    "min.insync.replicas", "unclean.leader.election.enable", "replica.lag.time.max.ms",
    "broker.heartbeat.interval.ms", "broker.session.timeout.ms", "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
    "group.initial.rebalance.delay.ms", "auto.create.topics.enable",
}


class DirHost:
    """Addresses and directories only: enough to write configurations, start nothing."""

    def __init__(self, base):
        self.base = base
        self.names: list[str] = []

    def ip(self, node):
        if node not in self.names:
            self.names.append(node)
        return f"127.9.9.{10 + self.names.index(node)}"

    def node_dir(self, node):
        path = self.base / node
        path.mkdir(exist_ok=True)
        return str(path)

    def node_path(self, node, host_path):
        return host_path


def _cluster(tmp_path, setting="elr", **spec):
    description = load("kafka")
    cluster = SutCluster(DirHost(tmp_path), None, description, setting, tmp_path / "dist/bin/kafka-server-start.sh",
                         dist=tmp_path / "dist")
    cluster.plan(RunSpec.from_options({"brokers": 3, "sut": "kafka", "sut_setting": setting, **spec}))
    for node in cluster.nodes():
        cluster.data_path(node).mkdir(parents=True, exist_ok=True)
    return cluster


def _properties(cluster, node) -> dict[str, str]:
    role = cluster.role_of(node)
    facts = cluster.facts(node)
    return {key: value.format_map(facts) for key, value in role.config}


def test_nodes_ids_and_quorum(tmp_path):
    cluster = _cluster(tmp_path)
    assert cluster.nodes() == ["controller", "b1", "b2", "b3"]
    assert cluster.brokers() == ["b1", "b2", "b3"]
    ids = {node: _properties(cluster, node)["node.id"] for node in cluster.nodes()}
    assert ids == {"controller": "101", "b1": "1", "b2": "2", "b3": "3"}
    voters = _properties(cluster, "b2")["controller.quorum.voters"]
    assert voters == f"101@{cluster.address('controller')}" and cluster.address("controller").endswith(":9093")


def test_every_key_written_is_a_documented_kafka_config_and_every_value_is_filled(tmp_path):
    cluster = _cluster(tmp_path, min_isr=2, replication_factor=3, unclean_leader_election=True)
    for node in cluster.nodes():
        props = _properties(cluster, node)
        assert set(props) <= KAFKA_CONFIG_NAMES, set(props) - KAFKA_CONFIG_NAMES
        assert not any(re.search(r"[{}]", v) for v in props.values()), props
    broker = _properties(cluster, "b1")
    assert broker["process.roles"] == "broker" and broker["min.insync.replicas"] == "2"
    assert broker["unclean.leader.election.enable"] == "true"
    assert broker["listeners"] == broker["advertised.listeners"] == f"PLAINTEXT://{cluster.address('b1')}"
    assert _properties(cluster, "controller")["process.roles"] == "controller"


def test_the_elr_setting_formats_with_the_kip966_feature_and_no_elr_without(tmp_path):
    elr = _cluster(tmp_path, "elr")
    role = elr.role_of("b1")
    argv = elr._command(role.prepare[0], elr.facts("b1"), "prepare")
    assert argv[:3] == [str(tmp_path / "dist/bin/kafka-storage.sh"), "format", "--ignore-formatted"]
    assert argv[-2:] == ["--feature", "eligible.leader.replicas.version=1"]
    assert "-t" in argv and argv[argv.index("-t") + 1] == "a3JhZnRjaGVjay1jbHVzdA"
    plain = _cluster(tmp_path, "no-elr", variant="v3.5")
    assert "--feature" not in plain._command(role.prepare[0], plain.facts("b1"), "prepare")


def test_a_run_needs_the_distribution_and_the_variant_of_its_setting(tmp_path):
    with pytest.raises(SutError, match="not an executable file"):
        resolve(RunSpec.from_options({"sut": "kafka", "sut_path": str(tmp_path)}))
    dist = tmp_path / "kafka"
    (dist / "bin").mkdir(parents=True)
    start = dist / "bin" / "kafka-server-start.sh"
    start.write_text("#!/bin/sh\n")
    start.chmod(0o755)
    assert resolve(RunSpec.from_options({"sut": "kafka", "sut_path": str(dist)})).dist == dist
    with pytest.raises(SutError, match="--variant kip966"):
        resolve(RunSpec.from_options({"sut": "kafka", "sut_path": str(dist), "variant": "v3.5"}))
    assert resolve(RunSpec.from_options({"sut": "kafka", "sut_setting": "no-elr", "variant": "v3.5",
                              "sut_path": str(dist)})).setting.variant == "v3.5"


@pytest.mark.jepsen
@pytest.mark.skipif(not os.environ.get("KRAFTCHECK_KAFKA_DIST"),
                    reason="no Apache Kafka distribution here: set KRAFTCHECK_KAFKA_DIST to an unpacked one")
def test_a_short_run_against_a_real_kafka(kraftcheck_run):
    dist = Path(os.environ["KRAFTCHECK_KAFKA_DIST"]).expanduser()
    outcome = kraftcheck_run(sut="kafka", sut_path=str(dist), nemesis="kill", time_limit_s=30, backend="local")
    assert outcome.verdict in ("valid", "invalid"), outcome.results.get("reasons")
