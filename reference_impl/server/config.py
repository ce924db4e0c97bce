"""Node configuration: one Java-properties file per node (the shared node-process contract).

``load_config(path)`` parses and validates the file and returns a frozen ``NodeConfig``; any unknown key or
invalid value raises ``ConfigError`` naming the key, and ``load_or_exit`` turns that into exit code 2 with
the message on stderr, as the contract requires. Keys (defaults follow Apache Kafka 3.5 where it has one):

==========================================  ==========================================================
``node.id``                                  int >= 0, required
``process.roles``                            ``broker`` | ``controller``, required
``listeners``                                ``HOST:PORT`` this node listens on, required
``advertised.listeners``                     ``HOST:PORT`` returned by Metadata (default: listeners)
``controller.quorum.bootstrap.servers``      ``HOST:PORT`` of the controller (brokers need it or the voters)
``controller.quorum.voters``                 ``ID@HOST:PORT,...``: the controller quorum (Kafka's static voter
                                             set); a controller must be one of them. Absent: one controller
``controller.quorum.election.timeout.ms``    int > 0 (default 1000; randomised up to twice that)
``controller.quorum.fetch.timeout.ms``       int > 0 (default 2000; a follower silent this long stands)
``controller.quorum.election.backoff.max.ms`` int > 0 (default 1000)
``controller.quorum.retry.backoff.ms``       int > 0 (default 20)
``controller.quorum.request.timeout.ms``     int > 0 (default 2000)
``controller.quorum.pre.vote.enable``        bool: KIP-996's pre-vote round (default true; kraftcheck's key)
``log.dirs``                                 one data directory (may be a FUSE mount), required
``trace.file``                               JSONL trace path (default ``<log.dirs>/trace.jsonl``)
``protocol.variant``                         ``v3.5`` | ``kip966`` (default v3.5)
``unclean.leader.election.enable``           bool (default false)
``min.insync.replicas``                      int >= 1 (default 1)
``default.replication.factor``               int >= 1 (default 1)
``num.partitions``                           int >= 1 (default 1)
``replica.lag.time.max.ms``                  int > 0 (default 30000, Kafka's)
``broker.session.timeout.ms``                int > 0 (default 9000)
``broker.heartbeat.interval.ms``             int > 0 (default 2000)
``reassignment.mode``                        ``all-at-once`` | ``incremental`` (default all-at-once)
``reassignment.parallel.replica.count``      int >= 1 (default Int.MAX: KIP-435's backward default)
``reassignment.parallel.partition.count``    int >= 1 (default Int.MAX)
``reassignment.parallel.leader.movements``   int >= 1 (default Int.MAX)
``flush.messages``                           int >= 1 (default Long.MAX: leave flushing to the OS)
``flush.ms``                                 int >= 0 (default Long.MAX)
``inject.bug``                               a name from ``bugs.BUGS`` (default none)
``metadata.fetch.max.records``               int >= 1: records per metadata-log pull (default 5000)
``unclean.recovery.strategy``                ``balanced`` | ``proactive`` | ``manual`` (KIP-966 K7,
                                             controller; default balanced)
``transaction.partition.verification.enable`` bool: KIP-890 part 1, a partition leader verifies with the
                                             coordinator before a batch opens a transaction (default true,
                                             Kafka 3.6+; false is Kafka before it: hanging transactions)
==========================================  ==========================================================

Booleans accept ``true``/``false`` (any case), as Kafka does. Only the listed keys exist: a typo is an
error, not a silently ignored setting, so a harness cannot believe it ran a configuration it did not.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from reference_impl.protocol.replica_messages import REPLICA_LAG_TIME_MAX_MS, VARIANTS
from reference_impl.server.bugs import BUGS

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


class ConfigError(ValueError):
    """An invalid node configuration; the message names the offending key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"config key {key!r}: {message}")
        self.key = key


@dataclass(frozen=True)
class Endpoint:
    """A ``HOST:PORT`` pair."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class NodeConfig:
    """A validated node configuration (field names are the keys with dots as underscores)."""

    node_id: int
    process_roles: str
    listeners: Endpoint
    advertised_listeners: Endpoint
    controller_quorum_bootstrap_servers: Endpoint | None
    log_dirs: str
    trace_file: str
    protocol_variant: str = "v3.5"
    unclean_leader_election_enable: bool = False
    min_insync_replicas: int = 1
    default_replication_factor: int = 1
    num_partitions: int = 1
    replica_lag_time_max_ms: int = REPLICA_LAG_TIME_MAX_MS
    broker_session_timeout_ms: int = 9000
    broker_heartbeat_interval_ms: int = 2000
    reassignment_mode: str = "all-at-once"
    reassignment_parallel_replica_count: int = INT_MAX
    reassignment_parallel_partition_count: int = INT_MAX
    reassignment_parallel_leader_movements: int = INT_MAX
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    inject_bug: str | None = None
    metadata_fetch_max_records: int = 5000
    unclean_recovery_strategy: str = "balanced"
    controller_quorum_voters: tuple[tuple[int, Endpoint], ...] = ()
    controller_quorum_election_timeout_ms: int = 1000
    controller_quorum_fetch_timeout_ms: int = 2000
    controller_quorum_election_backoff_max_ms: int = 1000
    controller_quorum_retry_backoff_ms: int = 20
    controller_quorum_request_timeout_ms: int = 2000
    controller_quorum_pre_vote_enable: bool = True
    transaction_partition_verification_enable: bool = True
    # The keys given in the file (the rest are defaults): DescribeConfigs reports their source.
    explicit_keys: frozenset[str] = frozenset()

    @property
    def elr_enabled(self) -> bool:
        """KIP-966 is on iff ``protocol.variant = kip966``."""
        return self.protocol_variant == "kip966"

    @property
    def voters(self) -> dict[int, Endpoint]:
        """The controller quorum: voter id -> endpoint (a lone controller: itself; a broker without voters:
        its bootstrap controller, named by id 0 as the harness names a lone controller)."""
        if self.controller_quorum_voters:
            return dict(self.controller_quorum_voters)
        if self.process_roles == "controller":
            return {self.node_id: self.advertised_listeners}
        ctl = self.controller_quorum_bootstrap_servers
        return {0: ctl} if ctl is not None else {}

    @property
    def name(self) -> str:
        """The node name used in traces and logs (its id, as the harness names nodes by id)."""
        return str(self.node_id)


def _int(lo: int, hi: int = LONG_MAX):
    def parse(key: str, raw: str) -> int:
        try:
            value = int(raw, 10)
        except ValueError:
            raise ConfigError(key, f"not an integer: {raw!r}") from None
        if not lo <= value <= hi:
            raise ConfigError(key, f"{value} out of range [{lo}, {hi}]")
        return value
    return parse


def _choice(*options: str):
    def parse(key: str, raw: str) -> str:
        if raw not in options:
            raise ConfigError(key, f"{raw!r} is not one of {', '.join(options)}")
        return raw
    return parse


def _bool(key: str, raw: str) -> bool:
    low = raw.lower()
    if low not in ("true", "false"):
        raise ConfigError(key, f"not a boolean (true/false): {raw!r}")
    return low == "true"


def _endpoint(key: str, raw: str) -> Endpoint:
    # Accept Kafka's listener syntax with a name prefix (PLAINTEXT://host:port) as well as bare host:port.
    text = raw.split("://", 1)[1] if "://" in raw else raw
    if "," in text:
        raise ConfigError(key, f"exactly one HOST:PORT expected, got {raw!r}")
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ConfigError(key, f"expected HOST:PORT, got {raw!r}")
    try:
        number = int(port)
    except ValueError:
        raise ConfigError(key, f"port is not an integer in {raw!r}") from None
    if not 0 <= number <= 65535:
        raise ConfigError(key, f"port {number} out of range")
    return Endpoint(host, number)


def _voters(key: str, raw: str) -> tuple[tuple[int, Endpoint], ...]:
    out: list[tuple[int, Endpoint]] = []
    for item in (x.strip() for x in raw.split(",")):
        node, sep, address = item.partition("@")
        if not sep:
            raise ConfigError(key, f"expected ID@HOST:PORT, got {item!r}")
        try:
            voter = int(node)
        except ValueError:
            raise ConfigError(key, f"voter id is not an integer in {item!r}") from None
        if voter < 0 or voter in dict(out):
            raise ConfigError(key, f"voter id {voter} negative or given twice")
        out.append((voter, _endpoint(key, address)))
    if not out:
        raise ConfigError(key, "no voters")
    return tuple(out)


def _text(key: str, raw: str) -> str:
    if not raw:
        raise ConfigError(key, "empty value")
    return raw


def _bug(key: str, raw: str) -> str | None:
    if raw in ("", "none"):
        return None
    if raw not in BUGS:
        raise ConfigError(key, f"unknown bug {raw!r}; known: {', '.join(BUGS)}")
    return raw


PARSERS: dict[str, Any] = {
    "node.id": _int(0, INT_MAX),
    "process.roles": _choice("broker", "controller"),
    "listeners": _endpoint,
    "advertised.listeners": _endpoint,
    "controller.quorum.bootstrap.servers": _endpoint,
    "log.dirs": _text,
    "trace.file": _text,
    "protocol.variant": _choice(*VARIANTS),
    "unclean.leader.election.enable": _bool,
    "min.insync.replicas": _int(1, INT_MAX),
    "default.replication.factor": _int(1, INT_MAX),
    "num.partitions": _int(1, INT_MAX),
    "replica.lag.time.max.ms": _int(1),
    "broker.session.timeout.ms": _int(1, INT_MAX),
    "broker.heartbeat.interval.ms": _int(1, INT_MAX),
    "reassignment.mode": _choice("all-at-once", "incremental"),
    "reassignment.parallel.replica.count": _int(1, INT_MAX),
    "reassignment.parallel.partition.count": _int(1, INT_MAX),
    "reassignment.parallel.leader.movements": _int(1, INT_MAX),
    "flush.messages": _int(1),
    "flush.ms": _int(0),
    "inject.bug": _bug,
    "metadata.fetch.max.records": _int(1, INT_MAX),
    "unclean.recovery.strategy": _choice("balanced", "proactive", "manual"),
    "controller.quorum.voters": _voters,
    "controller.quorum.election.timeout.ms": _int(1, INT_MAX),
    "controller.quorum.fetch.timeout.ms": _int(1, INT_MAX),
    "controller.quorum.election.backoff.max.ms": _int(1, INT_MAX),
    "controller.quorum.retry.backoff.ms": _int(1, INT_MAX),
    "controller.quorum.request.timeout.ms": _int(1, INT_MAX),
    "controller.quorum.pre.vote.enable": _bool,
    "transaction.partition.verification.enable": _bool,
}
REQUIRED = ("node.id", "process.roles", "listeners", "log.dirs")


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java-properties text: ``key=value`` or ``key: value``, ``#``/``!`` comments, ``\\`` continuations.

    A key given twice is an error (raised as ``ConfigError``): the harness writes each key once.
    """
    result: dict[str, str] = {}
    pending = ""
    for raw_line in text.splitlines():
        line = pending + raw_line.strip() if pending else raw_line.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            key, value = line, ""
        else:
            key, value = line[:cut].strip(), line[cut + 1:].strip()
        if key in result:
            raise ConfigError(key, "given more than once")
        result[key] = value
    if pending:
        key = pending.split("=", 1)[0].strip()
        result.setdefault(key, pending.split("=", 1)[1].strip() if "=" in pending else "")
    return result


def config_from_properties(props: dict[str, str]) -> NodeConfig:
    """Validate a parsed key/value map into a ``NodeConfig`` (raises ``ConfigError`` naming the key)."""
    for key in props:
        if key not in PARSERS:
            raise ConfigError(key, "unknown key")
    for key in REQUIRED:
        if key not in props:
            raise ConfigError(key, "required but missing")
    values = {key.replace(".", "_"): PARSERS[key](key, value) for key, value in props.items()}
    if values["process_roles"] == "broker" and "controller_quorum_bootstrap_servers" not in values \
            and "controller_quorum_voters" not in values:
        raise ConfigError("controller.quorum.bootstrap.servers", "required for a broker (or controller.quorum.voters)")
    if values["process_roles"] == "controller" and "controller_quorum_voters" in values \
            and values["node_id"] not in dict(values["controller_quorum_voters"]):
        raise ConfigError("controller.quorum.voters", f"node.id {values['node_id']} is not one of the voters")
    values.setdefault("controller_quorum_bootstrap_servers", None)
    values.setdefault("advertised_listeners", values["listeners"])
    values.setdefault("trace_file", os.path.join(values["log_dirs"], "trace.jsonl"))
    # A bug that acts in the other kind of process is accepted and inert here: the harness writes one
    # inject.bug setting into every node's file.
    return NodeConfig(**values, explicit_keys=frozenset(props))


def load_config(path: str | os.PathLike[str]) -> NodeConfig:
    """Read and validate a config file (raises ``ConfigError``; an unreadable file names ``--config``)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ConfigError("--config", f"cannot read {os.fspath(path)!r}: {exc.strerror}") from None
    return config_from_properties(parse_properties(text))


def load_or_exit(path: str | os.PathLike[str], expected_role: str) -> NodeConfig:
    """``load_config`` for a process entry point: on error print the message and exit with code 2."""
    try:
        config = load_config(path)
        if config.process_roles != expected_role:
            raise ConfigError("process.roles", f"this is the {expected_role} process, config says "
                                                f"{config.process_roles!r}")
    except ConfigError as exc:
        print(f"invalid configuration: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    return config
