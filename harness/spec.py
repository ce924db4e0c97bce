"""The run spec: typed, validated data that describes one run and can replay it (``spec.json``).

Jepsen's habit: the test is plain data; live handles (hosts, sockets, threads) live beside it in
``RunContext``. Everything that influences what a run does is a field of ``RunSpec``, so ``kraftcheck run
--replay STORE_DIR/spec.json`` repeats it: the seed decides the generator's op mix and timing and the
nemesis schedule; the rest configures the cluster (variant, MinISR, unclean election, flush policy), the
workload and the checks. Facts about the environment that cannot be replayed but explain a result (git
commit, image tag, the versions of Python, the Kafka clients and the container libraries) are recorded
beside the fields and ignored by a replay.

Theory of operation. ``RunSpec`` is a frozen dataclass and its field list is the one table of run
options: each field carries its type (the annotation), its default, and an ``Option`` (help text, bounds
or choices, command-line flag, the commands that take the flag). Everything else is derived from that
table, so a new option is one new field:

- validation: ``RunSpec(**options)`` coerces and checks every field and the cross-field rules (RF within
  the broker count, MinISR within RF, ratios summing to at most 1, a time limit long enough for one turn
  of each fault family asked for: ``harness.fault_time``), rejecting NaN and infinities, unknown
  ``--inject-bug`` and nemesis names (read by the family table's parser, ``harness.faults``), wrong JSON
  types and unknown keys, before anything starts. A nemesis interval not given is fitted to the time limit
  by the same rule, and the spec stores the interval it chose;
- replay: ``replay_options`` reads a stored spec back into options, ``replay_argv`` prints the flags;
- the command line (``harness.spec_cli``): the flags of ``kraftcheck run`` (and of ``cluster up``,
  ``scenario`` and the pytest plugin, each taking its subset) with the defaults in their help;
- the JSON Schema of ``spec.json`` (``harness.spec_schema``; committed as
  ``schemas/spec.schema.json``, which a test keeps equal to the generated one).

A run is handed the typed object: ``prepare_spec`` fixes the seed and gathers the environment facts,
and the runner, the cluster adapters, the workloads and the nemeses read ``RunSpec`` attributes; nothing
changes it during a run (what a run learns, such as the image tag, goes to the environment facts on the
run context). ``spec.json`` holds ``stored_form``: the options as JSON plus the environment facts;
``split_stored`` reads that form back. The checkers judge stored runs, so they read the stored form
through ``harness.checked_spec``, whose table lists the keys they use and their defaults.
"""

from __future__ import annotations

import json
import math
import os
import platform
import random
import re
import shlex
import subprocess
import types
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from harness.fault_time import DEFAULT_INTERVAL_S, fitted_interval_s, too_short
from harness.faults import NEMESIS_NAMES, NO_FAULTS, parse_nemesis, requested_families

SPEC_VERSION = 2
BACKENDS = ("local", "docker")
# The protocol variants. The reference implementation's core, which the harness may not import, holds the
# same list (reference_impl.protocol.replica_messages.VARIANTS); a test keeps them equal.
VARIANTS = ("v3.5", "kip966")
REASSIGNMENT_MODES = ("all-at-once", "incremental")
ACKS = ("all", 1, 0)
SUB_VIA = ("assign", "subscribe", "assign,subscribe")
# The servers' deliberate rule breaks (reference_impl/server/bugs.py, BUGS). The harness only launches the
# servers and may not import them, so the names are repeated here; a test keeps the two lists equal.
# Designs Kafka replaced (the protocol core's historical_bugs, as inject.bug values) and the KIP or ticket that
# replaced each, repeated for the same reason; the run's output and report name the KIP beside the bug.
HISTORICAL_BUG_REFERENCES = {
    "truncate-to-hwm": "KIP-101 (KAFKA-1211)",
    "fetch-without-leader-epoch": "KIP-320 (KAFKA-6880)",
    "kip279-fast-failover-divergence": "KIP-279 (KAFKA-6361)",
    "elr-switch-forgotten": "KIP-966 (PartitionChangeBuilder ELR argument)",
}
INJECTABLE_BUGS = ("ack-before-replication", "hwm-ignores-isr", "fetch-beyond-hwm", "ignore-min-isr",
                   "skip-unclean-exclusion", "metadata-no-fsync", "unclean-without-opt-in",
                   "offsets-commit-stale-generation", "group-double-assign",
                   "txn-markers-not-written", "aborted-read-committed", "fenced-producer-accepted",
                   *HISTORICAL_BUG_REFERENCES)


def injected_bug_label(name: str | None) -> str | None:
    """An ``inject_bug`` value as shown to a reader: a historical bug with the KIP that replaced it."""
    if name is None or name not in HISTORICAL_BUG_REFERENCES:
        return name
    return f"{name} ({HISTORICAL_BUG_REFERENCES[name]})"


# Consumers' isolation levels (KIP-98), as Kafka's clients spell them.
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
# Kafka's legal topic names; a test name becomes a store directory.
TOPIC_PATTERN = r"^[A-Za-z0-9._-]{1,249}$"
TEST_NAME_PATTERN = r"^(?!\.\.?$)[^/\x00\r\n]+$"
# Distributions whose versions explain a run's behaviour (clients, container control, Spark).
RECORDED_DISTRIBUTIONS = ("kafka-python", "confluent-kafka", "aiokafka", "docker", "testcontainers", "pyspark")


class SpecError(ValueError):
    """A spec (or command-line option) that cannot describe a run; the message names the key, its flag
    and, for a stored spec, the file."""

    def __init__(self, message: str, key: str | None = None, source: str | os.PathLike | None = None):
        super().__init__(message)
        self.message = message
        self.key = key
        self.source = None if source is None else str(source)

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        if self.key is None:
            return where + self.message
        flag = _FLAGS.get(self.key)
        return f"{where}{self.key}{f' ({flag})' if flag else ''}: {self.message}"

    def in_file(self, source: str | os.PathLike) -> SpecError:
        """The same error, said about the spec file ``source``."""
        return SpecError(self.message, self.key, source)


@dataclass(frozen=True)
class Option:
    """What the field table says about one field besides its type and default."""

    help: str
    flag: str | None = None  # None: a spec key only (set by a command or by hand in a spec file)
    commands: frozenset[str] = frozenset({"run"})  # the command lines that carry the flag
    choices: tuple | None = None  # allowed values (of each item, for a list)
    aliases: Mapping[Any, Any] | None = None  # spellings accepted and stored as another value
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False  # the minimum itself is not allowed
    pattern: str | None = None
    metavar: str | None = None
    default_text: str | None = None  # how the help states the default, when the value alone would not


def option(default: Any, help: str, **kwargs: Any) -> Any:
    """A ``RunSpec`` field: its default and its ``Option`` (see the class)."""
    return field(default=default, metadata={"option": Option(help=help, **kwargs)})


_EVERYWHERE = frozenset({"run", "cluster", "scenario", "pytest"})
_RUN_AND_CLUSTER = frozenset({"run", "cluster"})


@dataclass(frozen=True)
class RunSpec:
    """Every option of a run, validated on construction (see the module docstring)."""

    test_name: str = option("queue", "store sub-directory of the run", flag="--test-name", metavar="NAME",
                            pattern=TEST_NAME_PATTERN)
    # Which workloads exist is the registry's (workloads.registry, a layer above): the spec checks the form
    # of the name, and the run command checks the name against the registry before anything starts.
    workload: str = option("queue", "the workload the clients run (a registered workload's name)",
                           flag="--workload", metavar="NAME", pattern=r"^[a-z][a-z0-9-]*$")
    backend: str = option("local", "where nodes run", flag="--backend", commands=_EVERYWHERE, choices=BACKENDS)
    seed: int | None = option(None, "seed for ops and faults", flag="--seed", metavar="N",
                              commands=frozenset({"run", "scenario", "pytest"}), minimum=0,
                              default_text="random, printed")
    time_limit_s: float = option(30.0, "main phase duration in seconds", flag="--time-limit", metavar="S",
                                 commands=frozenset({"run", "pytest"}), minimum=0, exclusive_minimum=True)
    rate: float = option(50.0, "client ops per second, all processes together", flag="--rate", metavar="R",
                         minimum=0, exclusive_minimum=True)
    concurrency: int = option(4, "client processes", flag="--concurrency", metavar="C", minimum=1)
    keys: int = option(4, "keys, one partition of the topic each", flag="--keys", metavar="K",
                       commands=_RUN_AND_CLUSTER, minimum=1)
    brokers: int = option(3, "brokers", flag="--brokers", metavar="N", commands=_RUN_AND_CLUSTER, minimum=1)
    controllers: int = option(1, "controllers: the voters of the metadata quorum (fail-over needs 3 or 5)",
                              flag="--controllers", metavar="N", commands=_EVERYWHERE, minimum=1, maximum=9)
    replication_factor: int = option(3, "replicas of each partition", flag="--replication-factor",
                                     metavar="RF", commands=_RUN_AND_CLUSTER, minimum=1)
    min_isr: int = option(2, "min.insync.replicas", flag="--min-isr", metavar="N", commands=_RUN_AND_CLUSTER,
                          minimum=1)
    variant: str = option("kip966", "protocol variant", flag="--variant", choices=VARIANTS,
                          commands=frozenset({"run", "cluster", "scenario"}))
    acks: str | int = option("all", "producer acks", flag="--acks", choices=ACKS,
                             aliases={"-1": "all", -1: "all", "1": 1, "0": 0})
    idempotence: bool = option(True, "the idempotent producer (with acks=all only)", flag="--no-idempotence")
    unclean_leader_election: bool = option(False, "unclean leader election", flag="--unclean")
    flush_messages: int | None = option(None, "flush.messages", flag="--flush-messages", metavar="N", minimum=1,
                                        default_text="the OS decides")
    flush_ms: int | None = option(None, "flush.ms", flag="--flush-ms", metavar="MS", minimum=0,
                                  default_text="the OS decides")
    reassignment_mode: str = option("all-at-once", "how the controller applies a reassignment",
                                    flag="--reassignment-mode", choices=REASSIGNMENT_MODES)
    inject_bug: str | None = option(None, "a deliberate rule break in the servers, to test the checkers: "
                                    + ", ".join(INJECTABLE_BUGS), flag="--inject-bug", metavar="NAME",
                                    choices=INJECTABLE_BUGS, default_text="none")
    # The names and the families they stand for are the family table's (harness.faults).
    nemesis: tuple[str, ...] = option((), "comma-separated faults: " + ", ".join(NEMESIS_NAMES) + ", "
                                      + NO_FAULTS, flag="--nemesis", metavar="FAULTS", choices=NEMESIS_NAMES,
                                      default_text=NO_FAULTS)
    # None (not given): fitted to the time limit (harness.fault_time), and the fitted value is stored.
    nemesis_interval_s: float | None = option(None, "mean seconds between faults", flag="--nemesis-interval",
                                              metavar="S", minimum=0, exclusive_minimum=True,
                                              default_text=f"{DEFAULT_INTERVAL_S:g}, shorter when the time "
                                              "limit needs it for every fault asked for")
    topic: str = option("kraftcheck", "topic name", flag="--topic", commands=_RUN_AND_CLUSTER,
                        pattern=TOPIC_PATTERN)
    op_timeout_s: float = option(10.0, "seconds before a client op counts as indeterminate", flag="--op-timeout",
                                 metavar="S", minimum=0, exclusive_minimum=True)
    recovery_timeout_s: float = option(60.0, "seconds to wait for the cluster to be ready or to recover",
                                       flag="--recovery-timeout", metavar="S", minimum=0, exclusive_minimum=True)
    final_read_timeout_s: float = option(60.0, "seconds for the final reads", flag="--final-read-timeout",
                                         metavar="S", minimum=0, exclusive_minimum=True)
    send_ratio: float = option(0.6, "share of client ops that are sends", flag="--send-ratio", metavar="P",
                               minimum=0, maximum=1)
    assign_ratio: float = option(0.05, "share of client ops that reassign a consumer's partitions",
                                 flag="--assign-ratio", metavar="P", minimum=0, maximum=1)
    # Jepsen's :sub-via. A subscribing process spends the assign_ratio share on leaving and rejoining the
    # group, crashing and stalling (workloads/group_ops.py).
    sub_via: str = option("assign", "how consumers get partitions: assign them, subscribe through the consumer "
                          "group (\"<topic>-group\"), or both (each process slot picks one)", flag="--sub-via",
                          choices=SUB_VIA, aliases={"subscribe,assign": "assign,subscribe"})
    group_session_timeout_ms: int = option(6000, "session.timeout.ms of the subscribing consumers",
                                           flag="--group-session-timeout-ms", metavar="MS", minimum=1)
    txn: bool = option(False, "transactions (KIP-98): sends and polls grouped into txn ops, committed or aborted",
                       flag="--txn")
    isolation_level: str = option("read_committed", "the consumers' isolation level", flag="--isolation-level",
                                  choices=ISOLATION_LEVELS)
    # Shorter than Kafka's 30000 (the servers' default): a lagging follower leaves the ISR within a short
    # run, so the ISR-shrink paths (and the strand nemesis) are exercised in 30-120 s runs.
    replica_lag_time_max_ms: int = option(10000, "replica.lag.time.max.ms (Kafka's default is 30000)",
                                          flag="--replica-lag-time-max-ms",
                                          metavar="MS", minimum=1)
    broker_session_timeout_ms: int = option(6000, "broker.session.timeout.ms",
                                            flag="--broker-session-timeout-ms", metavar="MS", minimum=1)
    broker_heartbeat_interval_ms: int = option(1000, "broker.heartbeat.interval.ms",
                                               flag="--broker-heartbeat-interval-ms", metavar="MS", minimum=1)
    linearizability: bool = option(True, "the linearizability engine", flag="--no-linear")
    unseen_deadline_ns: int | None = option(None, "history time after which a write nobody read is reported "
                                            "as unseen", minimum=0,
                                            default_text="the final read's start plus its timeout")
    scenario: str | None = option(None, "the named scenario this run reproduces (kraftcheck scenario)",
                                  pattern=r"^[a-z0-9-]+$", default_text="none")
    # Which descriptions exist is harness/suts' (and a user's own .toml): the spec checks the form of the
    # name, the run command loads the description before anything starts.
    sut: str = option("reference", "the system under test: a description in harness/suts (kraftcheck sut list) or a "
                      ".toml file", flag="--sut", metavar="NAME", commands=_RUN_AND_CLUSTER,
                      pattern=r"^[A-Za-z0-9_./~+-]+$")
    sut_setting: str | None = option(None, "the system's setting: its storage and switches (kraftcheck sut list)",
                                     flag="--sut-setting", metavar="NAME", commands=_RUN_AND_CLUSTER,
                                     pattern=r"^[a-z0-9][a-z0-9-]*$", default_text="the description's default")
    sut_path: str | None = option(None, "a distribution directory or binary of the system, instead of an "
                                  "installed build", flag="--sut-path", metavar="PATH", commands=_RUN_AND_CLUSTER,
                                  pattern=r"^[^\x00\r\n]+$", default_text="the installed build")

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _coerce(f.name, _HINTS[f.name], getattr(self, f.name),
                                                     f.metadata["option"]))
        # Kafka's idempotent producer requires acks=all (L6: the leader dedupes retried batches).
        object.__setattr__(self, "idempotence", self.idempotence and self.acks == "all")
        if self.replication_factor > self.brokers:
            raise SpecError(f"{self.replication_factor} exceeds brokers ({self.brokers})", "replication_factor")
        if self.min_isr > self.replication_factor:
            raise SpecError(f"{self.min_isr} exceeds replication_factor ({self.replication_factor})", "min_isr")
        if self.send_ratio + self.assign_ratio > 1:
            raise SpecError(f"send_ratio + assign_ratio must not exceed 1, got {self.send_ratio} + "
                            f"{self.assign_ratio}", "send_ratio")
        self._fit_the_faults()

    def _fit_the_faults(self) -> None:
        """The first round of the nemesis schedule, one turn of each requested family, must fit in the main
        phase (``harness.fault_time``): an interval not given is fitted to it, a time limit too short for
        the interval given is refused. A scenario's script injects its own faults, without the schedule."""
        families = requested_families(self.nemesis) if self.scenario is None else []
        problem = too_short(families, self.time_limit_s, self.nemesis_interval_s)
        if problem:
            raise SpecError(problem, "time_limit_s")
        if self.nemesis_interval_s is None:
            fitted = fitted_interval_s(families, self.time_limit_s) if families else DEFAULT_INTERVAL_S
            object.__setattr__(self, "nemesis_interval_s", fitted)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> RunSpec:
        """Validate ``options`` (spec keys; None means "the default") into a spec; ``SpecError`` names the
        first bad key. Unknown keys are rejected (a typo must not fall back to a default silently);
        environment keys of a stored spec are ignored."""
        unknown = sorted(set(options) - set(DEFAULTS) - set(ENVIRONMENT_KEYS))
        if unknown:
            raise SpecError(f"unknown spec key(s): {', '.join(unknown)}")
        return cls(**{k: v for k, v in options.items() if k in DEFAULTS and v is not None})

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (lists for tuples): what ``spec.json`` holds besides the environment facts."""
        data = asdict(self)
        data["nemesis"] = list(self.nemesis)
        return data


# The field table, resolved once: name -> type hint, name -> Option, name -> default.
_HINTS: dict[str, Any] = typing.get_type_hints(RunSpec)
OPTIONS: dict[str, Option] = {f.name: f.metadata["option"] for f in fields(RunSpec)}
DEFAULTS: dict[str, Any] = {f.name: list(f.default) if isinstance(f.default, tuple) else f.default
                            for f in fields(RunSpec)}
_FLAGS = {name: opt.flag for name, opt in OPTIONS.items() if opt.flag}

# Keys describing the environment, filled by ``build_spec``; not options, so replay ignores them.
ENVIRONMENT_KEYS = ("spec_version", "git_commit", "git_dirty", "image", "python", "kraftcheck_version",
                    "created_utc", "argv", "versions", "sut_facts")


# -- coercion ----------------------------------------------------------------------------------------

def field_kind(name: str) -> tuple[Any, bool]:
    """(the base type of field ``name``: a type, ``tuple[str, ...]`` or a tuple of types for a union;
    whether None is allowed)."""
    return _kind(_HINTS[name])


def _kind(hint: Any) -> tuple[Any, bool]:
    if isinstance(hint, types.UnionType) and type(None) in hint.__args__:
        rest = tuple(a for a in hint.__args__ if a is not type(None))
        return (rest[0] if len(rest) == 1 else rest), True
    if isinstance(hint, types.UnionType):
        return hint.__args__, False
    return hint, False


def _coerce(key: str, hint: Any, value: Any, opt: Option) -> Any:
    """``value`` as the field's type, checked against the field's bounds, choices and pattern."""
    base, nullable = _kind(hint)
    if value is None:
        if nullable:
            return None
        raise SpecError("must not be null", key)
    if opt.aliases is not None and _hashable(value) and value in opt.aliases and not isinstance(value, bool):
        value = opt.aliases[value]
    if typing.get_origin(base) is tuple:
        return _as_names(key, value, opt)
    if base is bool:
        if not isinstance(value, bool):
            raise SpecError(f"expected true or false, got {value!r}", key)
        return value
    if base is int:
        value = _as_int(key, value)
    elif base is float:
        value = _as_float(key, value)
    elif base is str and not isinstance(value, str):
        raise SpecError(f"expected a string, got {value!r}", key)
    elif isinstance(base, tuple) and (isinstance(value, bool) or not isinstance(value, base)):
        raise SpecError(f"must be one of {', '.join(map(str, opt.choices or ()))}, got {value!r}", key)
    if opt.choices is not None and (not _hashable(value) or isinstance(value, bool) or value not in opt.choices):
        raise SpecError(f"must be one of {', '.join(map(str, opt.choices))}, got {value!r}", key)
    _check_bounds(key, value, opt)
    if opt.pattern is not None and not re.fullmatch(opt.pattern, value):  # fullmatch: no trailing newline
        raise SpecError(f"not a valid name: {value!r}", key)
    return value


def _hashable(value: Any) -> bool:
    return isinstance(value, str | int | float | bool)


def _as_int(key: str, value: Any) -> int:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"expected an integer, got {value!r}", key)
    return value


def _as_float(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"expected a number, got {value!r}", key)
    if not math.isfinite(value):
        raise SpecError(f"must be a finite number, got {value!r}", key)
    return float(value)


def _check_bounds(key: str, value: Any, opt: Option) -> None:
    if opt.minimum is not None:
        if value < opt.minimum or (opt.exclusive_minimum and value == opt.minimum):
            raise SpecError(f"must be {'>' if opt.exclusive_minimum else '>='} {opt.minimum:g}, got {value}", key)
    if opt.maximum is not None and value > opt.maximum:
        raise SpecError(f"must be <= {opt.maximum:g}, got {value}", key)


def _as_names(key: str, value: Any, opt: Option) -> tuple[str, ...]:
    # The one list-valued field is ``nemesis``, and its parser is the family table's.
    try:
        return tuple(parse_nemesis(value))
    except ValueError as exc:
        raise SpecError(str(exc), key) from None


# -- building and reading specs ------------------------------------------------------------------------

def normalize(options: Mapping[str, Any]) -> dict[str, Any]:
    """Every option filled and validated (``RunSpec.from_options``), as a dict; ``SpecError`` names the
    first bad key."""
    return RunSpec.from_options(options).to_dict()


def prepare_spec(options: Mapping[str, Any], argv: list[str] | None = None) -> tuple[RunSpec, dict[str, Any]]:
    """The typed spec a run is handed, with its seed fixed, and the environment facts recorded beside it.

    The seed is drawn from the OS (not from a clock) when none was given, and becomes part of the spec, so
    the run can be replayed. Facts the run learns later (the image tag, what the system under test
    declares) are added to the environment, never to the spec, which nothing changes once a run starts.
    """
    spec = RunSpec.from_options(options)
    if spec.seed is None:
        spec = replace(spec, seed=random.SystemRandom().randrange(2**31))
    commit, dirty = git_commit()
    environment = {
        "spec_version": SPEC_VERSION,
        "git_commit": commit,
        "git_dirty": dirty,
        "image": options.get("image"),
        "python": platform.python_version(),
        "kraftcheck_version": package_version(),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "argv": list(argv) if argv is not None else None,
        "versions": library_versions(),
    }
    return spec, environment


def stored_form(spec: RunSpec, environment: Mapping[str, Any]) -> dict[str, Any]:
    """What ``spec.json`` holds: the options (JSON form) and the environment facts beside them."""
    return {**spec.to_dict(), **{k: v for k, v in environment.items() if k in ENVIRONMENT_KEYS}}


def split_stored(stored: Mapping[str, Any]) -> tuple[RunSpec, dict[str, Any]]:
    """A stored or hand-built spec mapping (``build_spec``'s form) back into the typed spec and its
    environment facts; ``SpecError`` names the first bad key."""
    spec = RunSpec.from_options(stored)
    return spec, {k: stored[k] for k in ENVIRONMENT_KEYS if k in stored}


def build_spec(options: Mapping[str, Any], argv: list[str] | None = None) -> dict[str, Any]:
    """A complete spec from options, in its stored form (``prepare_spec``, then ``stored_form``)."""
    return stored_form(*prepare_spec(options, argv))


def controllers_phrase(count: int) -> str:
    """``controller`` for a single controller, ``3 controllers`` for a quorum (progress lines and steps)."""
    return "controller" if count == 1 else f"{count} controllers"


def git_commit(repo: str | os.PathLike | None = None) -> tuple[str | None, bool | None]:
    """The current git commit of the project and whether the work tree has changes (None when unknown)."""
    repo = str(repo or Path(__file__).resolve().parent.parent)
    try:
        commit = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
        status = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit, dirty


def package_version() -> str | None:
    """kraftcheck's installed version (None when run from a checkout that is not installed)."""
    return _distribution_version("kraftcheck")


def library_versions() -> dict[str, str | None]:
    """Python's version and those of the clients and key libraries (None: not installed)."""
    return {"python": platform.python_version(),
            **{name: _distribution_version(name) for name in RECORDED_DISTRIBUTIONS}}


def _distribution_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def load_spec(path: str | os.PathLike) -> dict[str, Any]:
    """Read a ``spec.json`` (a file, or a run directory containing one); ``SpecError`` naming the file if it
    is missing, unreadable, not JSON or not an object. The values are not validated here."""
    path = Path(path)
    if path.is_dir():
        path = path / "spec.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"no spec at {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except ValueError as exc:
        raise SpecError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: a spec must be a JSON object, got {type(data).__name__}")
    return data


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def replay_options(spec: Mapping[str, Any], source: str | os.PathLike | None = None) -> dict[str, Any]:
    """The options of a stored spec, without its environment keys (what ``build_spec`` needs to replay).

    The stored options are validated (``SpecError`` naming ``source``, the spec file, when given): a spec
    edited by hand with a wrong type or an unknown key fails here, before anything starts.
    """
    check_keys(spec, source)
    try:
        RunSpec.from_options(spec)
    except SpecError as exc:
        raise exc.in_file(source) if source is not None else exc from None
    return {k: v for k, v in spec.items() if k in DEFAULTS}


def check_keys(spec: Mapping[str, Any], source: str | os.PathLike | None = None) -> dict[str, Any]:
    """The keys a partial spec gives (e.g. one written by hand for ``kraftcheck check``), each checked and
    coerced like the field's; missing keys stay missing (the checkers have their own defaults for them).
    Unknown keys and wrong types raise ``SpecError`` naming ``source``."""
    out: dict[str, Any] = {}
    try:
        unknown = sorted(set(spec) - set(DEFAULTS) - set(ENVIRONMENT_KEYS))
        if unknown:
            raise SpecError(f"unknown spec key(s): {', '.join(unknown)}")
        for key, value in spec.items():
            out[key] = _coerce(key, _HINTS[key], value, OPTIONS[key]) if key in DEFAULTS else value
    except SpecError as exc:
        raise exc.in_file(source) if source is not None else exc from None
    if isinstance(out.get("nemesis"), tuple):
        out["nemesis"] = list(out["nemesis"])
    return out


def replay_argv(spec: Mapping[str, Any]) -> list[str]:
    """The ``kraftcheck run`` argument list that repeats ``spec``: the seed and every option that differs
    from its default (keys without a flag, such as ``scenario``, need ``--replay`` of the stored spec). The
    nemesis interval's default is the one the spec fits to the other options."""
    argv = ["kraftcheck", "run"]
    for name, opt in OPTIONS.items():
        if opt.flag is None or "run" not in opt.commands:
            continue
        flag = opt.flag
        value = spec.get(name, DEFAULTS[name])
        if isinstance(value, tuple):
            value = list(value)
        if value is None or (name != "seed" and value == _chosen_default(name, spec)):
            continue
        if isinstance(value, bool):  # a switch: given, it sets the opposite of the default
            argv.append(flag)
        elif isinstance(value, list):
            argv += [flag, ",".join(value)]
        else:
            argv += [flag, str(value)]
    return argv


def _chosen_default(name: str, spec: Mapping[str, Any]) -> Any:
    """What the spec holds for ``name`` when it is not given: the field's default, except for the nemesis
    interval, which is fitted to the faults and the time limit (``RunSpec._fit_the_faults``)."""
    if name != "nemesis_interval_s":
        return DEFAULTS[name]
    families = [] if spec.get("scenario") else requested_families(spec.get("nemesis"))
    if not families:
        return DEFAULT_INTERVAL_S
    return fitted_interval_s(families, spec.get("time_limit_s", DEFAULTS["time_limit_s"]))


def replay_command(spec: Mapping[str, Any], spec_path: str | os.PathLike | None = None) -> str:
    """A shell command that repeats the run: ``--replay spec.json`` when stored, else the full arguments."""
    if spec_path is not None:
        return f"kraftcheck run --replay {shlex.quote(str(spec_path))}"
    return shlex.join(replay_argv(spec))
