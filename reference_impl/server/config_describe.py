"""DescribeConfigs answers: the effective configuration of a broker or a topic, with Kafka's config sources.

Kafka brokers answer DescribeConfigs themselves (it is not forwarded to the controller): a BROKER resource
names one broker (its own id, or "" for the cluster-wide defaults) and is answered from that broker's
configuration; a TOPIC resource is answered from the metadata (topic-level config records) falling back to
the cluster-wide dynamic defaults and then to the node's own settings. Each value carries its source, as
Kafka reports it (``ConfigSource`` numbers): 1 DYNAMIC_TOPIC_CONFIG (a topic override), 2
DYNAMIC_BROKER_CONFIG (a config record for this broker's id), 3 DYNAMIC_DEFAULT_BROKER_CONFIG (a
cluster-wide config record), 4 STATIC_BROKER_CONFIG (set in the node's
properties file), 5 DEFAULT_CONFIG (the built-in default, ``is_default``). A client's "modified only"
filter (kafka-python's default for ``describe_configs``) hides sources 3-5, as it would against Kafka;
ask with ``config_filter='all'`` to see every value.

Pure functions over a ``NodeConfig`` and config maps; the broker and the controller processes call them.
"""

from __future__ import annotations

from collections.abc import Mapping

from reference_impl.protocol.errors import Errors
from reference_impl.server import services as sv
from reference_impl.server.config import PARSERS, Endpoint, NodeConfig

DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

# Topic-level configs that matter to the replication protocol, each with the node key it defaults to
# (Kafka's topic/broker synonyms: min.insync.replicas, unclean.leader.election.enable, the flush policy).
TOPIC_KEYS: tuple[str, ...] = ("flush.messages", "flush.ms", "min.insync.replicas",
                               "unclean.leader.election.enable")

# The keys AlterConfigs / IncrementalAlterConfigs may change (``config_alter``); they are described as
# writable (read_only False), the rest of a broker's settings as read-only.
BROKER_DYNAMIC_KEYS = frozenset({
    "reassignment.mode", "reassignment.parallel.replica.count", "reassignment.parallel.partition.count",
    "reassignment.parallel.leader.movements", "unclean.leader.election.enable",
})
TOPIC_DYNAMIC_KEYS = frozenset({"min.insync.replicas", "unclean.leader.election.enable"})


def render(value: object) -> str | None:
    """A config value as Kafka prints it (booleans lower-case, endpoints HOST:PORT, unset as null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Endpoint):
        return str(value)
    return str(value)


def node_value(config: NodeConfig, key: str) -> str | None:
    """The node's effective value for a properties-file key."""
    return render(getattr(config, key.replace(".", "_")))


def node_source(config: NodeConfig, key: str) -> int:
    """STATIC_BROKER_CONFIG when the key was set in the node's file, else DEFAULT_CONFIG."""
    return STATIC_BROKER_CONFIG if key in config.explicit_keys else DEFAULT_CONFIG


def _entry(name: str, value: str | None, source: int, read_only: bool) -> sv.ConfigEntry:
    return sv.ConfigEntry(name, value, read_only=read_only, is_default=source == DEFAULT_CONFIG, source=source)


def _select(entries: list[sv.ConfigEntry], keys: list[str] | None) -> tuple[sv.ConfigEntry, ...]:
    """All entries (``keys`` None or empty), else the named ones in request order (unknown names are
    left out, as Kafka does)."""
    if not keys:
        return tuple(entries)
    by_name = {e.name: e for e in entries}
    return tuple(by_name[k] for k in keys if k in by_name)


def describe_broker(config: NodeConfig, name: str, keys: list[str] | None,
                    cluster_configs: Mapping[str, str] | None = None,
                    broker_configs: Mapping[str, str] | None = None) -> sv.ConfigResourceResult:
    """A BROKER resource: this node's settings (``name`` = its id) or the cluster-wide defaults (``""``).

    Another broker's id is refused with INVALID_REQUEST, as Kafka's broker refuses it: the client must ask
    that broker. Kafka's precedence gives each value and its source: this node's dynamic override
    (``broker_configs``, DYNAMIC_BROKER_CONFIG), the cluster-wide dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG),
    the node's file (STATIC_BROKER_CONFIG), the built-in default. Only ``BROKER_DYNAMIC_KEYS`` are writable."""
    cluster = dict(cluster_configs or {})
    own = dict(broker_configs or {})
    if name == "":
        entries = [_entry(k, v, DYNAMIC_DEFAULT_BROKER_CONFIG, False) for k, v in sorted(cluster.items())]
        return sv.ConfigResourceResult(sv.RESOURCE_BROKER, name, Errors.NONE, None, _select(entries, keys))
    if name != str(config.node_id):
        return sv.ConfigResourceResult(sv.RESOURCE_BROKER, name, Errors.INVALID_REQUEST,
                                       f"unexpected broker id: expected {config.node_id} or empty, got {name!r}")
    entries = []
    for key in sorted(PARSERS):
        read_only = key not in BROKER_DYNAMIC_KEYS
        if key in own:
            entries.append(_entry(key, own[key], DYNAMIC_BROKER_CONFIG, read_only))
        elif key in cluster:
            entries.append(_entry(key, cluster[key], DYNAMIC_DEFAULT_BROKER_CONFIG, read_only))
        else:
            entries.append(_entry(key, node_value(config, key), node_source(config, key), read_only))
    return sv.ConfigResourceResult(sv.RESOURCE_BROKER, name, Errors.NONE, None, _select(entries, keys))


def describe_topic(config: NodeConfig, name: str, keys: list[str] | None, exists: bool,
                   topic_configs: Mapping[str, str] | None,
                   cluster_configs: Mapping[str, str] | None = None) -> sv.ConfigResourceResult:
    """A TOPIC resource: each protocol-relevant topic config, from the topic override, else the cluster-wide
    config record, else this node's setting (static or default); UNKNOWN_TOPIC_OR_PARTITION when the topic
    does not exist."""
    if not exists:
        return sv.ConfigResourceResult(sv.RESOURCE_TOPIC, name, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                       f"topic {name!r} does not exist")
    topic = dict(topic_configs or {})
    cluster = dict(cluster_configs or {})
    entries = []
    for key in TOPIC_KEYS:
        if key in topic:
            entries.append(_entry(key, topic[key], DYNAMIC_TOPIC_CONFIG, False))
        elif key in cluster:
            entries.append(_entry(key, cluster[key], DYNAMIC_DEFAULT_BROKER_CONFIG, False))
        else:
            entries.append(_entry(key, node_value(config, key), node_source(config, key), False))
    return sv.ConfigResourceResult(sv.RESOURCE_TOPIC, name, Errors.NONE, None, _select(entries, keys))


def describe(config: NodeConfig, resource_type: int, name: str, keys: list[str] | None, *,
             topic_exists: bool, topic_configs: Mapping[str, str] | None,
             cluster_configs: Mapping[str, str] | None,
             broker_configs: Mapping[str, str] | None = None) -> sv.ConfigResourceResult:
    """Dispatch on the resource type; other types get INVALID_REQUEST (Kafka's answer for a type the
    node does not describe). ``broker_configs``: this node's own dynamic overrides."""
    if resource_type == sv.RESOURCE_BROKER:
        return describe_broker(config, name, keys, cluster_configs, broker_configs)
    if resource_type == sv.RESOURCE_TOPIC:
        return describe_topic(config, name, keys, topic_exists, topic_configs, cluster_configs)
    return sv.ConfigResourceResult(resource_type, name, Errors.INVALID_REQUEST,
                                   f"unsupported resource type {resource_type}")
