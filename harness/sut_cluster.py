"""The cluster adapter for any system a description names (``harness.sut``): its nodes on a ``Host``.

Node names: a role's nodes are ``<role><i>`` (``store1``), except brokers, which are ``b1`` .. ``bN`` as
for the reference implementation, so every nemesis target and report reads the same. A node's command
line, environment and configuration file come from its role's templates, filled with the node's facts:

==================  =====================================================================================
``{binary}``         the setting's build executable (``harness.sut_install``), as the node sees it
``{address}``        the node's address on the cluster network; ``{port}`` its role's port
``{node_id}``        the role's ``id_offset`` plus 1 .. count (brokers: the number in ``bN``)
``{node_dir}``       the node's directory, ``{data_dir}`` its data directory, as the node sees them
``{config}``         the role's configuration file, as the node sees it
``{storage}``        the setting's storage URL, itself filled with these facts
``{<role>_address}``, ``{<role>_port}``  the first node of another role (``{store_address}``)
``{<role>_voters}``  ``id@address:port`` of every node of a role, comma-separated (controller quorums)
``{cluster_id}``     the description's cluster id (a fixed one: Kafka wants a base64 UUID)
``{dist}``           the ``--sut-path`` directory of a distribution build, as the node sees it
``{min_isr}`` ...    the run's protocol settings: ``min_isr``, ``replication_factor``, ``keys``,
                     ``unclean_leader_election``, ``replica_lag_time_max_ms``, ``broker_session_timeout_ms``,
                     ``broker_heartbeat_interval_ms`` (booleans as true/false)
``"{*name}"``        a whole argument: replaced by the setting's list ``name`` (nothing when it has none)
==================  =====================================================================================

Roles without a command line name a known ``service`` (``harness.sut_services``: PostgreSQL), which
prepares its data, starts and stops the way that program needs (its stop signal is handed to the host,
so the ``stop`` nemesis and teardown stop it cleanly, not by SIGKILL after a timeout). Roles start in
description order, each waiting until it is ready (a service: its own check; a Kafka role: every node
answers Metadata and lists itself), so brokers find their store up.

The build reaches the nodes through the host (``share_readonly``): the local backend runs it where it lies;
docker bind-mounts its directory read-only into the containers (a cached build's directory under
``<cache>/suts``; a user's distribution whole; else the directory holding ``bin/``, or the binary's own),
and ``{binary}`` and ``{dist}`` name them there. A role that needs Debian ``packages`` (PostgreSQL) gets them on
this machine from ``harness.sut_install``; on docker its node runs from the image variant that has them
(``use_packages``), so only that node's image carries them.

What a node answers as (its Kafka node id) is read from its own Metadata response, not assumed: tansu,
for one, answers as node 111 on every broker. Readiness, recovery and topic creation then go through the
Kafka protocol exactly as for the reference implementation (``harness.kafka_cluster``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.image import cache_dir
from harness.kafka_cluster import ClusterError, KafkaCluster
from harness.spec import RunSpec
from harness.sut import Role, SutDescription, SutError
from harness.sut_services import SERVICES

# The spec fields a description's templates may use, as Kafka's configuration would need them.
SPEC_FACTS = ("min_isr", "replication_factor", "keys", "unclean_leader_election", "replica_lag_time_max_ms",
              "broker_session_timeout_ms", "broker_heartbeat_interval_ms")


class SutCluster(KafkaCluster):
    """A described system as a ``harness.interfaces.Cluster`` (see the module docstring)."""

    def __init__(self, host: Any, run: Any, description: SutDescription, setting: str | None,
                 binary: str | Path | None, ready_timeout_s: float = 60.0, dist: str | Path | None = None):
        super().__init__(host, run, ready_timeout_s)
        self.description = description
        self.setting = description.setting(setting)
        self.binary = str(binary) if binary is not None else ""
        self.node_binary = self.binary  # the executable as the nodes see it (set when the nodes are named)
        self.dist = str(dist) if dist is not None else ""
        self.node_dist = self.dist  # the distribution's directory as the nodes see it
        self._roles: dict[str, Role] = {}
        self._ids: dict[str, int] = {}
        self._answers_as: dict[str, int] = {}

    # -- names and addresses ---------------------------------------------------------------------

    def nodes(self) -> list[str]:
        """Every node, in start order (roles in description order)."""
        return list(self._roles)

    def brokers(self) -> list[str]:
        """The nodes of the roles clients send records to and read them from (``kafka = true``)."""
        return [node for node, role in self._roles.items() if role.kafka]

    def role_of(self, node: str) -> Role:
        """The role ``node`` plays."""
        return self._roles[node]

    def nodes_of(self, role: str) -> list[str]:
        """The nodes of one role."""
        return [node for node, r in self._roles.items() if r.name == role]

    def node_id(self, node: str) -> int:
        """The id the node answers as in Metadata (once seen), else its number within its role."""
        return self._answers_as.get(node, self._ids.get(node, 0))

    def broker_node(self, broker_id: int) -> str | None:
        """The first broker that answers as ``broker_id`` (several may: tansu's all answer as 111)."""
        return next((n for n in self.brokers() if self.node_id(n) == int(broker_id)), None)

    def address(self, node: str) -> str:
        """``host:port`` of the node."""
        return f"{self.host.ip(node)}:{self._roles[node].port}"

    def controllers(self) -> list[str]:
        """The system's controller nodes (its role of that name; none when it has no such role)."""
        return self.nodes_of("controller")

    def data_nodes(self) -> list[str]:
        """The nodes that keep the system's data (the setting's ``data_roles``; every node by default):
        where faults that lose unsynced data can lose something."""
        roles = self.setting.data_roles
        return [node for node, role in self._roles.items() if roles is None or role.name in roles]

    def active_controller(self) -> str | None:
        """The system's controller node, when it has a role of that name (None otherwise)."""
        controllers = self.nodes_of("controller")
        return controllers[0] if controllers else None

    # -- templates -------------------------------------------------------------------------------

    def facts(self, node: str) -> dict[str, str]:
        """The values a node's templates are filled with (module docstring)."""
        role = self._roles[node]
        node_dir = Path(self.host.node_dir(node))
        facts = {"binary": self.node_binary, "address": self.host.ip(node), "port": str(role.port),
                 "node_id": str(self._ids[node]), "node_dir": self.host.node_path(node, str(node_dir)),
                 "data_dir": self.host.node_path(node, str(node_dir / role.data_dir)),
                 "config": self.host.node_path(node, str(node_dir / (role.config_file or "config"))),
                 "cluster_id": self.description.cluster_id, "dist": self.node_dist}
        for key in SPEC_FACTS:
            value = getattr(self.spec, key) if self.spec is not None else None
            if value is not None:
                facts[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        for name in self.description.roles:
            members = self.nodes_of(name)
            if members:
                facts[f"{name}_address"] = self.host.ip(members[0])
                facts[f"{name}_port"] = str(self._roles[members[0]].port)
                facts[f"{name}_voters"] = ",".join(f"{self._ids[m]}@{self.address(m)}" for m in members)
        if self.setting.storage is not None:
            facts["storage"] = _fill(self.setting.storage, facts, "storage")
        return facts

    def argv(self, node: str) -> list[str]:
        """The role's command line for ``node``, or its service's."""
        role = self._roles[node]
        if role.service is not None:
            return SERVICES[role.service].argv(self, node)
        return self._command(role.argv, self.facts(node), f"roles.{role.name}.argv")

    def _command(self, template: tuple[str, ...], facts: dict[str, str], where: str) -> list[str]:
        """A command line from its template: ``"{*name}"`` takes the setting's list, the rest is filled."""
        lists = dict(self.setting.lists)
        argv: list[str] = []
        for arg in template:
            if arg.startswith("{*") and arg.endswith("}"):
                argv.extend(lists.get(arg[2:-1], ()))
            else:
                argv.append(_fill(arg, facts, where))
        return argv

    def env(self, node: str) -> dict[str, str]:
        """The role's environment, then whatever the nemeses add."""
        facts = self.facts(node)
        role = self._roles[node]
        return {**{k: _fill(v, facts, f"roles.{role.name}.env") for k, v in role.env}, **super().env(node)}

    def config_paths(self, node: str) -> list[Path]:
        """The role's configuration file, when it has one."""
        role = self._roles[node]
        return [Path(self.host.node_dir(node)) / role.config_file] if role.config_file else []

    def schema_files(self) -> list[Path]:
        """The setting's schema files for its store, in the order they are applied."""
        return sorted(self.setting.schema.glob("*.sql")) if self.setting.schema is not None else []

    def data_path(self, node: str) -> Path:
        """The role's data directory in the node directory."""
        return Path(self.host.node_dir(node)) / self._roles[node].data_dir

    # -- lifecycle -------------------------------------------------------------------------------

    def plan(self, spec: RunSpec) -> None:
        """Name the nodes for ``spec`` (refusing a broker count the setting cannot serve)."""
        self.spec = spec
        brokers = int(spec.brokers)
        limit = self.setting.max_brokers
        if limit is not None and brokers > limit:
            raise SutError(f"{self.description.name} setting {self.setting.name!r} serves at most {limit} "
                           f"broker(s) ({self.setting.summary}); run it with --brokers {limit} "
                           f"--replication-factor 1 --min-isr 1")
        self._roles, self._ids = {}, {}
        self._share_programs()
        for role in self.description.roles_of(self.setting.name):
            count = role.how_many(spec)
            for i in range(1, count + 1):
                node = f"b{i}" if role.name == "broker" else (role.name if count == 1 else f"{role.name}{i}")
                self._roles[node], self._ids[node] = role, role.id_offset + i
                service = SERVICES.get(role.service) if role.service is not None else None
                if service is not None and hasattr(self.host, "set_stop_signal"):
                    self.host.set_stop_signal(node, service.stop_signal)
                if role.packages and hasattr(self.host, "use_packages"):
                    self.host.use_packages(node, role.packages)

    def _share_programs(self) -> None:
        """Make the build (and a distribution's directory) visible to the nodes; name them as nodes see them.
        A distribution is shared whole, and a binary inside it is named within it."""
        # a host without the method shares this machine's file system with its nodes
        share = getattr(self.host, "share_readonly", str)
        dist = Path(self.dist).resolve() if self.dist else None
        if dist is not None:
            self.node_dist = share(str(dist))
        if not self.binary:
            return
        binary = Path(self.binary).resolve()
        if dist is not None and binary.is_relative_to(dist):
            self.node_binary = str(Path(self.node_dist) / binary.relative_to(dist))
            return
        root = program_root(binary)
        self.node_binary = str(Path(share(str(root))) / binary.relative_to(root))

    def setup(self, spec: RunSpec) -> None:
        """Prepare every node, then start role by role, each ready before the next starts."""
        self.plan(spec)
        for node in self.nodes():
            self.prepare_node(node)
        deadline = time.monotonic() + self.ready_timeout_s
        for role in self.description.roles_of(self.setting.name):
            members = self.nodes_of(role.name)
            for node in members:
                self.start_node(node)
            if role.service is not None:
                for node in members:
                    SERVICES[role.service].wait_ready(self, node, max(1.0, deadline - time.monotonic()))
        self.wait_ready(max(1.0, deadline - time.monotonic()))

    def prepare_node(self, node: str) -> None:
        """Create the data directory, write the configuration file, run the role's prepare commands."""
        role = self._roles[node]
        self.data_path(node).mkdir(parents=True, exist_ok=True)
        facts = self.facts(node)
        if role.config_file:
            lines = [f"{key}={_fill(value, facts, f'roles.{role.name}.config')}" for key, value in role.config]
            lines += [f"{key}={_fill(value, facts, 'settings.properties')}" for key, value in self.setting.properties]
            (Path(self.host.node_dir(node)) / role.config_file).write_text(
                "# written by kraftcheck from " + self.description.source + "\n" + "\n".join(lines) + "\n",
                encoding="utf-8")
        if role.service is not None:
            SERVICES[role.service].prepare(self, node)
        for command in role.prepare:
            argv = self._command(command, facts, f"roles.{role.name}.prepare")
            code, out = self.host.exec(node, argv, timeout_s=120)
            if code != 0:
                raise ClusterError(f"{node}: preparing with {' '.join(argv)} failed (exit {code}): {out[-1500:]}")

    def wait_ready(self, timeout_s: float) -> None:
        """Wait until every broker answers Metadata and lists itself; learn the id each answers as."""
        deadline = time.monotonic() + timeout_s
        last_error = None
        while time.monotonic() < deadline:
            dead = self._dead_nodes()
            if dead and not self._torn_down:
                node, tail = next(iter(dead.items()))
                raise ClusterError(f"node {node} exited during startup; last log lines:\n{tail}")
            try:
                if self.brokers_ready():
                    return
            except Exception as exc:  # not up yet
                last_error = f"{type(exc).__name__}: {exc}"
            time.sleep(0.3)
        raise ClusterError(f"brokers not all answering Metadata after {timeout_s:g} s; last error: {last_error}")

    def brokers_ready(self) -> bool:
        """Every broker answers Metadata itself, listing a broker at its own address."""
        for node in self.brokers():
            answered = self._self_listing(node)
            if answered is None:
                return False
            self._answers_as[node] = answered
        return True

    def _self_listing(self, node: str) -> int | None:
        """The id under which ``node``'s own Metadata lists its address (None: not listed)."""
        admin = self._admin([self.address(node)], 5.0)
        try:
            brokers = admin.describe_cluster()["brokers"]
        finally:
            admin.close()
        ip, port = self.address(node).rsplit(":", 1)
        for broker in brokers:
            if str(broker.get("host")) == ip and int(broker.get("port", -1)) == int(port):
                return int(broker["broker_id"])
        return None

    def stop_grace_s(self) -> float:
        """The longest grace any role asks for."""
        return max((role.stop_timeout_s for role in self._roles.values()), default=10.0)

    def _stop_quietly(self, node: str) -> None:
        """Teardown's stop of one node: a node that is not a broker (a store) gets its role's grace, so a
        store's shutdown checkpoint is not cut short; brokers had theirs already."""
        role = self._roles.get(node)
        if role is None or role.kafka:
            super()._stop_quietly(node)
            return
        try:
            self.host.stop(node, timeout_s=role.stop_timeout_s)
        except Exception:
            pass


def program_root(binary: Path) -> Path:
    """The directory to make visible to the nodes for ``binary``: its build directory when it is a cached
    build (``<cache>/suts/<build>/...``: a wheel's binary may need files beside it), the distribution root
    when it sits in a ``bin`` directory (``kafka_2.13-3.9.0/bin/...`` needs its ``libs``), else its own."""
    binary = binary.resolve()
    suts = (cache_dir() / "suts").resolve()
    if binary.is_relative_to(suts) and len(binary.relative_to(suts).parts) > 1:
        return suts / binary.relative_to(suts).parts[0]
    if binary.parent.name == "bin":
        return binary.parent.parent
    return binary.parent


def _fill(template: str, facts: dict[str, str], where: str) -> str:
    """``template`` with ``{fact}`` filled; an unknown name is an error of the description."""
    try:
        return template.format_map(facts)
    except KeyError as exc:
        raise SutError(f"{where}: {template!r} names {{{exc.args[0]}}}, which is not a fact of this node "
                       f"({', '.join(sorted(facts))})") from None
    except (ValueError, IndexError) as exc:
        raise SutError(f"{where}: {template!r} is not a valid template ({exc})") from None
