"""Clock nemesis: offsets written for libfaketime and measured inside the node's environment."""

import random
from types import SimpleNamespace

import pytest

from harness.hosts.faketime import find_libfaketime, format_offset
from harness.spec import RunSpec
from nemesis.clock import ClockNemesis
from nemesis.registry import build_package


def test_format_offset():
    assert format_offset(1.25) == "+1.250" and format_offset(-30) == "-30.000" and format_offset(0) == "+0.000"


@pytest.mark.skipif(find_libfaketime() is None, reason="libfaketime not installed")
def test_setup_fills_node_env_and_files(tmp_path, state_env):
    from harness.hosts.local import LocalHost

    host = LocalHost(tmp_path)
    run = SimpleNamespace(host=host, spec=RunSpec(brokers=2, replication_factor=2), node_env={}, cluster=None, rng=random.Random(0))
    nem = ClockNemesis()
    nem.setup(run)
    assert sorted(run.node_env) == ["b1", "b2", "controller"]
    env = run.node_env["b1"]
    assert env["FAKETIME_DONT_FAKE_MONOTONIC"] == "1" and env["LD_PRELOAD"].endswith(".so.1")
    assert open(env["FAKETIME_TIMESTAMP_FILE"]).read().strip() == "+0.000"
    host.teardown()


@pytest.mark.jepsen
@pytest.mark.skipif(find_libfaketime() is None, reason="libfaketime not installed")
def test_bump_strobe_reset_measured_inside_node(any_run):
    run = any_run
    pkg = build_package("clock", seed=2)
    pkg.setup(run)  # before the nodes start, as in a run
    run.cluster.setup()
    try:
        done = pkg.execute(run, {"f": "bump-clock", "value": {"target": "one", "max_ms": 120_000, "pick": 4}})
        value = done["value"]
        assert value["effective"] is True, value
        (node,) = value["nodes"]
        assert abs(value["measured_s"][node] - value["requested_s"][node]) < 0.75
        assert abs(value["requested_s"][node]) >= 1.0
        done = pkg.execute(run, {"f": "strobe-clock", "value": {"target": "one", "delta_ms": 5000,
                                                                "period_ms": 200, "duration_s": 1}})
        assert done["value"]["effective"] is True and done["value"]["flips"] >= 3
        done = pkg.execute(run, {"f": "reset-clock", "value": {}})
        assert done["value"]["effective"] is True
        assert all(abs(v) < 0.75 for v in done["value"]["measured_s"].values())
        # The running node process itself has the preload (its environment, read from /proc).
        environ = open(f"/proc/{run.host.pid('b1')}/environ", "rb").read().split(b"\0")
        assert any(e.startswith(b"LD_PRELOAD=") and b"faketime" in e for e in environ)
    finally:
        pkg.heal(run)
        pkg.teardown(run)
