"""JSONL history -> Parquet, streamed with pyarrow in bounded memory.

The converter reads the JSONL file line by line, validates each op with ``harness.core.history.validate_op``
(the same rules as the Python checkers), and writes row groups of ``batch_rows`` ops, so memory holds one
batch whatever the history's size. ``value`` is stored as its JSON text (Parquet has no "any JSON" type);
``line`` keeps the JSONL line number so Parquet rows keep the history's order. Ops without an index get
their position among valid ops, as ``harness.core.history.iter_history`` does.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from harness.core.history import iter_json_lines, validate_op
from spark_analysis.errors import CorruptInput

PARQUET_SCHEMA = pa.schema([
    ("index", pa.int64()), ("time", pa.int64()), ("type", pa.string()), ("process", pa.string()),
    ("f", pa.string()), ("value", pa.string()), ("node", pa.string()), ("error", pa.string()),
    ("final", pa.string()), ("seek", pa.string()), ("hwm", pa.string()), ("ends", pa.string()),
    ("line", pa.int64()),
])


@dataclass
class ConversionResult:
    """What a conversion wrote and which lines it skipped (``(line, reason)``, first 1000 kept)."""

    rows: int = 0
    malformed_count: int = 0
    malformed: list[tuple[int, str]] = field(default_factory=list)


def jsonl_to_parquet(src: str | os.PathLike, dst: str | os.PathLike, *, batch_rows: int = 100_000,
                     strict: bool = False) -> ConversionResult:
    """Convert a JSONL history to one Parquet file; malformed lines are skipped and reported.

    With ``strict=True`` the first malformed line raises ``CorruptInput`` naming the file and line (and
    the partial output is removed).
    """
    src, dst = str(src), str(dst)
    result = ConversionResult()
    columns: dict[str, list] = {name: [] for name in PARQUET_SCHEMA.names}
    position = 0
    writer = pq.ParquetWriter(dst, PARQUET_SCHEMA, compression="zstd")
    try:
        for lineno, op, reason in iter_json_lines(src):
            if reason is None:
                reason = validate_op(op)
            if reason is not None:
                if strict:
                    raise CorruptInput(f"{src}:{lineno}: {reason}", [(src, lineno, reason)])
                result.malformed_count += 1
                if len(result.malformed) < 1000:
                    result.malformed.append((lineno, reason))
                continue
            _append(columns, op, position, lineno)
            position += 1
            if len(columns["line"]) >= batch_rows:
                _flush(writer, columns)
        _flush(writer, columns)
    except BaseException:
        writer.close()
        try:
            os.unlink(dst)
        except OSError:
            pass
        raise
    writer.close()
    result.rows = position
    return result


def _append(columns: dict[str, list], op: dict, position: int, lineno: int) -> None:
    value = op.get("value")
    columns["index"].append(op.get("index", position))
    columns["time"].append(op["time"])
    columns["type"].append(op["type"])
    columns["process"].append(str(op["process"]))
    columns["f"].append(op["f"])
    columns["value"].append(None if value is None else json.dumps(value, separators=(",", ":")))
    columns["node"].append(_text_or_none(op.get("node")))
    columns["error"].append(_text_or_none(op.get("error")))
    columns["final"].append("true" if op.get("final") is True else None)
    columns["seek"].append("true" if op.get("seek_to_beginning") is True else None)
    columns["hwm"].append(json.dumps(op["hwm"], separators=(",", ":")) if isinstance(op.get("hwm"), dict)
                          else None)
    columns["ends"].append(json.dumps(op["ends"], separators=(",", ":")) if isinstance(op.get("ends"), dict)
                           else None)
    columns["line"].append(lineno)


def _text_or_none(x: object) -> str | None:
    if x is None or isinstance(x, str):
        return x
    return json.dumps(x, separators=(",", ":"))


def _flush(writer: pq.ParquetWriter, columns: dict[str, list]) -> None:
    if not columns["line"]:
        return
    writer.write_table(pa.table(columns, schema=PARQUET_SCHEMA))
    for values in columns.values():
        values.clear()
