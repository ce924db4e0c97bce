"""Fixtures for nemesis tests: a private state dir, a host (local or docker) and a stand-in cluster."""

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


def _docker_or_skip():
    from harness.image import ImageError, docker_client

    try:
        docker_client()
    except ImageError as exc:
        pytest.skip(str(exc))


def _make_run(tmp_path, backend: str):
    from harness.hosts import make_host
    from tests.nemesis.standin import StandInCluster

    if backend == "docker":
        _docker_or_skip()
    host = make_host(backend, tmp_path / "store")
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
    return run


@pytest.fixture
def local_run(tmp_path, state_env):
    """A RunContext over a LocalHost and a 3-broker stand-in cluster (not started); torn down after."""
    run = _make_run(tmp_path, "local")
    yield run
    run.history.close()
    run.host.teardown()


@pytest.fixture(params=["local", "docker"])
def any_run(request, tmp_path, state_env):
    """Like ``local_run``, once per backend (docker skipped without an engine)."""
    run = _make_run(tmp_path, request.param)
    yield run
    run.history.close()
    run.host.teardown()
