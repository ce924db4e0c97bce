"""Unit tests of the cluster adapter's pure parts: node configs (node_config), trace merging and data
listings (node_evidence), config files written through a host."""

import json

from harness.cluster import RefCluster
from harness.node_config import render_properties
from harness.node_evidence import data_listing, read_trace_file, write_merged_trace
from harness.spec import RunSpec


class DirHost:
    """Just enough of a Host for config writing (addresses and directories; no processes)."""

    name = "test"

    def __init__(self, base):
        self.base = base

    def ip(self, node):
        return {"controller": "127.9.9.10", "b1": "127.9.9.11", "b2": "127.9.9.12"}[node]

    def node_dir(self, node):
        path = self.base / node
        path.mkdir(exist_ok=True)
        return str(path)

    def node_path(self, node, host_path):
        return host_path.replace(str(self.base), "/kraftcheck")


def parse(text):
    pairs = [line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")]
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), "each key once"
    return dict(pairs)


def test_broker_and_controller_configs_follow_the_contract(tmp_path):
    spec = RunSpec.from_options({"brokers": 2, "replication_factor": 2, "min_isr": 2, "variant": "v3.5",
                      "unclean_leader_election": True, "flush_messages": 1, "keys": 3})
    cluster = RefCluster(DirHost(tmp_path))
    cluster.spec, cluster._broker_ids = spec, [1, 2]
    broker = parse(cluster.write_config("b2").read_text())
    controller = parse(cluster.write_config("controller").read_text())
    assert broker == {
        "node.id": "2", "process.roles": "broker", "listeners": "127.9.9.12:9092",
        "advertised.listeners": "127.9.9.12:9092", "controller.quorum.bootstrap.servers": "127.9.9.10:9093",
        "log.dirs": "/kraftcheck/b2/data", "trace.file": "/kraftcheck/b2/trace.jsonl",
        "protocol.variant": "v3.5", "unclean.leader.election.enable": "true", "min.insync.replicas": "2",
        "default.replication.factor": "2", "num.partitions": "3", "replica.lag.time.max.ms": "10000",
        "broker.session.timeout.ms": "6000", "broker.heartbeat.interval.ms": "1000",
        "reassignment.mode": "all-at-once", "flush.messages": "1"}
    assert controller["process.roles"] == "controller" and controller["node.id"] == "0"
    assert "controller.quorum.bootstrap.servers" not in controller
    assert (tmp_path / "b2" / "data").is_dir()
    assert cluster.argv("b1") == ["python", "-m", "reference_impl.server.broker", "--config",
                                  "/kraftcheck/b1/server.properties"]
    assert cluster.bootstrap_servers() == ["127.9.9.11:9092", "127.9.9.12:9092"]
    assert cluster.broker_node(2) == "b2" and cluster.broker_node(7) is None


def test_configs_are_accepted_by_the_servers_parser(tmp_path):
    from reference_impl.server.config import load_config

    spec = RunSpec.from_options({"flush_ms": 100})
    cluster = RefCluster(DirHost(tmp_path))
    cluster.spec, cluster._broker_ids = spec, [1, 2]
    for node in ("controller", "b1"):
        path = cluster.write_config(node)
        # the node sees /kraftcheck/...; rewrite for a host-side parse
        path.write_text(path.read_text().replace("/kraftcheck", str(tmp_path)))
        config = load_config(str(path))
        assert config.node_id == cluster.node_id(node)


def test_node_env_applied(tmp_path):
    class Run:
        node_env = {"b1": {"LD_PRELOAD": "/x.so"}}

    cluster = RefCluster(DirHost(tmp_path), Run())
    assert cluster.env("b1") == {"PYTHONUNBUFFERED": "1", "LD_PRELOAD": "/x.so"}
    assert cluster.env("b2") == {"PYTHONUNBUFFERED": "1"}


def test_render_properties_skips_none_and_writes_booleans():
    text = render_properties({"a": 1, "b": None, "c": False})
    assert "a=1" in text and "c=false" in text and "b=" not in text


def test_trace_merge_rebases_sorts_and_skips_torn_lines(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"time": 1000, "node": "1", "kind": "hwm"}\n{"time": 3000, "node": "1", "kind": "leo"}\n{"ti')
    b.write_text('{"time": 2000, "node": "2", "kind": "fenced"}\nnot json\n{"time": "x"}\n')
    events = read_trace_file(a, "b1") + read_trace_file(b, "b2") + read_trace_file(tmp_path / "none", "b3")
    assert len(events) == 3
    out = tmp_path / "trace.jsonl"
    assert write_merged_trace(out, events, start_ns=500) == 3
    merged = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["time"] for e in merged] == [500, 1500, 2500]
    assert [e["node_name"] for e in merged] == ["b1", "b2", "b1"]


def test_data_listing(tmp_path):
    (tmp_path / "d" / "t-0").mkdir(parents=True)
    (tmp_path / "d" / "t-0" / "0.log").write_bytes(b"x" * 10)
    listing = data_listing(tmp_path / "d")
    assert "10 t-0/0.log" in listing
    assert "no data directory" in data_listing(tmp_path / "missing")


def test_teardown_waits_out_a_controlled_shutdown_the_controller_never_confirms(tmp_path):
    # A broker waits up to one session for the controller's confirmation before it closes; stopping it
    # earlier would SIGKILL it and lose the log summary its clean stop traces.
    cluster = RefCluster(DirHost(tmp_path))
    cluster.spec = RunSpec.from_options({"broker_session_timeout_ms": 9000})
    assert cluster.stop_grace_s() > 9.0


def test_leadership_counts_as_agreed_only_when_every_broker_says_the_same(tmp_path, monkeypatch):
    # A broker cut off from the controller still believes it leads at its old epoch; until its metadata
    # catches up, a consumer bootstrapping from it would read a stale high watermark.
    cluster = RefCluster(DirHost(tmp_path))
    cluster.spec, cluster._broker_ids = RunSpec.from_options({"brokers": 2, "replication_factor": 2, "min_isr": 1}), [1, 2]

    class Admin:
        def close(self):
            pass

    def answer(leaders_by_broker):
        def metadata_from(admin, broker_id, topics):
            leader, epoch = leaders_by_broker[broker_id]
            return {"topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "leader_id": leader, "leader_epoch": epoch}]}]}
        return metadata_from

    monkeypatch.setattr(cluster, "_admin", lambda servers, timeout_s: Admin())
    monkeypatch.setattr(cluster, "_metadata_from", answer({1: (2, 1), 2: (2, 1)}))
    assert cluster.agreed_leadership("t") == {0: (2, 1)}
    monkeypatch.setattr(cluster, "_metadata_from", answer({1: (1, 0), 2: (2, 1)}))
    assert cluster.agreed_leadership("t") is None
