"""Systems under test as data: a small, typed description of what Jepsen's ``db`` knows about a system.

A description lives in ``harness/suts/<name>.toml`` (or any file a user points ``--sut`` at) and says:

- **builds**: how the system is obtained (``builtin``: the reference implementation in this repository;
  ``cargo``: a crate built from crates.io; ``pip``: a wheel from PyPI that carries a binary; ``dist``: a
  distribution directory the user gives with ``--sut-path``), and which Kafka APIs a build lacks;
- **roles**: the kinds of node (brokers, controllers, a storage node), how many of each (a number, or a spec
  field such as ``brokers``), the command line and environment that start one (templates over the node's
  id, address, port, data directory and the setting's storage), its configuration file when it has one,
  the commands that prepare its data before the first start, how it stops (grace), where its data lives
  (the disk nemesis mounts its FUSE file system there) and whether clients speak Kafka to it;
- **settings**: the ways the system can be run (storage engines, feature switches), each with the build
  it needs, the roles it adds, a limit on brokers where its storage is not shared, and the **guarantees
  it declares**: which kinds of fault acknowledged writes survive (``GUARANTEES``). A fault kind a
  setting does not promise to survive is listed under ``not_promised`` with the reason; the checkers then
  report a loss under that fault as *allowed*, with that reason, never hide it;
- whether partitions have follower replicas the system keeps in sync (``replication``: an ISR that faults
  such as ``strand`` work on), how its runs are judged (``profile``: the replication protocol's own rules, or the setting's declared
  guarantees) and what the system offers the nemeses (``admin`` operations: reassignment, elections, config changes) and
  whether its nodes emit kraftcheck traces (without them the protocol invariants are not applicable and
  the verdict rests on the client-visible checks).

This module is pure (parsing and validation): installing a build is ``harness.sut_install``'s job, running
the nodes ``harness.sut_cluster``'s. Bad descriptions raise ``SutError`` naming the file and the key.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUT_DIR = Path(__file__).resolve().parent / "suts"
REFERENCE = "reference"

GUARANTEES: dict[str, str] = {
    "crash": "acknowledged writes survive a node process killed (kill -9, stop) and started again",
    "power-loss": "acknowledged writes survive a node losing the data it had not synced to disk",
    "partition": "acknowledged writes survive network partitions",
    "pause": "acknowledged writes survive a node's process being paused and resumed",
    "clock": "acknowledged writes survive wall-clock jumps, skew and strobing",
    "admin": "acknowledged writes survive reassignments, leader elections and configuration changes",
}
"""The fault kinds a setting can promise acknowledged writes survive; the fault family table
(``harness.faults``) names the kind each family tests."""

BUILD_KINDS = ("builtin", "cargo", "pip", "dist")
ADMIN_OPS = ("reassign", "cancel-reassignment", "list-reassignments", "elect-preferred", "elect-unclean",
             "alter-config")
COUNT_FIELDS = ("brokers", "controllers")
PROFILES = ("protocol", "declared")
"""How runs of a system are judged: ``protocol``, by the replication protocol's own rules (the reference
implementation: variant, KIP-966, MinISR, acks, unclean election); ``declared``, by the guarantees the
chosen setting declares."""


class SutError(ValueError):
    """A description that cannot be used: the message names the file and the key."""


@dataclass(frozen=True)
class Build:
    """How one build of the system is obtained."""

    name: str
    kind: str
    summary: str = ""
    crate: str | None = None
    package: str | None = None
    version: str | None = None
    features: tuple[str, ...] = ()
    binary: str | None = None
    missing_apis: tuple[str, ...] = ()


@dataclass(frozen=True)
class Role:
    """One kind of node: how many, how it starts and stops, where its data is."""

    name: str
    count: int | str
    port: int
    kafka: bool = True
    argv: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    config_file: str | None = None
    config: tuple[tuple[str, str], ...] = ()
    prepare: tuple[tuple[str, ...], ...] = ()
    packages: tuple[str, ...] = ()
    service: str | None = None
    data_dir: str = "data"
    stop_timeout_s: float = 10.0
    id_offset: int = 0

    def how_many(self, spec: Any) -> int:
        """The number of nodes of this role for a run (``count`` or the spec field it names)."""
        if isinstance(self.count, int):
            return self.count
        return int(getattr(spec, self.count))


@dataclass(frozen=True)
class Setting:
    """One way of running the system, and what it promises."""

    name: str
    build: str
    summary: str = ""
    storage: str | None = None
    roles: tuple[str, ...] = ()
    max_brokers: int | None = None
    ephemeral: bool = False
    guarantees: frozenset[str] = frozenset()
    not_promised: tuple[tuple[str, str], ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    schema: Path | None = None
    variant: str | None = None
    lists: tuple[tuple[str, tuple[str, ...]], ...] = ()
    data_roles: tuple[str, ...] | None = None

    def why_not(self, kind: str) -> str | None:
        """Why acknowledged writes may not survive fault kind ``kind`` here (None: promised)."""
        if kind in self.guarantees:
            return None
        return dict(self.not_promised).get(kind, f"this setting does not promise that {GUARANTEES[kind]}")


@dataclass(frozen=True)
class SutDescription:
    """A system under test (see the module docstring)."""

    name: str
    summary: str
    builds: dict[str, Build]
    roles: dict[str, Role]
    settings: dict[str, Setting]
    default_setting: str
    url: str = ""
    traces: bool = False
    replication: bool = True
    admin: frozenset[str] = frozenset()
    source: str = ""
    base_roles: tuple[str, ...] = field(default=())
    profile: str = "declared"
    cluster_id: str = "kraftcheck"

    def setting(self, name: str | None) -> Setting:
        """The named setting (the default one for None); ``SutError`` lists the known ones."""
        name = name or self.default_setting
        if name not in self.settings:
            raise SutError(f"{self.name} has no setting {name!r}; known: {', '.join(self.settings)}")
        return self.settings[name]

    def build_of(self, setting: str | None) -> Build:
        """The build a setting runs."""
        return self.builds[self.setting(setting).build]

    def roles_of(self, setting: str | None) -> list[Role]:
        """The roles a run of ``setting`` starts: every role not reserved to a setting, plus its own."""
        chosen = self.setting(setting)
        return [role for name, role in self.roles.items() if name in self.base_roles or name in chosen.roles]

    def missing_apis(self, setting: str | None) -> tuple[str, ...]:
        """The Kafka APIs the setting's build does not offer."""
        return self.build_of(setting).missing_apis


# -- reading -------------------------------------------------------------------------------------------

def known() -> list[str]:
    """The names of the descriptions shipped in ``harness/suts``."""
    return sorted(p.stem for p in SUT_DIR.glob("*.toml"))


def load(name_or_path: str | Path) -> SutDescription:
    """The description named ``name_or_path`` (a shipped name, or a path to a ``.toml`` file)."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = SUT_DIR / f"{name_or_path}.toml"
        if not path.is_file():
            raise SutError(f"unknown system under test {str(name_or_path)!r}; known: {', '.join(known())} "
                           "(or a path to a .toml description)")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SutError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SutError(f"{path}: not TOML ({exc})") from None
    return parse(data, str(path))


def parse(data: dict[str, Any], source: str = "<description>") -> SutDescription:
    """A validated description from parsed TOML; ``SutError`` names ``source`` and the key at fault."""
    reader = _Reader(data, source, "")
    name = reader.text("name")
    builds = {key: _build(key, _Reader(value, source, f"builds.{key}"))
              for key, value in reader.table("builds").items()}
    if not builds:
        raise SutError(f"{source}: builds: at least one build is needed")
    roles = {key: _role(key, _Reader(value, source, f"roles.{key}"))
             for key, value in reader.table("roles").items()}
    if not any(role.kafka for role in roles.values()):
        raise SutError(f"{source}: roles: no role speaks Kafka (kafka = true), so no client can reach it")
    settings = {key: _setting(key, _Reader(value, source, f"settings.{key}"), builds, roles)
                for key, value in reader.table("settings").items()}
    if not settings:
        raise SutError(f"{source}: settings: at least one setting is needed")
    default = reader.text("default_setting", next(iter(settings)))
    if default not in settings:
        raise SutError(f"{source}: default_setting: {default!r} is not one of {', '.join(settings)}")
    admin = frozenset(reader.names("admin", ADMIN_OPS))
    reserved = {role for setting in settings.values() for role in setting.roles}
    return SutDescription(
        name=name, summary=reader.text("summary", name), builds=builds, roles=roles, settings=settings,
        default_setting=default, url=reader.text("url", ""), traces=reader.flag("traces", False),
        replication=reader.flag("replication", True), admin=admin,
        source=source, base_roles=tuple(role for role in roles if role not in reserved),
        profile=reader.choice("profile", PROFILES) if "profile" in data else "declared",
        cluster_id=reader.text("cluster_id", "kraftcheck"),
    )


def _build(name: str, r: _Reader) -> Build:
    kind = r.choice("kind", BUILD_KINDS)
    build = Build(name=name, kind=kind, summary=r.text("summary", ""), crate=r.text("crate", None),
                  package=r.text("package", None), version=r.text("version", None),
                  features=tuple(r.names("features")), binary=r.text("binary", None),
                  missing_apis=tuple(r.names("missing_apis")))
    needs = {"cargo": ("crate", "version", "binary"), "pip": ("package", "version", "binary"),
             "dist": ("binary",), "builtin": ()}[kind]
    for key in needs:
        if getattr(build, key) is None:
            raise SutError(f"{r.source}: {r.at(key)}: a {kind} build needs it")
    return build


def _role(name: str, r: _Reader) -> Role:
    count = r.value("count")
    if not (isinstance(count, int) and count >= 0) and count not in COUNT_FIELDS:
        raise SutError(f"{r.source}: {r.at('count')}: a number >= 0 or one of {', '.join(COUNT_FIELDS)}")
    prepare = r.value("prepare", [])
    if not isinstance(prepare, list) or not all(isinstance(c, list) and all(isinstance(a, str) for a in c)
                                                and c for c in prepare):
        raise SutError(f"{r.source}: {r.at('prepare')}: a list of command lines (lists of strings)")
    role = Role(name=name, count=count, port=r.integer("port"), kafka=r.flag("kafka", True),
                argv=tuple(r.names("argv")), env=tuple(r.mapping("env").items()),
                config_file=r.text("config_file", None), config=tuple(r.mapping("config").items()),
                prepare=tuple(tuple(c) for c in prepare), packages=tuple(r.names("packages")),
                service=r.text("service", None), data_dir=r.text("data_dir", "data"),
                stop_timeout_s=float(r.number("stop_timeout_s", 10.0)), id_offset=r.count("id_offset", 0))
    if not role.argv and role.service is None:
        raise SutError(f"{r.source}: {r.at('argv')}: a role needs a command line (argv) or a known service")
    if role.config and role.config_file is None:
        raise SutError(f"{r.source}: {r.at('config_file')}: config keys need a file name to be written to")
    return role


def _setting(name: str, r: _Reader, builds: dict[str, Build], roles: dict[str, Role]) -> Setting:
    build = r.text("build", next(iter(builds)))
    if build not in builds:
        raise SutError(f"{r.source}: {r.at('build')}: {build!r} is not one of {', '.join(builds)}")
    own_roles = tuple(r.names("roles"))
    for role in own_roles:
        if role not in roles:
            raise SutError(f"{r.source}: {r.at('roles')}: no role {role!r}")
    guarantees = frozenset(r.names("guarantees", tuple(GUARANTEES)))
    not_promised = r.mapping("not_promised")
    for kind in not_promised:
        if kind not in GUARANTEES:
            raise SutError(f"{r.source}: {r.at('not_promised')}: {kind!r} is not a fault kind "
                           f"({', '.join(GUARANTEES)})")
        if kind in guarantees:
            raise SutError(f"{r.source}: {r.at('not_promised')}: {kind!r} is also promised")
    max_brokers = r.value("max_brokers", None)
    if max_brokers is not None and not (isinstance(max_brokers, int) and max_brokers >= 1):
        raise SutError(f"{r.source}: {r.at('max_brokers')}: a number >= 1")
    return Setting(name=name, build=build, summary=r.text("summary", ""), storage=r.text("storage", None),
                   roles=own_roles, max_brokers=max_brokers, ephemeral=r.flag("ephemeral", False),
                   guarantees=guarantees, not_promised=tuple(not_promised.items()),
                   properties=tuple(r.mapping("properties").items()), schema=_schema_dir(r),
                   variant=r.text("variant", None), lists=tuple(_lists(r).items()),
                   data_roles=tuple(r.names("data_roles")) or None)


def _lists(r: _Reader) -> dict[str, tuple[str, ...]]:
    """A setting's ``lists``: named argument lists a role's command line takes whole (``"{*name}"``)."""
    table = r.table("lists")
    out = {}
    for key, value in table.items():
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SutError(f"{r.source}: {r.at('lists')}.{key}: a list of strings is needed")
        out[key] = tuple(value)
    return out


def _schema_dir(r: _Reader) -> Path | None:
    """A setting's ``schema``: a directory of ``*.sql`` files beside the description (applied to its store)."""
    name = r.text("schema", None)
    if name is None:
        return None
    path = Path(r.source).resolve().parent / name
    if not path.is_dir() or not list(path.glob("*.sql")):
        raise SutError(f"{r.source}: {r.at('schema')}: {path} is not a directory of .sql files")
    return path


class _Reader:
    """Typed access to one table of a description, with errors that name the file and the key."""

    def __init__(self, data: Any, source: str, prefix: str):
        if not isinstance(data, dict):
            raise SutError(f"{source}: {prefix or 'the file'}: a table is needed")
        self.data, self.source, self.prefix = data, source, prefix

    def at(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    _MISSING = object()

    def value(self, key: str, default: Any = _MISSING) -> Any:
        if key in self.data:
            return self.data[key]
        if default is self._MISSING:
            raise SutError(f"{self.source}: {self.at(key)}: missing")
        return default

    def text(self, key: str, default: Any = _MISSING) -> Any:
        value = self.value(key, default)
        if value is not None and not isinstance(value, str):
            raise SutError(f"{self.source}: {self.at(key)}: a string is needed, got {value!r}")
        return value

    def integer(self, key: str) -> int:
        value = self.value(key)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 65536:
            raise SutError(f"{self.source}: {self.at(key)}: a port number is needed, got {value!r}")
        return value

    def count(self, key: str, default: int) -> int:
        value = self.value(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise SutError(f"{self.source}: {self.at(key)}: a whole number >= 0 is needed, got {value!r}")
        return value

    def number(self, key: str, default: float) -> float:
        value = self.value(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise SutError(f"{self.source}: {self.at(key)}: a positive number is needed, got {value!r}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.value(key, default)
        if not isinstance(value, bool):
            raise SutError(f"{self.source}: {self.at(key)}: true or false, got {value!r}")
        return value

    def names(self, key: str, choices: tuple[str, ...] | None = None) -> list[str]:
        value = self.value(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SutError(f"{self.source}: {self.at(key)}: a list of strings is needed")
        if choices is not None:
            bad = [v for v in value if v not in choices]
            if bad:
                raise SutError(f"{self.source}: {self.at(key)}: unknown {', '.join(bad)}; known: "
                               f"{', '.join(choices)}")
        return value

    def mapping(self, key: str) -> dict[str, str]:
        value = self.value(key, {})
        if not isinstance(value, dict) or not all(isinstance(v, str | int | float | bool) for v in value.values()):
            raise SutError(f"{self.source}: {self.at(key)}: a table of strings is needed")
        return {k: _text(v) for k, v in value.items()}

    def table(self, key: str) -> dict[str, Any]:
        value = self.value(key, {})
        if not isinstance(value, dict):
            raise SutError(f"{self.source}: {self.at(key)}: a table is needed")
        return value

    def choice(self, key: str, choices: tuple[str, ...]) -> str:
        value = self.text(key)
        if value not in choices:
            raise SutError(f"{self.source}: {self.at(key)}: {value!r} is not one of {', '.join(choices)}")
        return value


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
