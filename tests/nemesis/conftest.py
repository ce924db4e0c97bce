"""Fixtures for nemesis tests: a private state dir, a local host and a stand-in cluster."""

from __future__ import annotations

import random

import pytest

from harness.context import RunContext
from harness.history import HistoryWriter


@pytest.fixture
def state_env(tmp_path, monkeypatch):
    """A private kraftcheck state directory for the test."""
    monkeypatch.setenv("KRAFTCHECK_STATE", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def local_run(tmp_path, state_env):
    """A RunContext over a LocalHost and a started 3-broker stand-in cluster; torn down after."""
    from harness.hosts.local import LocalHost
    from tests.nemesis.standin import StandInCluster

    host = LocalHost(tmp_path / "store")
    cluster = StandInCluster(host)
    run = RunContext(
        spec={"topic": "queue"},
        host=host,
        store_dir=tmp_path / "store",
        rng=random.Random(1),
        cluster=cluster,
        history=HistoryWriter(tmp_path / "store" / "history.jsonl"),
    )
    cluster.node_env = run.node_env
    yield run
    run.history.close()
    host.teardown()
