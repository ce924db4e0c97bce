"""The per-key queue checks of ``checkers/queue.py`` as Spark jobs: same definitions, same result shapes.

Every definition below is the one stated in ``checkers/queue.py``'s docstring (contract version
``CONTRACT_VERSION``); this module only translates it into joins, group-bys and window functions, with
``run`` added to every key so that one job checks many runs:

- shared tables: ``ok_vals`` (values each key's ok reads returned), ``writer`` (the smallest op index
  sending (k, v), and its type), ``committed_info`` (info ops with a send read by an ok read), the version
  order ``log`` (read observations with an offset, committed sends with an offset) with ``idx`` = dense rank
  of the offset in its key, and ``firstlast`` (first/last index and smallest offset of each value);
- per-process scans (poll baselines, send order) are window functions over (run, process, key) ordered
  by op index; an ``assign`` becomes a "reset" row for the keys it drops, and a running count of resets
  splits the scan into segments inside which the baseline is the last ok read;
- realtime order and high-watermark regressions are a running maximum over a per-key stream of
  completion and invocation events ordered by time (invocations first at equal times, because only
  completions strictly before an invocation count).

``anomaly_frames`` returns one DataFrame per kind (rows carry ``run`` plus the contract's fields);
``collect_anomalies`` turns them into exactly the dicts and order of ``queue_anomalies``, and
``count_anomalies`` counts them per run without collecting rows. Nothing collects the history itself.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_analysis.extract import Extracted, checkpoint

CONTRACT_VERSION = 2
KINDS = ("inconsistent-offsets", "duplicate", "lost-write", "poll-skip", "nonmonotonic-poll",
         "int-poll-skip", "int-nonmonotonic-poll", "nonmonotonic-send", "int-nonmonotonic-send", "G1a",
         "precommitted-read", "unseen", "acked-unreadable", "realtime-order", "hwm-regression")

# kind -> (output fields in the contract's order, sort columns)
SHAPES: dict[str, tuple[list[str], list[str]]] = {
    "inconsistent-offsets": (["key", "offset", "values", "ops"], ["key", "offset"]),
    "duplicate": (["key", "value", "offsets"], ["key", "value"]),
    "lost-write": (["key", "value", "offset", "index", "max_read_index", "writer", "max_read"],
                   ["key", "index", "value"]),
    "poll-skip": (["key", "process", "ops", "values", "delta", "skipped"], ["key", "_later"]),
    "nonmonotonic-poll": (["key", "process", "ops", "values", "delta"], ["key", "_later"]),
    "int-poll-skip": (["key", "op", "pos", "values", "delta", "skipped"], ["key", "op", "pos"]),
    "int-nonmonotonic-poll": (["key", "op", "pos", "values", "delta"], ["key", "op", "pos"]),
    "nonmonotonic-send": (["key", "process", "ops", "values", "delta"], ["key", "_later"]),
    "int-nonmonotonic-send": (["key", "op", "pos", "values", "delta"], ["key", "op", "pos"]),
    "G1a": (["key", "value", "writer", "reader"], ["key", "value", "reader"]),
    "precommitted-read": (["key", "value", "op"], ["key", "value", "op"]),
    "unseen": (["key", "value", "offset", "writer"], ["key", "value", "writer", "_spos"]),
    "acked-unreadable": (["key", "offset", "value", "writer", "final_values"],
                         ["key", "offset", "value", "writer", "_spos"]),
    "realtime-order": (["key", "earlier", "later", "offsets", "values"], ["key", "later", "_ob", "_spos"]),
    "hwm-regression": (["key", "earlier", "later", "hwms"], ["key", "later"]),
}

_RK = ["run", "key"]


class QueueJobs:
    """The shared tables of one extraction, built lazily and persisted once."""

    def __init__(self, ex: Extracted, options: dict | None = None):
        self.ex = ex
        self.options = options or {}
        sends, reads = ex.sends, ex.reads
        # Every shared table is checkpointed as it is built (spark_analysis.extract.checkpoint): the checks
        # then plan against small leaves instead of re-analyzing the whole chain each time.
        self.ok_reads = reads.where(F.col("type") == "ok")
        self.ok_vals = checkpoint(self.ok_reads.select("run", "key", "value").distinct())
        self.writer = checkpoint(sends.groupBy("run", "key", "value")
                                 .agg(F.min(F.struct("op", "type")).alias("w"))
                                 .select("run", "key", "value", F.col("w.op").alias("writer"),
                                         F.col("w.type").alias("writer_type")))
        self.committed_info = checkpoint(sends.where(F.col("type") == "info")
                                         .join(self.ok_vals, ["run", "key", "value"], "left_semi")
                                         .select("run", "op").distinct())
        info_ok = self.committed_info.withColumn("_ci", F.lit(True))
        self.committed_sends = checkpoint(sends.join(info_ok, ["run", "op"], "left")
                                          .where((F.col("type") == "ok") | F.col("_ci").isNotNull()).drop("_ci"))
        observed = (reads.where(F.col("offset").isNotNull()).select("run", "key", "offset", "value")
                    .unionByName(self.committed_sends.where(F.col("offset").isNotNull())
                                 .select("run", "key", "offset", "value"))
                    .distinct())
        w = Window.partitionBy("run", "key").orderBy("offset")
        self.log = checkpoint(observed.withColumn("idx", F.dense_rank().over(w) - 1))
        self.firstlast = checkpoint(self.log.groupBy("run", "key", "value").agg(
            F.min("idx").alias("first"), F.max("idx").alias("last"), F.min("offset").alias("min_offset")))
        self.committed_writer = checkpoint(
            self.writer.join(info_ok.withColumnRenamed("op", "writer"), ["run", "writer"], "left")
            .where((F.col("writer_type") == "ok") | F.col("_ci").isNotNull()).drop("_ci"))
        self._persisted: list[DataFrame] = [self.ok_vals, self.writer, self.committed_info, self.committed_sends,
                                            self.log, self.firstlast, self.committed_writer]

    def persist(self) -> QueueJobs:
        """The shared tables are materialized when built; kept for callers that chain ``persist()``."""
        return self

    def unpersist(self) -> None:
        """Release the persisted shared tables."""
        for df in self._persisted:
            df.unpersist()
        self._persisted.clear()

    # ------------------------------------------------------------------------------------------ helpers
    def _index_of(self, df: DataFrame, value_col: str, out: str) -> DataFrame:
        """Add ``out`` = first(k, value) (null when the value was never observed with an offset)."""
        fl = self.firstlast.select("run", "key", F.col("value").alias(value_col), F.col("first").alias(out))
        return df.join(fl, ["run", "key", value_col], "left")

    def _with_skipped(self, df: DataFrame, i1: str, i2: str) -> DataFrame:
        """Add ``skipped`` = values at indices strictly between ``i1`` and ``i2``, by index then value.

        Only skip rows get here (rare), so joining them with the log per key stays small.
        """
        keyed = df.withColumn("_row", F.monotonically_increasing_id())
        at = self.log.select("run", "key", F.col("idx").alias("_i"), F.col("value").alias("_v"))
        inner = (keyed.select("_row", "run", "key", i1, i2).join(at, _RK)
                 .where((F.col("_i") > F.col(i1)) & (F.col("_i") < F.col(i2)))
                 .groupBy("_row").agg(F.array_sort(F.collect_list(F.struct("_i", "_v"))).alias("_s")))
        return (keyed.join(inner, "_row", "left")
                .withColumn("skipped", F.coalesce(F.transform("_s", lambda s: s["_v"]),
                                                  F.array().cast(T.ArrayType(T.LongType()))))
                .drop("_row", "_s"))

    # ------------------------------------------------------------------------------------------- checks
    def inconsistent_offsets(self) -> DataFrame:
        """Offsets of a key observed with two or more values."""
        bad = (self.log.groupBy("run", "key", "offset")
               .agg(F.array_sort(F.collect_set("value")).alias("values"))
               .where(F.size("values") >= 2))
        observers = (self.ex.reads.where(F.col("offset").isNotNull()).select("run", "key", "offset", "op")
                     .unionByName(self.committed_sends.where(F.col("offset").isNotNull())
                                  .select("run", "key", "offset", "op")))
        ops = (observers.join(bad.select("run", "key", "offset"), ["run", "key", "offset"], "left_semi")
               .groupBy("run", "key", "offset").agg(F.array_sort(F.collect_set("op")).alias("ops")))
        return bad.join(ops, ["run", "key", "offset"], "left")

    def duplicates(self) -> DataFrame:
        """Values observed at two or more offsets of one key."""
        return (self.log.groupBy("run", "key", "value")
                .agg(F.array_sort(F.collect_set("offset")).alias("offsets"))
                .where(F.size("offsets") >= 2))

    def lost_writes(self) -> DataFrame:
        """Committed values below the highest read index that no ok read returned."""
        indexed_ok = self.ok_vals.join(self.firstlast, ["run", "key", "value"])
        bound = indexed_ok.groupBy("run", "key").agg(F.max("first").alias("max_read_index"))
        bound_vals = (indexed_ok.join(bound, _RK).where(F.col("first") == F.col("max_read_index"))
                      .select("run", "key", "value"))
        max_read = (self.ok_reads.join(bound_vals, ["run", "key", "value"], "left_semi")
                    .groupBy("run", "key").agg(F.min("op").alias("max_read")))
        lost = (self.firstlast.join(bound, _RK)
                .where(F.col("last") <= F.col("max_read_index"))
                .join(self.ok_vals, ["run", "key", "value"], "left_anti")
                .join(self.committed_writer.select("run", "key", "value", "writer"), ["run", "key", "value"]))
        return (lost.join(max_read, _RK, "left")
                .select("run", "key", "value", F.col("min_offset").alias("offset"),
                        F.col("first").alias("index"), "max_read_index", "writer", "max_read"))

    def _poll_baselines(self) -> DataFrame:
        """Each op's first read of a key with the process's baseline (op, value, index) for that key.

        Contract v2: an ok/info ``assign`` with seek_to_beginning drops every baseline and sets the *log
        start* (index -1, value null, op = the assign) for the keys it assigns; without seek it drops the
        keys it does not assign. Final ops are compared with the log start (op = themselves) and neither
        use nor set the process's baselines. Only ok ops set baselines.
        """
        reads = self.ex.reads
        per_op = (reads.groupBy("run", "op", "process", "type", "final", "key")
                  .agg(F.min_by("value", "pos").alias("v_first"), F.max_by("value", "pos").alias("v_last")))
        regular = per_op.where(~F.col("final")).drop("final")
        recs = self.ex.recs
        assigns = (recs.where((F.col("f") == "assign") & F.col("type").isin("ok", "info"))
                   .select("run", "process", "op", "seek",
                           F.transform(F.coalesce(F.from_json("ival", T.ArrayType(T.StringType())),
                                                  F.array().cast(T.ArrayType(T.StringType()))),
                                       lambda k: k.try_cast("long")).alias("keys")))
        streams = regular.select("run", "process", "key").distinct()
        assigned = F.coalesce(F.array_contains("keys", F.col("key")), F.lit(False))
        resets = (assigns.join(streams, ["run", "process"])
                  .where(F.col("seek") | ~assigned)
                  .select("run", "process", "key", "op", F.lit(1).alias("is_reset"),
                          (F.col("seek") & assigned).alias("log_start")))
        rows = (regular.withColumn("is_reset", F.lit(0)).withColumn("log_start", F.lit(False))
                .unionByName(resets, allowMissingColumns=True))
        stream = Window.partitionBy("run", "process", "key")
        seg = F.sum("is_reset").over(stream.orderBy("op", "is_reset")
                                     .rowsBetween(Window.unboundedPreceding, Window.currentRow))
        rows = rows.withColumn("seg", seg)
        before = (Window.partitionBy("run", "process", "key", "seg").orderBy("op")
                  .rowsBetween(Window.unboundedPreceding, -1))
        sets_base = (F.when((F.col("type") == "ok") & (F.col("is_reset") == 0),
                            F.struct("op", F.col("v_last").alias("v"), F.lit(False).alias("start")))
                     .when(F.col("log_start"), F.struct("op", F.lit(None).cast("long").alias("v"),
                                                        F.lit(True).alias("start"))))
        base = F.last(sets_base, ignorenulls=True).over(before)
        # The window must see the reset rows (they carry the log-start baseline): filter them afterwards.
        compared = (rows.withColumn("base", base).where((F.col("is_reset") == 0) & F.col("base").isNotNull())
                    .select("run", "process", "key", "op", F.col("base.op").alias("base_op"),
                            F.col("base.v").alias("v_base"), F.col("base.start").alias("from_start"), "v_first"))
        finals = per_op.where(F.col("final")).select(
            "run", "process", "key", "op", F.col("op").alias("base_op"), F.lit(None).cast("long").alias("v_base"),
            F.lit(True).alias("from_start"), "v_first")
        return compared.unionByName(finals)

    def poll_order(self) -> tuple[DataFrame, DataFrame]:
        """poll-skip and nonmonotonic-poll across a process's successive reads of a key."""
        x = self._index_of(self._index_of(self._poll_baselines(), "v_base", "i1"), "v_first", "i2")
        # The log start sits just before index 0.
        x = x.withColumn("i1", F.when(F.col("from_start"), F.lit(-1).cast("long")).otherwise(F.col("i1")))
        x = (x.where(F.col("i1").isNotNull() & F.col("i2").isNotNull())
             .withColumn("delta", F.col("i2") - F.col("i1"))
             .withColumn("ops", F.array("base_op", "op")).withColumn("values", F.array("v_base", "v_first"))
             .withColumn("_later", F.col("op")))
        skips = self._with_skipped(x.where(F.col("delta") > 1), "i1", "i2")
        return skips, x.where(F.col("delta") < 1)

    def internal_poll_order(self) -> tuple[DataFrame, DataFrame]:
        """int-poll-skip and int-nonmonotonic-poll inside one op's read sequence of a key."""
        r = self._index_of(self.ex.reads.select("run", "op", "key", "pos", "value"), "value", "i")
        w = Window.partitionBy("run", "op", "key").orderBy("pos")
        x = (r.withColumn("i1", F.lag("i").over(w)).withColumn("v1", F.lag("value").over(w))
             .where((F.col("pos") >= 1) & F.col("i1").isNotNull() & F.col("i").isNotNull())
             .select("run", "key", "op", "pos", F.array("v1", "value").alias("values"), "i1",
                     F.col("i").alias("i2"), (F.col("i") - F.col("i1")).alias("delta")))
        skips = self._with_skipped(x.where(F.col("delta") > 1), "i1", "i2")
        return skips, x.where(F.col("delta") < 1)

    def send_order(self) -> tuple[DataFrame, DataFrame]:
        """nonmonotonic-send (across a process's ok/info ops) and int-nonmonotonic-send (inside one)."""
        s = self.ex.sends.where(F.col("type").isin("ok", "info"))
        per_op = (s.groupBy("run", "op", "process", "key")
                  .agg(F.min_by("value", "spos").alias("v_first"), F.max_by("value", "spos").alias("v_last")))
        w = Window.partitionBy("run", "process", "key").orderBy("op")
        ext = (per_op.withColumn("prev_op", F.lag("op").over(w)).withColumn("v_prev", F.lag("v_last").over(w))
               .where(F.col("prev_op").isNotNull()))
        ext = self._index_of(self._index_of(ext, "v_prev", "i1"), "v_first", "i2")
        ext = (ext.where(F.col("i1").isNotNull() & F.col("i2").isNotNull() & (F.col("i2") - F.col("i1") < 1))
               .select("run", "key", "process", F.array("prev_op", "op").alias("ops"),
                       F.array("v_prev", "v_first").alias("values"), (F.col("i2") - F.col("i1")).alias("delta"),
                       F.col("op").alias("_later")))
        wi = Window.partitionBy("run", "op", "key").orderBy("spos")
        inner = (self._index_of(s.select("run", "op", "key", "spos", "value"), "value", "i")
                 .withColumn("pos", F.row_number().over(wi) - 1)
                 .withColumn("i1", F.lag("i").over(wi)).withColumn("v1", F.lag("value").over(wi))
                 .where((F.col("pos") >= 1) & F.col("i1").isNotNull() & F.col("i").isNotNull()
                        & (F.col("i") - F.col("i1") < 1))
                 .select("run", "key", "op", "pos", F.array("v1", "value").alias("values"),
                         (F.col("i") - F.col("i1")).alias("delta")))
        return ext, inner

    def aborted_reads(self) -> DataFrame:
        """G1a: ok reads of values whose writer failed."""
        return (self.ok_reads.join(self.writer.where(F.col("writer_type") == "fail"), ["run", "key", "value"])
                .select("run", "key", "value", "writer", F.col("op").alias("reader")).distinct())

    def precommitted_reads(self) -> DataFrame:
        """Ops that read a value they themselves send."""
        return (self.ex.reads.select("run", "op", "key", "value").distinct()
                .join(self.ex.sends.select("run", "op", "key", "value"), ["run", "op", "key", "value"])
                .select("run", "key", "value", "op").distinct())

    def unseen(self) -> DataFrame:
        """ok sends that no ok read completed by the recovery deadline returned."""
        deadline = self.options.get("unseen_deadline_ns")
        seen = self.ok_reads
        if deadline is not None:
            seen = seen.where(F.col("complete_time").isNotNull() & (F.col("complete_time") <= int(deadline)))
        seen = seen.select("run", "key", "value").distinct()
        return (self.ex.sends.where(F.col("type") == "ok").join(seen, ["run", "key", "value"], "left_anti")
                .select("run", "key", "value", "offset", F.col("op").alias("writer"), F.col("spos").alias("_spos")))

    def acked_unreadable(self) -> DataFrame:
        """ok sends the final phase did not read back at their acknowledged offset (runs with one)."""
        final_runs = self.ex.recs.where(F.col("final")).select("run").distinct()
        final_reads = self.ok_reads.where(F.col("final"))
        final_vals = final_reads.select("run", "key", "value").distinct()
        final_at = (final_reads.where(F.col("offset").isNotNull())
                    .groupBy("run", "key", "offset").agg(F.array_sort(F.collect_set("value")).alias("got")))
        ok_sends = (self.ex.sends.where(F.col("type") == "ok").join(final_runs, "run", "left_semi")
                    .select("run", "key", "offset", "value", F.col("op").alias("writer"),
                            F.col("spos").alias("_spos")))
        empty = F.array().cast(T.ArrayType(T.LongType()))
        no_offset = (ok_sends.where(F.col("offset").isNull())
                     .join(final_vals, ["run", "key", "value"], "left_anti")
                     .withColumn("final_values", empty))
        with_offset = (ok_sends.where(F.col("offset").isNotNull())
                       .join(final_at, ["run", "key", "offset"], "left")
                       .withColumn("final_values", F.coalesce("got", empty))
                       .where(~F.array_contains("final_values", F.col("value"))).drop("got"))
        return no_offset.unionByName(with_offset)

    @staticmethod
    def _running_max(events: DataFrame, measure: str, ties_violate: bool) -> DataFrame:
        """For each event B, the event A completed strictly before B's invocation with the largest
        ``measure`` (ties: smallest op, then spos); keep B when A's measure beats B's."""
        cand = F.struct(F.col(measure).alias("m"), (-F.col("op")).alias("nop"), (-F.col("spos")).alias("npos"),
                        F.col("op").alias("op"), F.col("value").alias("v"))
        completions = events.where(F.col("complete_time").isNotNull()).select(
            "run", "key", F.col("complete_time").alias("t"), F.lit(1).alias("kind"), cand.alias("cand"),
            F.lit(None).cast("long").alias("op"), F.lit(None).cast("long").alias("spos"),
            F.lit(None).cast("long").alias("m"), F.lit(None).cast("long").alias("value"))
        invokes = events.select("run", "key", F.col("invoke_time").alias("t"), F.lit(0).alias("kind"),
                                F.lit(None).cast(cand_type(events, measure)).alias("cand"),
                                "op", "spos", F.col(measure).alias("m"), "value")
        w = (Window.partitionBy("run", "key").orderBy("t", "kind")
             .rowsBetween(Window.unboundedPreceding, Window.currentRow))
        x = (completions.unionByName(invokes).withColumn("best", F.max("cand").over(w))
             .where((F.col("kind") == 0) & F.col("best").isNotNull()))
        beats = (F.col("best.m") >= F.col("m")) if ties_violate else (F.col("best.m") > F.col("m"))
        return x.where(beats)

    def realtime_order(self) -> DataFrame:
        """An ok send acknowledged before another was invoked must have the smaller offset."""
        events = (self.ex.sends.where((F.col("type") == "ok") & F.col("offset").isNotNull())
                  .select("run", "key", "op", "spos", "invoke_time", "complete_time", "offset", "value"))
        x = self._running_max(events, "offset", ties_violate=True)
        return x.select("run", "key", F.col("best.op").alias("earlier"), F.col("op").alias("later"),
                        F.array("best.m", "m").alias("offsets"), F.array("best.v", "value").alias("values"),
                        F.col("m").alias("_ob"), F.col("spos").alias("_spos"))

    def hwm_regressions(self) -> DataFrame:
        """The high watermark a client sees must not go back across non-overlapping reads."""
        hwm = F.from_json("hwm", T.MapType(T.StringType(), T.StringType()))
        events = (self.ex.recs.where((F.col("type") == "ok") & F.col("hwm").isNotNull())
                  .select("run", "op", "invoke_time", "complete_time", F.explode(hwm).alias("k", "h"))
                  .where(F.col("h").rlike(r"^-?[0-9]+$"))
                  .select("run", F.col("k").try_cast("long").alias("key"), "op", F.lit(0).cast("long").alias("spos"),
                          "invoke_time", "complete_time", F.col("h").cast("long").alias("hwm"),
                          F.lit(None).cast("long").alias("value")))
        x = self._running_max(events, "hwm", ties_violate=False)
        return x.select("run", "key", F.col("best.op").alias("earlier"), F.col("op").alias("later"),
                        F.array("best.m", "m").alias("hwms"))

    def frames(self) -> dict[str, DataFrame]:
        """kind -> DataFrame of its rows (``run`` + the contract's fields + private sort columns)."""
        out: dict[str, DataFrame] = {}
        out["inconsistent-offsets"] = self.inconsistent_offsets()
        out["duplicate"] = self.duplicates()
        out["lost-write"] = self.lost_writes()
        out["poll-skip"], out["nonmonotonic-poll"] = self.poll_order()
        out["int-poll-skip"], out["int-nonmonotonic-poll"] = self.internal_poll_order()
        out["nonmonotonic-send"], out["int-nonmonotonic-send"] = self.send_order()
        out["G1a"] = self.aborted_reads()
        out["precommitted-read"] = self.precommitted_reads()
        out["unseen"] = self.unseen()
        out["acked-unreadable"] = self.acked_unreadable()
        out["realtime-order"] = self.realtime_order()
        out["hwm-regression"] = self.hwm_regressions()
        return out


def cand_type(events: DataFrame, measure: str) -> T.DataType:
    """The struct type of a running-max candidate (null literals need an explicit type)."""
    return T.StructType([T.StructField("m", T.LongType()), T.StructField("nop", T.LongType()),
                         T.StructField("npos", T.LongType()), T.StructField("op", T.LongType()),
                         T.StructField("v", T.LongType())])


def anomaly_frames(ex: Extracted, options: dict | None = None) -> tuple[QueueJobs, dict[str, DataFrame]]:
    """Build the shared tables (persisted) and one DataFrame per anomaly kind."""
    jobs = QueueJobs(ex, options).persist()
    return jobs, jobs.frames()


def _sort_value(x: Any) -> tuple:
    # Nulls first, then numbers (the contract's values are ints); structs are compared field by field.
    if x is None:
        return (0, 0)
    if isinstance(x, dict):
        return (1, tuple(_sort_value(v) for v in x.values()))
    return (1, x)


def _payload(kind: str, df: DataFrame) -> DataFrame:
    fields, order = SHAPES[kind]
    cols = list(dict.fromkeys(fields + order))
    return df.select("run", F.lit(kind).alias("kind"), F.to_json(F.struct(*cols)).alias("row"))


def collect_anomalies(frames: dict[str, DataFrame], run: str | None = None,
                      limit: int | None = None) -> dict[str, list[dict]]:
    """Every kind -> its result list, as ``checkers.queue.queue_anomalies`` returns (Spark kinds only).

    All kinds are collected by one Spark job (a union of JSON rows), then sorted as the contract says.
    Only anomaly rows reach the driver; ``limit`` caps them per kind (None: all of them).
    """
    import json

    parts = []
    for kind in KINDS:
        df = frames[kind]
        if run is not None:
            df = df.where(F.col("run") == run)
        if limit is not None:
            df = df.limit(limit)
        parts.append(_payload(kind, df))
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p)
    rows: dict[str, list[dict]] = {kind: [] for kind in KINDS}
    for r in union.collect():
        rows[r["kind"]].append(json.loads(r["row"]))
    out: dict[str, list[dict]] = {}
    for kind in KINDS:
        fields, order = SHAPES[kind]
        items = sorted(rows[kind], key=lambda d: tuple(_sort_value(d[c]) for c in order))
        out[kind] = [{f: d[f] for f in fields} for d in items]
    return out


def count_anomalies(frames: dict[str, DataFrame]) -> DataFrame:
    """One row per (run, kind) with the number of anomalies, computed without collecting any row."""
    parts = [df.groupBy("run").agg(F.count(F.lit(1)).alias("count")).withColumn("kind", F.lit(kind))
             for kind, df in frames.items()]
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out
