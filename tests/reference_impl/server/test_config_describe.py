"""DescribeConfigs answers (pure): sources and values for broker and topic resources."""

from __future__ import annotations

from reference_impl.protocol.errors import Errors
from reference_impl.server import services as sv
from reference_impl.server.config import config_from_properties
from reference_impl.server.config_describe import (
    DEFAULT_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    STATIC_BROKER_CONFIG,
    describe,
)


def node(**extra: str):
    props = {"node.id": "1", "process.roles": "broker", "listeners": "127.0.0.1:9092", "log.dirs": "/tmp/x",
             "controller.quorum.bootstrap.servers": "127.0.0.1:9093", **extra}
    return config_from_properties(props)


def entries(result: sv.ConfigResourceResult) -> dict[str, tuple[str | None, int, bool]]:
    return {e.name: (e.value, e.source, e.is_default) for e in result.configs}


def test_broker_resource_reports_its_own_settings_with_sources():
    cfg = node(**{"min.insync.replicas": "2", "reassignment.mode": "incremental"})
    r = describe(cfg, sv.RESOURCE_BROKER, "1", None, topic_exists=False, topic_configs=None, cluster_configs=None)
    got = entries(r)
    assert r.error == Errors.NONE
    assert got["min.insync.replicas"] == ("2", STATIC_BROKER_CONFIG, False)
    assert got["reassignment.mode"] == ("incremental", STATIC_BROKER_CONFIG, False)
    assert got["unclean.leader.election.enable"] == ("false", DEFAULT_CONFIG, True)
    assert got["default.replication.factor"] == ("1", DEFAULT_CONFIG, True)
    assert got["reassignment.parallel.replica.count"] == (str(2**31 - 1), DEFAULT_CONFIG, True)
    assert got["listeners"] == ("127.0.0.1:9092", STATIC_BROKER_CONFIG, False)
    assert got["inject.bug"] == (None, DEFAULT_CONFIG, True)


def test_broker_resource_named_keys_in_request_order_and_cluster_defaults():
    cfg = node()
    r = describe(cfg, sv.RESOURCE_BROKER, "1", ["num.partitions", "nope", "min.insync.replicas"],
                 topic_exists=False, topic_configs=None, cluster_configs={"min.insync.replicas": "3"})
    assert [(e.name, e.value, e.source) for e in r.configs] == [
        ("num.partitions", "1", DEFAULT_CONFIG), ("min.insync.replicas", "3", DYNAMIC_DEFAULT_BROKER_CONFIG)]
    default = describe(cfg, sv.RESOURCE_BROKER, "", None, topic_exists=False, topic_configs=None,
                       cluster_configs={"min.insync.replicas": "3"})
    assert entries(default) == {"min.insync.replicas": ("3", DYNAMIC_DEFAULT_BROKER_CONFIG, False)}


def test_another_brokers_id_is_refused():
    r = describe(node(), sv.RESOURCE_BROKER, "2", None, topic_exists=False, topic_configs=None,
                 cluster_configs=None)
    assert r.error == Errors.INVALID_REQUEST and r.configs == ()


def test_topic_resource_override_then_cluster_then_node():
    cfg = node(**{"unclean.leader.election.enable": "true"})
    r = describe(cfg, sv.RESOURCE_TOPIC, "t", None, topic_exists=True, topic_configs={"min.insync.replicas": "2"},
                 cluster_configs={"flush.ms": "1000"})
    assert entries(r) == {
        "min.insync.replicas": ("2", DYNAMIC_TOPIC_CONFIG, False),
        "flush.ms": ("1000", DYNAMIC_DEFAULT_BROKER_CONFIG, False),
        "unclean.leader.election.enable": ("true", STATIC_BROKER_CONFIG, False),
        "flush.messages": (str(2**63 - 1), DEFAULT_CONFIG, True),
    }


def test_unknown_topic_and_unknown_resource_type():
    r = describe(node(), sv.RESOURCE_TOPIC, "missing", None, topic_exists=False, topic_configs=None,
                 cluster_configs=None)
    assert r.error == Errors.UNKNOWN_TOPIC_OR_PARTITION
    r = describe(node(), 8, "x", None, topic_exists=False, topic_configs=None, cluster_configs=None)
    assert r.error == Errors.INVALID_REQUEST
