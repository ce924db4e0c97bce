"""Partitions on the local backend (root): connectivity lost while the rules hold, restored after heal."""

import os
import subprocess

import pytest

from nemesis.net import comment_tag
from nemesis.registry import build_package

pytestmark = [pytest.mark.jepsen, pytest.mark.skipif(os.geteuid() != 0, reason="needs root")]


def _tagged_rules(run):
    """Rules carrying the run's tag: on the host (local) or in every node's container (docker)."""
    tag = comment_tag(run.host.run_id)
    if run.host.name == "local":
        out = subprocess.run(["iptables", "-S"], capture_output=True, text=True, check=True).stdout
    else:
        out = "\n".join(run.host.exec(n, ["iptables", "-S"])[1] for n in run.cluster.nodes())
    return [line for line in out.splitlines() if tag in line]


@pytest.mark.parametrize("topology", ["isolate-one", "halves", "majorities-ring", "one-way",
                                      "isolate-controller", "clients-brokers", "isolate-leader"])
def test_partition_cuts_then_heals(any_run, topology):
    run = any_run
    run.cluster.setup()
    pkg = build_package("partition", seed=3)
    pkg.setup(run)
    try:
        done = pkg.execute(run, {"f": "start-partition", "value": {"topology": topology, "pick": 9}})
        value = done["value"]
        assert value["effective"] is True, value
        assert set(value["probes_during"].values()) == {"timeout"}
        assert len(_tagged_rules(run)) == value["rules"] > 0
        healed = pkg.execute(run, {"f": "stop-partition", "value": {}})
        assert healed["value"]["effective"] is True, healed["value"]
        assert set(healed["value"]["probes_after"].values()) == {"refused"}
        assert _tagged_rules(run) == []
    finally:
        pkg.teardown(run)
    assert _tagged_rules(run) == []
