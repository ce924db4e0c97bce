"""Facts the import wall makes two packages hold must agree: the harness side may not import the
reference implementation, so each keeps its own copy and this test keeps them equal."""

from harness import spec
from reference_impl.protocol import replica_messages
from reference_impl.server import config


def test_the_protocol_variants_are_the_same_on_both_sides_of_the_wall():
    assert spec.VARIANTS == replica_messages.VARIANTS


def test_replica_lag_default_is_kafkas_in_the_servers_and_the_core_and_the_spec_says_why_it_differs():
    assert replica_messages.REPLICA_LAG_TIME_MAX_MS == 30_000  # Kafka's default since 2.5 (KIP-537)
    assert replica_messages.ReplicaConfig().replica_lag_time_max_ms == replica_messages.REPLICA_LAG_TIME_MAX_MS
    assert config.NodeConfig.__dataclass_fields__["replica_lag_time_max_ms"].default == 30_000
    assert "30000" in spec.OPTIONS["replica_lag_time_max_ms"].help


def test_the_coordinator_targets_know_the_servers_state_topics():
    from nemesis import targets
    from reference_impl.protocol.groups import partitioning as groups
    from reference_impl.protocol.txn import partitioning as txn
    from reference_impl.server import txn_coordinator
    from workloads.group_client import group_id_for

    assert targets.COORDINATOR_TOPICS == {"group-coordinator": groups.OFFSETS_TOPIC,
                                          "txn-coordinator": txn.TRANSACTION_STATE_TOPIC}
    assert targets.STATE_TOPIC_PARTITIONS == groups.DEFAULT_OFFSETS_PARTITIONS == txn_coordinator.TXN_STATE_PARTITIONS
    assert targets.run_group("t") == group_id_for(spec.RunSpec(topic="t"))
    for text in ("queue-group", "kraftcheck-group", "polygenelubricants", "ünïcode"):
        assert targets.java_string_hash(text) == groups.java_string_hash(text) == txn.java_string_hash(text)


def test_the_nemeses_place_a_group_where_the_core_does():
    from nemesis.targets import group_partition
    from reference_impl.protocol.kafka_hash import key_partition
    keys = ["", "a", "kraftcheck-group", "polygenelubricants", "ü-gruppe", "t-group"]
    for partitions in (1, 3, 50):
        assert [group_partition(k, partitions) for k in keys] == [key_partition(k, partitions) for k in keys]
