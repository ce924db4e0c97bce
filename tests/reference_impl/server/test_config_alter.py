"""AlterConfigs / IncrementalAlterConfigs planning (``config_alter``) and the controller adapter that commits
the plan through the core's ``set_config`` (records, validate_only, all-or-nothing per resource)."""

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.records import ConfigRecord
from reference_impl.server import services as sv
from reference_impl.server.config import NodeConfig
from reference_impl.server.config_alter import APPEND, DELETE, SET, plan_alter
from reference_impl.server.config_describe import DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG
from reference_impl.server.controller_core import CoreAdapter

B, T = sv.RESOURCE_BROKER, sv.RESOURCE_TOPIC


def res(rtype, name, *configs):
    return sv.AlterConfigsResource(rtype, name, tuple(configs))


def plan(r, incremental=True, current=None, topic_exists=True):
    return plan_alter(r, incremental=incremental, current=current or {}, topic_exists=topic_exists)


def test_kafka_errors_for_bad_requests():
    cases = [
        (res(B, "", ("num.partitions", SET, "3")), Errors.INVALID_REQUEST),      # static key
        (res(B, "", ("min.insync.replicas", SET, "2")), Errors.INVALID_REQUEST),  # brokers honour it per topic
        (res(B, "", ("no.such", SET, "1")), Errors.INVALID_CONFIG),
        (res(B, "", ("reassignment.mode", SET, "sometimes")), Errors.INVALID_CONFIG),
        (res(B, "", ("reassignment.parallel.replica.count", SET, "0")), Errors.INVALID_CONFIG),
        (res(B, "", ("reassignment.mode", APPEND, "x")), Errors.INVALID_CONFIG),
        (res(B, "", ("reassignment.mode", 9, "x")), Errors.INVALID_REQUEST),
        (res(B, "", ("reassignment.mode", SET, None)), Errors.INVALID_REQUEST),
        (res(B, "", ("reassignment.mode", SET, "incremental"), ("reassignment.mode", DELETE, None)),
         Errors.INVALID_REQUEST),
        (res(B, "b1", ("reassignment.mode", SET, "incremental")), Errors.INVALID_REQUEST),
        (res(T, "t", ("reassignment.mode", SET, "incremental")), Errors.INVALID_CONFIG),
        (res(T, "t", ("flush.ms", SET, "5")), Errors.INVALID_REQUEST),
        (res(16, "x"), Errors.INVALID_REQUEST),
    ]
    for r, expected in cases:
        got = plan(r)
        assert (got.error, bool(got.message)) == (expected, True), (r, got)
    assert plan(res(T, "gone", ("min.insync.replicas", SET, "2")), topic_exists=False).error == \
        Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_incremental_sets_and_deletes_only_what_changes():
    current = {"reassignment.mode": "incremental", "unclean.leader.election.enable": "true"}
    got = plan(res(B, "", ("reassignment.mode", SET, "incremental"), ("unclean.leader.election.enable", DELETE, None),
                   ("reassignment.parallel.leader.movements", SET, "2")), current=current)
    assert got.ok and got.changes == (("unclean.leader.election.enable", None),
                                      ("reassignment.parallel.leader.movements", "2"))
    assert plan(res(T, "t", ("unclean.leader.election.enable", SET, "TRUE"))).changes == \
        (("unclean.leader.election.enable", "true"),)  # canonical spelling, as the core parses it


def test_legacy_alter_configs_replaces_the_whole_dynamic_set():
    current = {"reassignment.mode": "incremental", "reassignment.parallel.replica.count": "1"}
    got = plan(res(B, "", ("reassignment.parallel.replica.count", SET, "3")), incremental=False, current=current)
    assert got.changes == (("reassignment.parallel.replica.count", "3"), ("reassignment.mode", None))


def _adapter() -> CoreAdapter:
    config = NodeConfig(node_id=0, process_roles="controller", listeners=None, advertised_listeners=None,
                        controller_quorum_bootstrap_servers=None, log_dirs="/nonexistent", trace_file=None)
    return CoreAdapter(config, unclean_election=False)


def test_adapter_commits_config_records_and_honours_validate_only():
    a = _adapter()
    switch = [res(B, "", ("reassignment.mode", SET, "incremental"), ("reassignment.parallel.replica.count", SET, "2"))]
    records, results = a.alter_configs(switch, incremental=True, validate_only=True)
    assert records == [] and [r.error for r in results] == [Errors.NONE]
    records, results = a.alter_configs(switch, incremental=True, validate_only=False)
    assert records == [ConfigRecord("broker", "", "reassignment.mode", "incremental"),
                       ConfigRecord("broker", "", "reassignment.parallel.replica.count", "2")]
    for i, r in enumerate(records):
        a.replay(r, i + 1)
    assert a.core.incremental_mode()
    d = {e.name: e for e in a.describe_config(B, "0", ["reassignment.mode"]).configs}
    assert (d["reassignment.mode"].value, d["reassignment.mode"].source) == ("incremental",
                                                                             DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert d["reassignment.mode"].read_only is False
    # A per-broker override for this controller's id wins, and is described as DYNAMIC_BROKER_CONFIG.
    records, _ = a.alter_configs([res(B, "0", ("reassignment.mode", SET, "all-at-once"))], True, False)
    a.replay(records[0], 10)
    assert not a.core.incremental_mode()
    (entry,) = a.describe_config(B, "0", ["reassignment.mode"]).configs
    assert (entry.value, entry.source) == ("all-at-once", DYNAMIC_BROKER_CONFIG)


def test_adapter_resource_is_all_or_nothing_and_others_still_commit():
    a = _adapter()
    records, results = a.alter_configs([
        res(B, "", ("reassignment.mode", SET, "incremental"), ("num.partitions", SET, "3")),
        res(B, "", ("unclean.leader.election.enable", SET, "true")),
    ], incremental=True, validate_only=False)
    assert [r.error for r in results] == [Errors.INVALID_REQUEST, Errors.NONE]
    assert records == [ConfigRecord("broker", "", "unclean.leader.election.enable", "true")]
