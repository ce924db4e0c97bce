"""Shared fixtures for the reference server's process tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reference_impl.server.local_cluster import LocalCluster


@pytest.fixture
def start_local_cluster(tmp_path) -> Iterator[Callable[..., LocalCluster]]:
    """A factory ``start(name, wait_s, **LocalCluster kwargs)`` that starts a real ``LocalCluster`` under
    ``tmp_path/name`` and returns it once ready; every cluster it started is closed at teardown, also one
    whose start failed (its processes may be up)."""
    started: list[LocalCluster] = []

    def start(name: str, wait_s: float, **kwargs: Any) -> LocalCluster:
        cluster = LocalCluster(str(tmp_path / name), **kwargs)
        started.append(cluster)
        cluster.start(wait_s)
        return cluster

    try:
        yield start
    finally:
        for cluster in reversed(started):
            cluster.close()
