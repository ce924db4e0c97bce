"""Known programs a system under test uses beside its own nodes, started as nodes of their own.

A description's role may name a ``service`` instead of a command line when the program needs more than one:
its data prepared by a tool of its own, a user other than root, a readiness check that is not Kafka's.
The service then gives the role's command line (``argv``), its preparation (``prepare``, before the first
start only: a restart keeps the data), its readiness (``wait_ready``) and the signal that stops it cleanly
and promptly (``stop_signal``, which the cluster adapter hands to the host for ``stop``), all through the
``Host`` so the same code serves the local backend (processes on this machine) and docker (inside the
node's container).

``postgresql``: PostgreSQL from Debian's packages, as the storage node of systems that keep their data in
it (tansu). ``initdb`` runs as the ``postgres`` user (PostgreSQL refuses to run as root) into the node's
data directory; the server listens on the node's address only, with Unix sockets off (a node directory's
path is longer than a socket path may be) and ``fsync`` and ``synchronous_commit`` at their durable
defaults, trusting connections from the cluster network (a test network). Readiness is a query that
succeeds; the first time, the role ``kraftcheck`` and its database ``kraftcheck`` are created, and the
schema files the setting names (``schema`` in the description, a directory of ``*.sql``) are applied in
name order. It stops on SIGINT, PostgreSQL's *fast* shutdown (clients are disconnected, a checkpoint is
written, the server exits): its SIGTERM is a *smart* shutdown that waits until every client has left,
and brokers keep pooled connections open, so a SIGTERM would only end in the SIGKILL after the timeout.
"""

from __future__ import annotations

import shlex
import signal
import time
from typing import Any

from harness.kafka_cluster import ClusterError

# The server's directory differs between PostgreSQL versions; the newest installed one is used.
PG_BIN = "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
DATABASE = USER = PASSWORD = "kraftcheck"


class PostgreSQL:
    """PostgreSQL as a storage node (module docstring)."""

    name = "postgresql"
    stop_signal = signal.SIGINT

    @staticmethod
    def pgdata(cluster: Any, node: str) -> str:
        """The cluster directory, as the node sees it."""
        return cluster.host.node_path(node, str(cluster.data_path(node) / "pg"))

    def _as_postgres(self, program: str, args: list[str]) -> list[str]:
        """A command line that runs a PostgreSQL program as the ``postgres`` user (keeping the node's group,
        which the network nemesis matches on).

        The node directory lies under the run's store, whose ancestors the ``postgres`` user may not be
        allowed to enter (a pytest temporary directory, a store in root's home: mode 0700). Where the
        capability can be had (the local backend, as root), the program keeps CAP_DAC_READ_SEARCH across
        the change of user so it can reach its data; a container without it in its bounding set runs the
        program without, and reaches the node directory through the bind mount's own parents."""
        caps = "--inh-caps=+dac_read_search --ambient-caps=+dac_read_search"
        # The clock nemesis preloads libfaketime into the node's processes. Loaded into this root wrapper it
        # would create its shared semaphore as root and hand its name down (FAKETIME_SHARED), which the
        # program, running as postgres, may not open: it would exit. Only the program gets the library.
        script = (f'pre="${{LD_PRELOAD:-}}"; unset LD_PRELOAD FAKETIME_SHARED; '
                  f'caps=; if setpriv {caps} true 2>/dev/null; then caps="{caps}"; fi; '
                  f'exec setpriv --reuid=postgres $caps env ${{pre:+LD_PRELOAD="$pre"}} '
                  f'"{PG_BIN}/{program}" "$@"')
        return ["sh", "-c", script, program, *args]

    def prepare(self, cluster: Any, node: str) -> None:
        """``initdb`` into a fresh directory owned by ``postgres`` and let the cluster network in."""
        pgdata = self.pgdata(cluster, node)
        steps = [
            ["sh", "-c", f"rm -rf {shlex.quote(pgdata)} && mkdir -p {shlex.quote(pgdata)} && "
                         f"chown postgres {shlex.quote(pgdata)} && chmod 700 {shlex.quote(pgdata)}"],
            self._as_postgres("initdb", ["-D", pgdata, "-U", "postgres", "--auth=trust", "-E", "UTF8",
                                         "--no-instructions"]),
            ["sh", "-c", f"echo 'host all all 0.0.0.0/0 trust' >> {shlex.quote(pgdata)}/pg_hba.conf"],
        ]
        for argv in steps:
            code, out = cluster.host.exec(node, argv, timeout_s=120)
            if code != 0:
                raise ClusterError(f"{node}: preparing PostgreSQL ({argv[-1] if argv[0] == 'sh' else argv[0]}) "
                                   f"failed (exit {code}): {out[-1500:]}")

    def argv(self, cluster: Any, node: str) -> list[str]:
        """``postgres`` on the node's address and port, durable commits, no Unix socket."""
        role = cluster.role_of(node)
        return self._as_postgres("postgres", [
            "-D", self.pgdata(cluster, node), "-c", f"listen_addresses={cluster.host.ip(node)}",
            "-p", str(role.port), "-c", "unix_socket_directories=", "-c", "fsync=on",
            "-c", "synchronous_commit=on", "-c", "max_connections=200"])

    def psql(self, cluster: Any, node: str, sql: str, database: str = "postgres") -> tuple[int, str]:
        """Run ``sql`` through ``psql`` over TCP against the node; (exit code, output)."""
        role = cluster.role_of(node)
        argv = ["sh", "-c", f'exec "{PG_BIN}/psql" "$@"', "psql", "-h", cluster.host.ip(node), "-p", str(role.port),
                "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql]
        return cluster.host.exec(node, argv, timeout_s=60)

    def wait_ready(self, cluster: Any, node: str, timeout_s: float) -> None:
        """Wait until a query succeeds; create the role and database the first time."""
        deadline = time.monotonic() + timeout_s
        out = ""
        while time.monotonic() < deadline:
            if not cluster.host.is_running(node):
                raise ClusterError(f"{node}: PostgreSQL exited; last log lines:\n"
                                   + "\n".join(cluster.host.logs(node).splitlines()[-15:]))
            code, out = self.psql(cluster, node, f"select 1 from pg_database where datname = '{DATABASE}'")
            if code == 0:
                if out.strip() != "1":
                    self._create_database(cluster, node)
                return
            time.sleep(0.3)
        raise ClusterError(f"{node}: PostgreSQL not answering after {timeout_s:g} s: {out[-500:]}")

    def _create_database(self, cluster: Any, node: str) -> None:
        for sql, database in ((f"create role {USER} login superuser password '{PASSWORD}'", "postgres"),
                              (f"create database {DATABASE} owner {USER}", "postgres")):
            code, out = self.psql(cluster, node, sql, database)
            if code != 0:
                raise ClusterError(f"{node}: {sql!r} failed: {out[-1000:]}")
        for path in cluster.schema_files():
            code, out = self.psql(cluster, node, path.read_text(encoding="utf-8"), DATABASE)
            if code != 0:
                raise ClusterError(f"{node}: applying {path} failed: {out[-1500:]}")


SERVICES: dict[str, Any] = {PostgreSQL.name: PostgreSQL()}
"""Service name (a role's ``service``) -> the service."""
