"""The columnar history: ``history.parquet/`` beside ``history.jsonl``, derived from it, reproducible to the byte.

``history.jsonl`` stays the record of a run (streamed, crash-proof); this directory is derived from it
in one streamed pass (bounded memory whatever the size), so that large histories and whole stores can be
read by column (the Spark engine, ``kraftcheck aggregate``). Layout:

``ops.parquet``
    one row per valid op, in file order, lossless (``read_ops`` gives back exactly the ops of
    ``harness.history.iter_history``): ``line`` (the JSONL line), ``index``, ``time``, ``type``,
    ``process`` (null for the nemesis), ``f``, ``value`` (JSON text: the schema allows any JSON there),
    ``node``, ``error``, ``final`` (the op's ``final`` is true) and ``extra`` (the other fields as a JSON
    object; also ``node``/``error`` when they are not strings).
``queue.parquet``
    the key table of ``checkers.queue.rows``: one row per (record, key), with typed key, value and offset
    columns and the micro-ops flattened into list columns; each key's rows are contiguous and in op
    order (keys are grouped by ``key mod 64``, then sorted).
``nemesis.parquet``
    the nemesis ops again (the columns of ``ops.parquet``): the fault schedule, a few rows, readable
    without scanning every op's value.
``manifest.json``
    format and version, the source (file name, size, sha256), each table's rows, size and sha256, the
    malformed lines (count and the first ``MALFORMED_KEPT``), the key count and the pyarrow version.

The writer's options are fixed and nothing in the files depends on the time or the place of writing, so
the same history written by the same pyarrow gives the same bytes: ``verify`` writes it again and compares.
``check_current`` is what readers call first: a directory that does not match its ``history.jsonl`` (a
different size or digest, a table whose bytes changed) is refused with a message saying how to rebuild it.

A history whose keys or values are not 64-bit integers cannot be written (``NotColumnar``, nothing is
left behind); neither can an EDN file (``HistoryFormatError``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from checkers.history.jsonl import NeedsReference, iter_numbered
from checkers.queue.extract import iter_records
from checkers.queue.rows import KEY_COLUMNS, KEY_SCHEMA, NotColumnar, record_rows, rows_table  # noqa: F401 - raised here
from harness.history import HistoryFormatError, MalformedLine, edn_problem, iter_json_lines, validate_op

FORMAT, VERSION = "kraftcheck history.parquet", 1
OPS, QUEUE, NEMESIS, MANIFEST = "ops.parquet", "queue.parquet", "nemesis.parquet", "manifest.json"
MALFORMED_KEPT = 100
OPS_SCHEMA = pa.schema([
    ("line", pa.int64()), ("index", pa.int64()), ("time", pa.int64()), ("type", pa.string()),
    ("process", pa.int64()), ("f", pa.string()), ("value", pa.string()), ("node", pa.string()),
    ("error", pa.string()), ("final", pa.bool_()), ("extra", pa.string()),
])
_STANDARD = ("index", "time", "type", "process", "f", "value", "node", "error")
_BUCKETS = 64
_OPS_GROUP = 262_144
_KEY_GROUP = 131_072
_SPILL_ROWS = 200_000
# Fixed writer options: part of what makes the bytes reproducible.
_WRITER_OPTIONS = {"compression": "zstd", "compression_level": 1, "version": "2.6", "use_dictionary": True,
                   "write_statistics": True, "data_page_size": 1 << 20}


class ParquetHistoryError(ValueError):
    """A columnar history that cannot be used: missing, corrupt, or not derived from this JSONL."""


def parquet_dir_for(history: str | os.PathLike) -> Path:
    """Where the columnar form of a JSONL history lives: ``history.jsonl`` -> ``history.parquet``."""
    return Path(history).with_suffix(".parquet")


@dataclass
class Written:
    """What ``write_history_parquet`` wrote (the manifest it left) and where."""

    path: Path
    manifest: dict


# ------------------------------------------------------------------------------------------------ writing

def write_history_parquet(history: str | os.PathLike, out: str | os.PathLike | None = None, *,
                          force: bool = False) -> Written:
    """Write the columnar form of ``history`` (a JSONL file) into ``out`` (default: ``parquet_dir_for``).

    An existing ``out`` is replaced only with ``force`` (else ``FileExistsError``). The directory is built
    under a temporary name and renamed into place, so a failure leaves the old one (or none) and never a
    half-written one.
    """
    history = Path(history)
    out = Path(out) if out is not None else parquet_dir_for(history)
    problem = edn_problem(history)
    if problem:
        raise HistoryFormatError(problem)
    if out.exists() and not force:
        raise FileExistsError(f"{out} exists (rebuild it with --force)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        manifest = _write_into(history, tmp)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.rename(out, old / "x")
            os.rename(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Written(out, manifest)


def _write_into(history: Path, out: Path) -> dict:
    try:
        return _convert(history, out, reference=False)
    except NeedsReference:
        # A carriage return or an integer beyond 64 bits: what the reference reader reads differently.
        for child in out.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        return _convert(history, out, reference=True)


def _numbered_reference(path: Path, malformed: list[MalformedLine]) -> Iterator[tuple[int, dict, bool]]:
    """``checkers.history.jsonl.iter_numbered`` by the reference reader (``json`` for every line)."""
    position = 0
    for lineno, op, reason in iter_json_lines(path):
        if reason is None:
            reason = validate_op(op)
        if reason is not None:
            malformed.append(MalformedLine(str(path), lineno, reason))
            continue
        op.setdefault("index", position)
        op.setdefault("node", None)
        op.setdefault("error", None)
        op.setdefault("value", None)
        position += 1
        yield lineno, op, True


def _json_text(x: Any, by_json: bool) -> str:
    if by_json:  # json read it (NaN, Infinity, big integers): only json writes it back the same
        return json.dumps(x, separators=(",", ":"), ensure_ascii=False)
    return orjson.dumps(x).decode()


def _convert(history: Path, out: Path, reference: bool) -> dict:
    malformed: list[MalformedLine] = []
    numbered = (_numbered_reference(history, malformed) if reference
                else iter_numbered(history, malformed))
    ops_writer = _TableWriter(out / OPS, OPS_SCHEMA, _OPS_GROUP)
    nemesis: list[tuple] = []
    spill = _Spill(out / ".spill")
    try:
        def tap() -> Iterator[dict]:
            for lineno, op, by_json in numbered:
                process = op["process"]
                value = op["value"]
                node, error = op["node"], op["error"]
                extra = None
                if len(op) > 8 or (node is not None and type(node) is not str) or (
                        error is not None and type(error) is not str):
                    rest = {k: v for k, v in op.items() if k not in _STANDARD}
                    if node is not None and type(node) is not str:
                        rest["node"], node = node, None
                    if error is not None and type(error) is not str:
                        rest["error"], error = error, None
                    extra = _json_text(rest, by_json) if rest else None
                row = (lineno, op["index"], op["time"], op["type"], None if process == "nemesis" else process,
                       op["f"], None if value is None else _json_text(value, by_json), node, error,
                       extra is not None and op.get("final") is True, extra)
                ops_writer.add(row)
                if process == "nemesis":
                    nemesis.append(row)
                yield op

        for rec in iter_records(tap()):
            spill.add(rec)
        ops_writer.close()
        _TableWriter.write_all(out / NEMESIS, OPS_SCHEMA, nemesis)
        keys = spill.finish(out / QUEUE)
    except BaseException:
        ops_writer.abort()
        spill.abort()
        raise
    source = {"name": history.name, **_file_digest(history)}
    tables = {name: {"file": f, "rows": rows, **_file_digest(out / f)}
              for name, f, rows in (("ops", OPS, ops_writer.rows), ("queue", QUEUE, spill.rows),
                                    ("nemesis", NEMESIS, len(nemesis)))}
    manifest = {
        "format": FORMAT, "version": VERSION, "source": source, "tables": tables, "keys": keys,
        "malformed": {"count": len(malformed),
                      "first": [{"line": m.line, "reason": m.reason} for m in malformed[:MALFORMED_KEPT]]},
        "writer": {"pyarrow": pa.__version__},
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


class _TableWriter:
    """Rows (tuples) or tables -> one Parquet file, in row groups of exactly ``group`` rows (the last one
    shorter), whatever the sizes of what is added."""

    def __init__(self, path: Path, schema: pa.Schema, group: int):
        self.schema, self.group = schema, group
        self.rows = 0
        self._buf: list[tuple] = []
        self._pending: pa.Table | None = None  # fewer than ``group`` rows, not written yet
        self._writer = pq.ParquetWriter(path, schema, **_WRITER_OPTIONS)

    def add(self, row: tuple) -> None:
        """Buffer one row; a full row group is written out."""
        self._buf.append(row)
        if len(self._buf) >= self.group:
            self.add_table(None)

    def add_table(self, table: pa.Table | None) -> None:
        """Write the rows of ``table`` (same schema) after those added before."""
        parts = [t for t in (self._pending, _table(self._buf, self.schema) if self._buf else None, table)
                 if t is not None]
        self._buf = []
        pending = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        while pending.num_rows >= self.group:
            self._writer.write_table(pending.slice(0, self.group), row_group_size=self.group)
            self.rows += self.group
            pending = pending.slice(self.group)
        self._pending = pending if pending.num_rows else None

    def close(self) -> None:
        """Write what is left and close the file."""
        if self._buf:
            self.add_table(None)
        if self._pending is not None:
            self._writer.write_table(self._pending, row_group_size=self.group)
            self.rows += self._pending.num_rows
            self._pending = None
        self._writer.close()

    def abort(self) -> None:
        """Close without caring about the contents (the caller removes the directory)."""
        try:
            self._writer.close()
        except Exception:
            pass

    @classmethod
    def write_all(cls, path: Path, schema: pa.Schema, rows: list[tuple]) -> None:
        """Write ``rows`` as one file."""
        w = cls(path, schema, _OPS_GROUP)
        for row in rows:
            w.add(row)
        w.close()


def _table(rows: list[tuple], schema: pa.Schema) -> pa.Table:
    return rows_table(rows, schema)


class _Spill:
    """The key table in bounded memory: rows go to ``_BUCKETS`` Arrow files by ``key mod _BUCKETS``
    (null keys to one more), ``assign``/``subscribe`` records wait for the key set; ``finish`` reads the
    buckets back one at a time, decides the commitments, adds the assign rows, sorts and writes."""

    def __init__(self, where: Path):
        where.mkdir()
        self.where = where
        self.rows = 0
        self._buf: dict[Any, list[tuple]] = {}
        self._buffered = 0
        self._files: dict[Any, Any] = {}
        self._assigns: list = []
        self._keys: set = set()

    def add(self, rec: Any) -> None:
        """File one record's rows (an assign's rows are made in ``finish``)."""
        if rec.assign is not None:
            self._assigns.append(rec)
            return
        for row in record_rows(rec):
            k = row[0]
            bucket = None if k is None else k % _BUCKETS
            if k is not None:
                self._keys.add(k)
            got = self._buf.get(bucket)
            if got is None:
                got = self._buf[bucket] = []
            got.append(row)
            self._buffered += 1
        if self._buffered >= _SPILL_ROWS:
            self._flush()

    def _flush(self) -> None:
        for bucket, rows in self._buf.items():
            if not rows:
                continue
            w = self._files.get(bucket)
            if w is None:
                w = self._files[bucket] = ipc.new_stream(str(self._path(bucket)), KEY_SCHEMA)
            w.write_table(_table(rows, KEY_SCHEMA))
        self._buf = {}
        self._buffered = 0

    def _path(self, bucket: Any) -> Path:
        return self.where / ("null.arrow" if bucket is None else f"{bucket}.arrow")

    def _load(self, bucket: Any) -> pa.Table | None:
        path = self._path(bucket)
        if not path.exists():
            return None
        with ipc.open_stream(pa.memory_map(str(path))) as reader:
            return reader.read_all()

    def finish(self, dest: Path) -> int:
        """Write the key table to ``dest``; return the number of keys."""
        self._flush()
        for w in self._files.values():
            w.close()
        keys = sorted(self._keys)
        assign_rows: dict[Any, list[tuple]] = {}
        for rec in sorted(self._assigns, key=lambda r: r.index):
            for row in record_rows(rec, keys):
                assign_rows.setdefault(None if row[0] is None else row[0] % _BUCKETS, []).append(row)
        buckets = sorted(b for b in set(self._files) | set(assign_rows) if b is not None)
        committed = set()
        for bucket in buckets:
            table = self._load(bucket)
            if table is not None:
                committed |= _committed_info(table)
        writer = _TableWriter(dest, KEY_SCHEMA, _KEY_GROUP)
        try:
            for bucket in [*buckets, None]:
                parts = [t for t in (self._load(bucket),) if t is not None]
                if bucket in assign_rows:
                    parts.append(_table(assign_rows[bucket], KEY_SCHEMA))
                if not parts:
                    continue
                table = pa.concat_tables(parts)
                if committed:
                    flag = pc.and_(pc.equal(table["type"], "info"),
                                   pc.is_in(table["op"], value_set=pa.array(sorted(committed), pa.int64())))
                    table = table.set_column(KEY_COLUMNS.index("committed"), "committed", flag)
                writer.add_table(table.sort_by([("key", "ascending"), ("op", "ascending"),
                                                ("part", "ascending")]))
            writer.close()
        except BaseException:
            writer.abort()
            raise
        self.rows = writer.rows
        shutil.rmtree(self.where, ignore_errors=True)
        return len(keys)

    def abort(self) -> None:
        """Close the spill files (the caller removes the directory)."""
        for w in self._files.values():
            try:
                w.close()
            except Exception:
                pass


def _committed_info(table: pa.Table) -> set[int]:
    """The ``info`` records of a bucket with a send that an ok read of the same key returned."""
    info = table.filter(pc.and_(pc.equal(table["type"], "info"), pc.is_valid(table["send_values"])))
    if info.num_rows == 0:
        return set()
    ok = table.filter(pc.and_(pc.equal(table["type"], "ok"), pc.is_valid(table["read_values"])))
    read_keys = np.repeat(ok["key"].to_numpy(), pc.list_value_length(ok["read_values"]).to_numpy())
    read_vals = pc.list_flatten(ok["read_values"]).to_numpy()
    send_vals = pc.list_flatten(info["send_values"]).to_numpy()
    hit = np.isin(read_vals, send_vals)
    seen = set(zip(read_keys[hit].tolist(), read_vals[hit].tolist(), strict=True))
    out = set()
    for op, k, values in zip(info["op"].to_pylist(), info["key"].to_pylist(), info["send_values"].to_pylist(),
                             strict=True):
        if any((k, v) in seen for v in values):
            out.add(op)
    return out


# ------------------------------------------------------------------------------------------------ reading

def _file_digest(path: Path) -> dict:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
            size += len(chunk)
    return {"bytes": size, "sha256": h.hexdigest()}


def read_manifest(directory: str | os.PathLike) -> dict:
    """The manifest of a columnar history, or ``ParquetHistoryError`` saying what is wrong with it."""
    directory = Path(directory)
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ParquetHistoryError(f"{directory}: no {MANIFEST} (not a columnar history, or an incomplete one)") from None
    except (OSError, ValueError) as exc:
        raise ParquetHistoryError(f"{path}: unreadable ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ParquetHistoryError(f"{path}: not a {FORMAT} manifest")
    if manifest.get("version") != VERSION:
        raise ParquetHistoryError(f"{path}: version {manifest.get('version')!r}, this kraftcheck reads {VERSION}")
    return manifest


def check_current(directory: str | os.PathLike, history: str | os.PathLike | None = None, *,
                  full: bool = True) -> dict:
    """The manifest of ``directory`` after checking that it is usable: every table present with the size
    (and, when ``full``, the sha256) the manifest gives, and derived from ``history`` when given (same
    size; same sha256 when ``full``). Raises ``ParquetHistoryError`` naming the first difference and how
    to rebuild the directory."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    rebuild = (f"; rebuild it: kraftcheck export --history {history} --format parquet --force"
               if history is not None else "")
    for name, table in manifest["tables"].items():
        path = directory / table["file"]
        try:
            size = path.stat().st_size
        except OSError:
            raise ParquetHistoryError(f"{directory}: {table['file']} is missing{rebuild}") from None
        if size != table["bytes"] or (full and _file_digest(path)["sha256"] != table["sha256"]):
            raise ParquetHistoryError(f"{directory}: {table['file']} is not what the manifest says "
                                      f"({name} table changed or truncated){rebuild}")
    if history is not None:
        src = manifest["source"]
        try:
            size = Path(history).stat().st_size
        except OSError as exc:
            raise ParquetHistoryError(f"{history}: cannot read it ({exc.strerror or exc})") from None
        if size != src["bytes"] or (full and _file_digest(Path(history))["sha256"] != src["sha256"]):
            raise ParquetHistoryError(f"{directory} was not derived from {history} as it is now (the history "
                                      f"changed since: {src['bytes']} bytes then, {size} now){rebuild}")
    return manifest


def verify(directory: str | os.PathLike, history: str | os.PathLike) -> list[str]:
    """Differences between ``directory`` and what ``write_history_parquet`` writes from ``history`` now
    (written again into a temporary directory and compared byte for byte); empty when none."""
    directory = Path(directory)
    try:
        stored = check_current(directory, history, full=True)
    except ParquetHistoryError as exc:
        return [str(exc)]
    problems = []
    with tempfile.TemporaryDirectory(prefix=".verify.", dir=directory.parent) as tmp:
        fresh = write_history_parquet(history, Path(tmp) / "fresh").manifest
    if stored.get("writer") != fresh.get("writer"):
        problems.append(f"written by pyarrow {stored.get('writer', {}).get('pyarrow')}, this is "
                        f"{fresh['writer']['pyarrow']}: the bytes may differ for that reason alone")
    for name, table in fresh["tables"].items():
        old = stored["tables"].get(name, {})
        if (old.get("rows"), old.get("sha256")) != (table["rows"], table["sha256"]):
            problems.append(f"{table['file']}: {old.get('rows')} rows, sha256 {str(old.get('sha256'))[:12]} stored; "
                            f"{table['rows']} rows, sha256 {table['sha256'][:12]} written again")
    for field in ("keys", "malformed", "source"):
        if stored.get(field) != fresh.get(field):
            problems.append(f"manifest {field} differs from a fresh conversion")
    return problems


def _op_of(row: dict) -> dict:
    op = {"index": row["index"], "time": row["time"], "type": row["type"],
          "process": "nemesis" if row["process"] is None else row["process"], "f": row["f"],
          "value": None if row["value"] is None else json.loads(row["value"]),
          "node": row["node"], "error": row["error"]}
    if row["extra"] is not None:
        op.update(json.loads(row["extra"]))
    return op


def read_ops(directory: str | os.PathLike, table: str = OPS) -> tuple[list[dict], list[int]]:
    """The ops of ``ops.parquet`` (or ``nemesis.parquet``) as history dicts, with their line numbers (for
    tests and small histories: it holds them all)."""
    rows = pq.read_table(Path(directory) / table).to_pylist()
    return [_op_of(r) for r in rows], [r["line"] for r in rows]


def ops_of_rows(rows: list[dict]) -> list[dict]:
    """History dicts from rows with the columns of ``ops.parquet`` (e.g. collected by Spark)."""
    return [_op_of(r) for r in rows]
