"""Host backends: where nodes run.

- ``local`` (``LocalHost``, the embedded default): each node is a process on this machine with its own
  127.A.B.x address (one /24 per run inside 127/8), its own process group and a parent-death signal, its
  node directory under the run's store directory, its output in ``<node_dir>/node.log``.
- ``docker`` (``DockerHost``): each node is a container on one internal Docker network with a fixed
  subnet and fixed addresses (both made through testcontainers, its Ryuk reaper off), started from the
  base image that ``harness.image`` builds from Debian packages (no registry). The project source is bind-mounted read-only at ``/kraftcheck``, so code
  changes need no image rebuild; the node directory is bind-mounted at the same path it has on the host.

Both implement ``harness.interfaces.Host`` and share the node list, node directories and node logs
(``base.NodeDirsMixin``); addressing, process control and ``exec`` are each backend's own. Both record what
they start in the state directory (``harness.hosts.state``) so that ``kraftcheck clean``
(``harness.cleanup``) can remove it after a crash of the harness. Faults live in ``nemesis/``; hosts
offer the abilities a nemesis asks for (``Killable``, ``Pausable``, ``NetworkRules``, ``ClockSkew``,
``FuseMounts``, ``NodeExec`` in ``harness.interfaces``), with the parts both backends share in
``base.SignalsMixin``, ``iptables`` and ``faketime``. A third backend (SSH, Kubernetes) implements
``Host`` and whichever abilities it can; the nemeses need no change and refuse what it lacks.

What a host guarantees: a node's address and directory are fixed for the run (a restarted node keeps
them), ``pid`` names the node's current process as seen from this machine (so signals reach the right
process on both backends), and ``teardown`` stops everything it started and is safe to call twice. What it
cannot see: what a node does with its files and sockets; readiness is the cluster adapter's business
(``harness.cluster``), through the Kafka protocol, not the host's.
"""

from __future__ import annotations

import os
from typing import Any

from harness.hosts.docker import DockerHost
from harness.hosts.local import LocalHost

BACKENDS = ("local", "docker")


def make_host(backend: str, base_dir: str | os.PathLike, run_id: str | None = None, **options: Any):
    """Create the host for ``backend`` (``local`` or ``docker``); options go to its constructor."""
    if backend == "local":
        return LocalHost(base_dir, run_id=run_id, **options)
    if backend == "docker":
        return DockerHost(base_dir, run_id=run_id, **options)
    raise ValueError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
