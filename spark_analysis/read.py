"""Reading JSONL histories at scale: ``spark.read.text`` + ``from_json`` with an explicit schema.

(A columnar history is read by ``spark_analysis.columnar`` into the same op shape.)

The op DataFrame (``OPS_COLUMNS``) has one row per line of the input::

    run    string   the run the line belongs to (the history file's directory, or a name given by the caller)
    file   string   the input file's URI
    block  long     byte offset of the file split the line was read from (input_file_block_start)
    rid    long     monotonically_increasing_id: increases with the line inside one split
    index, time     long
    type, process, f, node, error   string (process is "nemesis" or the decimal text of an int)
    value  string   the op's value as raw JSON text, parsed later according to ``f``
    final, seek, hwm, ends, rebalance   string   the optional fields the queue checks read, as raw JSON
    group, generation, member, stall    string   the fields of consumer-group ops the group checks read
                                                 (``group``, ``generation``, ``member``, ``stall_ms``)
    bad    string   why the line is not a valid op (harness.history.validate_op's checks), or null

``(block, rid)`` orders the lines of one file exactly as in the file, without a global sort and without
collecting anything to the driver; line numbers are derived from it only when they are needed (malformed
lines, ops without an ``index``), from a table with one row per split.

Known differences from ``harness.history.validate_op``: a non-string ``f`` (e.g. ``5``) is read as the
string ``"5"`` instead of being rejected, and a top-level ``process`` given as a digit string (``"3"``) is
detected with a regular expression over the raw line (it could be fooled by a nested ``"process": "..."``
inside a client op's value; no workload writes one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_analysis.errors import CorruptInput

OP_TYPES = ("invoke", "ok", "fail", "info")
NEMESIS = "nemesis"

_FIELDS = [("index", T.LongType()), ("time", T.LongType()), ("type", T.StringType()),
           ("process", T.StringType()), ("f", T.StringType()), ("value", T.StringType()),
           ("node", T.StringType()), ("error", T.StringType())]
# Optional op fields the queue checks read (checkers/queue/anomalies.py): the final-phase mark, the assign's
# seek-to-beginning flag and the high watermarks a consumer saw; then those of the group checks
# (checkers/groups): the group, generation and member of an op and a zombie commit's stall. Kept as raw
# JSON text (a JSON string's text without its quotes).
_EXTRA = [("final", T.StringType()), ("seek_to_beginning", T.StringType()), ("hwm", T.StringType()),
          ("ends", T.StringType()), ("rebalance_log", T.StringType()), ("group", T.StringType()),
          ("generation", T.StringType()), ("member", T.StringType()), ("stall_ms", T.StringType())]
OP_SCHEMA = T.StructType([T.StructField(n, t) for n, t in _FIELDS + _EXTRA])
_PARSE_SCHEMA = T.StructType(OP_SCHEMA.fields + [T.StructField("_corrupt", T.StringType())])
OPS_COLUMNS = (["run", "file", "block", "rid"] + [n for n, _ in _FIELDS]
               + ["final", "seek", "hwm", "ends", "rebalance", "group", "generation", "member", "stall", "bad"])


@dataclass(frozen=True)
class Malformed:
    """One unusable input line: where it is and why (same meaning as harness.history.MalformedLine)."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


def _bad_reason(text: Column, j: Column) -> Column:
    """Why a parsed line is not a valid op, mirroring harness.history.validate_op's order of checks."""
    process = j["process"]
    process_ok = (process == NEMESIS) | (
        process.rlike(r"^-?[0-9]+$") & ~text.rlike(r'"process"\s*:\s*"'))
    corrupt = j["_corrupt"].isNotNull()
    return (F.when(corrupt & F.try_parse_json(text).isNull() & (text != ""), F.lit("invalid JSON"))
            .when(corrupt & ~F.ltrim(text).startswith("{"), F.lit("not a JSON object"))
            .when(~j["type"].isin(*OP_TYPES) | j["type"].isNull(),
                  F.concat(F.lit("bad type "), F.coalesce(j["type"], F.lit("None"))))
            .when(~process_ok | process.isNull(),
                  F.concat(F.lit("bad process "), F.coalesce(process, F.lit("None"))))
            .when(j["f"].isNull(), F.lit("bad f"))
            .when(j["time"].isNull(), F.lit("bad time"))
            .when(corrupt, F.lit("bad index"))
            .otherwise(F.lit(None).cast("string")))


def read_jsonl(spark: SparkSession, paths: str | list[str], run: str | None = None) -> DataFrame:
    """All lines of one or more JSONL histories as op rows (``OPS_COLUMNS``), blank lines dropped.

    ``run`` names the run of every row; when None, a row's run is its file's directory.
    """
    paths = [paths] if isinstance(paths, str) else list(paths)
    raw = (spark.read.text(paths)
           .select(F.input_file_name().alias("file"),
                   F.expr("input_file_block_start()").alias("block"),
                   F.monotonically_increasing_id().alias("rid"),
                   F.col("value").alias("text")))
    parsed = raw.withColumn("j", F.from_json(
        "text", _PARSE_SCHEMA, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt"}))
    run_col = F.lit(run) if run is not None else dir_of(F.col("file"))
    # Blank lines are skipped by harness.history too; they keep counting for line numbers (via rid).
    parsed = parsed.where(F.trim("text") != "")
    return parsed.select(run_col.alias("run"), "file", "block", "rid",
                         *[F.col("j")[n].alias(n) for n, _ in _FIELDS],
                         F.col("j.final").alias("final"), F.col("j.seek_to_beginning").alias("seek"),
                         F.col("j.hwm").alias("hwm"), F.col("j.ends").alias("ends"),
                         F.col("j.rebalance_log").alias("rebalance"), F.col("j.group").alias("group"),
                         F.col("j.generation").alias("generation"), F.col("j.member").alias("member"),
                         F.col("j.stall_ms").alias("stall"),
                         _bad_reason(F.col("text"), F.col("j")).alias("bad"))


def dir_of(file_col: Column) -> Column:
    """The directory part of a file URI, without the ``file:`` scheme (the run directory)."""
    return F.regexp_replace(F.regexp_replace(file_col, r"^file:(//)?", ""), r"/[^/]*$", "")


def _block_table(spark: SparkSession, rows: DataFrame, extra: dict[str, Column] | None = None) -> DataFrame:
    """One row per (file, block): the line number before it and its first rid (a tiny table)."""
    aggs = [F.count(F.lit(1)).alias("n"), F.min("rid").alias("min_rid"), F.max("rid").alias("max_rid")]
    for name, col in (extra or {}).items():
        aggs.append(col.alias(name))
    blocks = rows.groupBy("file", "block").agg(*aggs)
    w = Window.partitionBy("file").orderBy("block").rowsBetween(Window.unboundedPreceding, -1)
    return blocks.withColumn("base", F.coalesce(F.sum("n").over(w), F.lit(0)))


def malformed_lines(spark: SparkSession, ops: DataFrame, limit: int = 100,
                    total: int | None = None) -> tuple[int, list[Malformed]]:
    """Count the malformed lines of ``ops`` and return the first ``limit`` of them with line numbers.

    ``total``: the count when the caller already has it (``scan_counts``), saving a pass.

    Line numbers count every physical line (blank ones included), as harness.history does. Only the
    malformed rows and one row per split reach the driver.
    """
    bad = ops.where(F.col("bad").isNotNull())
    if total is None:
        total = bad.count()
    if total == 0:
        return 0, []
    # Lines per split need the raw line count, blank lines included: count them from the text again.
    files = [r["file"] for r in bad.select("file").distinct().limit(1000).collect()]
    raw = (spark.read.text(files)
           .select(F.input_file_name().alias("file"), F.expr("input_file_block_start()").alias("block"),
                   F.monotonically_increasing_id().alias("rid")))
    blocks = F.broadcast(_block_table(spark, raw))
    first = (bad.join(blocks, ["file", "block"])
             .select("file", (F.col("base") + F.col("rid") - F.col("min_rid") + 1).alias("line"), "bad")
             .orderBy("file", "line").limit(limit).collect())
    return total, [Malformed(_plain_path(r["file"]), int(r["line"]), r["bad"]) for r in first]


def _plain_path(uri: str) -> str:
    for prefix in ("file://", "file:"):
        if uri.startswith(prefix):
            return uri[len(prefix):]
    return uri


def raise_if_malformed(spark: SparkSession, ops: DataFrame, limit: int = 20) -> None:
    """Raise ``CorruptInput`` naming the file and line of the first malformed lines, if there are any."""
    total, first = malformed_lines(spark, ops, limit)
    if total:
        shown = "\n  ".join(str(m) for m in first)
        raise CorruptInput(f"{total} malformed history line(s), first ones:\n  {shown}",
                           [(m.path, m.line, m.reason) for m in first])


def scan_counts(ops: DataFrame) -> tuple[int, int]:
    """``(malformed lines, valid ops without an index)`` in one pass over the input."""
    row = ops.agg(F.count(F.col("bad")).alias("bad"),
                  F.sum((F.col("bad").isNull() & F.col("index").isNull()).cast("long")).alias("noindex")).collect()[0]
    return int(row["bad"] or 0), int(row["noindex"] or 0)


def with_order(spark: SparkSession, ops: DataFrame, missing_index: int | None = None) -> DataFrame:
    """Valid ops only, with ``index`` filled in like harness.history (position among valid ops when
    missing) and an order key ``seq`` (``block``, ``rid``) that is file order within each file.

    Filling missing indices needs a per-split count; it is computed only when some index is missing.
    """
    valid = ops.where(F.col("bad").isNull()).drop("bad")
    if missing_index is None:
        missing_index = valid.where(F.col("index").isNull()).limit(1).count()
    if missing_index == 0:
        return valid
    blocks = F.broadcast(_block_table(spark, valid).select(
        "file", "block", F.col("base").alias("valid_base")))
    w = Window.partitionBy("file", "block").orderBy("rid")
    position = F.col("valid_base") + F.row_number().over(w) - 1
    return (valid.join(blocks, ["file", "block"])
            .withColumn("index", F.coalesce(F.col("index"), position)).drop("valid_base"))


def _json_or_text(raw: str | None) -> Any:
    import json

    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:  # Spark hands a JSON string value over without its quotes
        return raw


def ops_to_dicts(rows: list[Any]) -> list[dict]:
    """Convert collected op rows back to history dicts (for small histories and tests)."""
    out = []
    for r in rows:
        process: Any = r["process"]
        if process != NEMESIS:
            process = int(process)
        out.append({"index": r["index"], "time": r["time"], "type": r["type"], "process": process,
                    "f": r["f"], "value": _json_or_text(r["value"]),
                    "node": r["node"], "error": r["error"]})
    return out
