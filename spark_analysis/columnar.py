"""Columnar histories (``history.parquet/``, written by ``checkers.history.parquet``) as Spark DataFrames.

``key_table`` reads ``queue.parquet`` (the key table, nothing to parse or pair) and ``ops`` reads
``ops.parquet`` in the shape of ``spark_analysis.read.OPS_COLUMNS`` (``line`` ordering the rows): the
fields a Parquet history keeps in ``extra`` that the group checks read (``rebalance_log``, ``group``,
``generation``, ``member``, ``stall_ms``) are taken out of it as the JSONL reader gives them, raw JSON
text; the others are not needed and are left out. Many directories are read by
one job; a row's ``run`` is the directory holding ``history.parquet`` (as ``spark_analysis.read`` names
the run of a JSONL history), unless the caller names it.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers.history.parquet import OPS, QUEUE
from spark_analysis.read import dir_of

# History fields kept in ``extra`` that the group checks read, and their op columns.
GROUP_FIELDS = (("rebalance_log", "rebalance"), ("group", "group"), ("generation", "generation"),
                ("member", "member"), ("stall_ms", "stall"))


def _run(run: str | None) -> Column:
    # .../<run>/history.parquet/<table>.parquet: the run is two levels up.
    return F.lit(run) if run is not None else dir_of(dir_of(F.input_file_name()))


def key_table(spark: SparkSession, dirs: list[str], run: str | None = None) -> DataFrame:
    """The key tables of ``dirs`` (one job reads them all), with ``run``."""
    return spark.read.parquet(*[str(Path(d) / QUEUE) for d in dirs]).withColumn("run", _run(run))


def ops(spark: SparkSession, dirs: list[str], run: str | None = None) -> DataFrame:
    """The ops of ``dirs`` as valid op rows: run, file, block (0), rid (the JSONL line), index, time,
    type, process (text, ``nemesis`` for the nemesis), f, value (JSON text), node, error, final, and the
    group fields rebalance, group, generation, member, stall (raw JSON text, from ``extra``)."""
    df = spark.read.parquet(*[str(Path(d) / OPS) for d in dirs])
    extra = [F.get_json_object("extra", f"$.{field}").alias(name) for field, name in GROUP_FIELDS]
    return df.select(_run(run).alias("run"), dir_of(F.input_file_name()).alias("file"),
                     F.lit(0).cast("long").alias("block"), F.col("line").alias("rid"), "index", "time", "type",
                     F.coalesce(F.col("process").cast("string"), F.lit("nemesis")).alias("process"), "f",
                     "value", "node", "error", F.when(F.col("final"), F.lit("true")).alias("final"), *extra)

