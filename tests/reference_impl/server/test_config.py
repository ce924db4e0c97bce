"""Node config parsing and validation (the shared node-process contract), trace emitter, bug list."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from reference_impl.server import bugs
from reference_impl.server.config import (
    LONG_MAX,
    ConfigError,
    Endpoint,
    config_from_properties,
    load_config,
    parse_properties,
)
from reference_impl.server.trace import Tracer

BROKER = """
# a broker
node.id=3
process.roles=broker
listeners=127.0.0.3:9092
controller.quorum.bootstrap.servers = 127.0.0.1:9093
log.dirs=/tmp/kc/3
min.insync.replicas: 2
"""


def test_broker_config_defaults_follow_kafka():
    cfg = config_from_properties(parse_properties(BROKER))
    assert cfg.node_id == 3 and cfg.process_roles == "broker"
    assert cfg.listeners == Endpoint("127.0.0.3", 9092) == cfg.advertised_listeners
    assert cfg.controller_quorum_bootstrap_servers == Endpoint("127.0.0.1", 9093)
    assert cfg.trace_file == "/tmp/kc/3/trace.jsonl"
    assert cfg.min_insync_replicas == 2
    assert cfg.protocol_variant == "v3.5" and not cfg.elr_enabled
    assert cfg.flush_messages == LONG_MAX and cfg.flush_ms == LONG_MAX
    assert cfg.reassignment_mode == "all-at-once" and cfg.inject_bug is None
    assert cfg.replica_lag_time_max_ms == 30000 and cfg.broker_session_timeout_ms == 9000


@pytest.mark.parametrize("line,key", [
    ("bogus.key=1", "bogus.key"),
    ("min.insync.replicas=0", "min.insync.replicas"),
    ("min.insync.replicas=two", "min.insync.replicas"),
    ("protocol.variant=v4", "protocol.variant"),
    ("unclean.leader.election.enable=yes", "unclean.leader.election.enable"),
    ("listeners=nohostport", "listeners"),
    ("listeners=127.0.0.1:99999", "listeners"),
    ("reassignment.mode=batched", "reassignment.mode"),
    ("inject.bug=no-such-bug", "inject.bug"),
    ("flush.messages=0", "flush.messages"),
    ("node.id=1", "node.id"),  # duplicate key
])
def test_invalid_values_name_the_key(line, key):
    with pytest.raises(ConfigError) as info:
        config_from_properties(parse_properties(BROKER + line + "\n"))
    assert info.value.key == key
    assert repr(key) in str(info.value)


def test_bug_of_the_other_process_is_accepted_and_inert():
    cfg = config_from_properties(parse_properties(BROKER + "inject.bug=metadata-no-fsync\n"))
    assert cfg.inject_bug == "metadata-no-fsync"
    assert not bugs.is_active(cfg.inject_bug, "ack-before-replication")


def test_missing_required_keys():
    with pytest.raises(ConfigError) as info:
        config_from_properties(parse_properties("node.id=1\nprocess.roles=broker\nlisteners=h:1\nlog.dirs=/x\n"))
    assert info.value.key == "controller.quorum.bootstrap.servers"
    with pytest.raises(ConfigError) as info:
        config_from_properties(parse_properties("process.roles=controller\n"))
    assert info.value.key == "node.id"


def test_controller_config_and_kafka_listener_syntax(tmp_path):
    path = tmp_path / "c.properties"
    path.write_text("node.id=0\nprocess.roles=controller\nlisteners=PLAINTEXT://127.0.0.1:9093\n"
                    "log.dirs=/d\nprotocol.variant=kip966\nunclean.leader.election.enable=TRUE\n"
                    "reassignment.mode=incremental\nreassignment.parallel.replica.count=2\n"
                    "inject.bug=unclean-without-opt-in\ntrace.file=/t/x.jsonl\n")
    cfg = load_config(path)
    assert cfg.listeners == Endpoint("127.0.0.1", 9093)
    assert cfg.elr_enabled and cfg.unclean_leader_election_enable
    assert cfg.reassignment_parallel_replica_count == 2 and cfg.inject_bug == "unclean-without-opt-in"
    assert cfg.trace_file == "/t/x.jsonl" and cfg.controller_quorum_bootstrap_servers is None


def test_process_exits_2_naming_the_key(tmp_path):
    path = tmp_path / "b.properties"
    path.write_text(BROKER + "replica.lag.time.max.ms=-5\n")
    code = ("import sys; from reference_impl.server.config import load_or_exit; "
            "load_or_exit(sys.argv[1], 'broker')")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "replica.lag.time.max.ms" in proc.stderr


def test_tracer_writes_monotonic_json_lines(tmp_path):
    path = tmp_path / "sub" / "trace.jsonl"
    tr = Tracer(path, "7")
    tr.emit("registered", broker_epoch=5)
    tr.drain([{"kind": "hwm", "hwm": 3, "topic": "t", "partition": 0}], extra_attr=1)
    # Visible before close: flushed per line.
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    tr.close()
    assert [x["kind"] for x in lines] == ["registered", "hwm"]
    assert all(x["node"] == "7" for x in lines)
    assert lines[0]["time"] <= lines[1]["time"] and lines[1]["extra_attr"] == 1
    assert lines[0]["broker_epoch"] == 5 and lines[1]["hwm"] == 3


def test_bug_list_is_documented():
    for name, bug in bugs.BUGS.items():
        assert name in (bugs.__doc__ or "")
        assert bug.rule in (bugs.__doc__ or "")
        assert bugs.is_active(name, name) and not bugs.is_active(None, name)
    with pytest.raises(KeyError):
        bugs.is_active(None, "nope")
    assert len(bugs.describe().splitlines()) == len(bugs.BUGS) + 1  # and Last Replica Standing (a variant)
    assert os.path.basename(bugs.__file__) == "bugs.py"


def test_unclean_recovery_strategy_and_metadata_pull_size_keys(tmp_path):
    from reference_impl.server.config import ConfigError, config_from_properties
    from reference_impl.server.controller_core import CoreAdapter

    base = {"node.id": "0", "process.roles": "controller", "listeners": "127.0.0.1:9093",
            "log.dirs": str(tmp_path)}
    cfg = config_from_properties(dict(base, **{"unclean.recovery.strategy": "proactive",
                                               "metadata.fetch.max.records": "7"}))
    assert (cfg.unclean_recovery_strategy, cfg.metadata_fetch_max_records) == ("proactive", 7)
    assert CoreAdapter(cfg, False).core.config.unclean_recovery_strategy == "proactive"
    assert config_from_properties(base).unclean_recovery_strategy == "balanced"
    with pytest.raises(ConfigError, match="unclean.recovery.strategy"):
        config_from_properties(dict(base, **{"unclean.recovery.strategy": "eager"}))
    with pytest.raises(ConfigError, match="metadata.fetch.max.records"):
        config_from_properties(dict(base, **{"metadata.fetch.max.records": "0"}))
