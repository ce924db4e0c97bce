"""Checks a command makes before it starts anything: is the machine able to run what was asked?"""

from __future__ import annotations

import docker


def docker_problem() -> str | None:
    """A clear message when no Docker engine is reachable (None when it is), with the local-backend hint."""
    try:
        client = docker.from_env(timeout=5)
        client.ping()
        client.close()
    except Exception as exc:
        return (f"cannot reach a Docker engine ({type(exc).__name__}: {exc}).\n"
                "Start Docker (or set DOCKER_HOST), or run without Docker: --backend local")
    return None
