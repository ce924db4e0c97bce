"""Extraction as Spark jobs: client ops paired into operation records, unpacked into sends and reads.

The rules are those of ``checkers/queue.py`` ("Extraction") and ``checkers/queue_extract.py``; this module
states them as DataFrame operations, every grouping keyed by ``run`` too, so one job can handle
thousands of runs at once:

- Pairing (window per run and process, in file order): a completion pairs with the row just before it in
  its process when that row is an invocation with the same ``f`` (an invocation followed by another
  invocation is dropped, as the Python checker overwrites it); an invocation that is the last row of its
  process never completed and becomes an ``info`` record. Only ``send``, ``poll``, ``txn`` and ``assign``
  records are kept. A record's ``op`` is the completion's index (the invocation's when none).
- Values are parsed from their raw JSON text by ``from_json`` with explicit schemas, once per op.
  Keys, values and offsets must be integers (DESIGN.md section 2); an offset that is not an integer, or
  the offset of a ``fail`` record, is null.

Tables (all keyed by ``run``): ``recs`` (one row per record), ``sends`` (``spos`` = position among the
record's sends, in micro-op order) and ``reads`` (``pos`` = position in the record's read sequence of the
key, the concatenation of its poll micro-ops' pairs in micro-op order).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

CLIENT_FS = ("send", "poll", "txn", "assign")

_STRS = T.ArrayType(T.StringType())
_READ_MAP = T.MapType(T.StringType(), T.ArrayType(_STRS))
_INT_RE = r"^-?[0-9]+$"


def _int(col: Column) -> Column:
    """An integer from JSON text, or null when the text is not an integer (never an error)."""
    return F.when(col.rlike(_INT_RE), col.try_cast("long"))


@dataclass
class Extracted:
    """The three extraction tables of a history (or of many runs)."""

    recs: DataFrame
    sends: DataFrame
    reads: DataFrame

    def persist(self) -> Extracted:
        """Materialize the tables for the several checks that read them (spilling to disk when large).

        Eager local checkpoints, not ``persist``: they also cut the logical plan to a leaf, so the plans
        of the checks stay small. Without that, every check re-analyzes the whole extraction, and the
        analyzer's time and memory grow with each table built on another (it ran out of heap at 20 k ops).
        """
        self.recs = checkpoint(self.recs)
        self.sends = checkpoint(sends(self.recs))
        self.reads = checkpoint(reads(self.recs))
        return self

    def unpersist(self) -> None:
        """Release what ``persist`` kept."""
        for df in (self.recs, self.sends, self.reads):
            df.unpersist()


def checkpoint(df: DataFrame) -> DataFrame:
    """Materialize ``df`` (memory, spilling to disk) and cut its lineage (an eager local checkpoint)."""
    from pyspark import StorageLevel

    return df.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)


def records(ops: DataFrame) -> DataFrame:
    """Pair client invocations with completions (``ops`` from ``spark_analysis.read.with_order``)."""
    client = (ops.where(F.col("process") != "nemesis")
              .withColumn("process", F.col("process").try_cast("long")))
    w = Window.partitionBy("run", "process").orderBy("block", "rid")
    prev = F.lag(F.struct("type", "f", "index", "time", "value", "final", "seek")).over(w)
    is_last = F.lead(F.lit(1)).over(w).isNull()
    x = client.select("run", "process", "type", "f", "index", "time", "value", "final", "seek", "hwm", "ends",
                      prev.alias("prev"), is_last.alias("is_last"))
    # One pass over the window's output (a union of two filters would sort the whole history twice): a
    # row is either a completion paired with the invocation before it, or an invocation that is the
    # last row of its process (never completed: an ``info`` record). The two cases exclude each other.
    paired = (F.col("type") != "invoke") & (F.col("prev.type") == "invoke") & (F.col("prev.f") == F.col("f"))
    unfinished = (F.col("type") == "invoke") & F.col("is_last")

    def pick(if_paired: Column, if_unfinished: Column) -> Column:
        return F.when(paired, if_paired).otherwise(if_unfinished)

    null_str = F.lit(None).cast("string")
    recs = x.where(paired | unfinished).select(
        "run", F.col("index").alias("op"), pick(F.col("prev.index"), F.col("index")).alias("invoke_index"),
        "process", "f", pick(F.col("type"), F.lit("info")).alias("type"),
        pick(F.col("prev.time"), F.col("time")).alias("invoke_time"),
        pick(F.col("time"), F.lit(None).cast("long")).alias("complete_time"),
        pick(F.col("prev.value"), F.col("value")).alias("ival"), pick(F.col("value"), null_str).alias("cval"),
        pick((F.col("prev.final") == "true") | (F.col("final") == "true"), F.col("final") == "true").alias("final"),
        pick((F.col("prev.seek") == "true") | (F.col("seek") == "true"), F.col("seek") == "true").alias("seek"),
        pick(F.col("hwm"), null_str).alias("hwm"), pick(F.col("ends"), null_str).alias("ends"))
    recs = (recs.where(F.col("f").isin(*CLIENT_FS))
            .withColumn("final", F.coalesce("final", F.lit(False)))
            .withColumn("seek", F.coalesce("seek", F.lit(False))))
    # v2: a final op's "ends" (the end offsets it read up to) count as high watermarks when "hwm" is absent.
    hwm = (F.when(F.col("hwm").startswith("{"), F.col("hwm"))
           .when(F.col("final") & F.col("ends").startswith("{"), F.col("ends")))
    # v2: send/poll ops carrying a micro-op list (Jepsen's encoding) are read as txn ops.
    cval, ival = F.col("cval"), F.col("ival")
    container = cval.startswith("[") | cval.startswith("{")
    as_txn = F.col("f").isin("send", "poll") & (
        _is_mops(cval) | (~F.coalesce(container, F.lit(False)) & _is_mops(ival))
        | ((F.col("f") == "send") & _is_mops(ival)))
    ef = F.when(as_txn, F.lit("txn")).otherwise(F.col("f"))
    return recs.withColumn("hwm", hwm).drop("ends").withColumn("ef", ef)


def _is_mops(x: Column) -> Column:
    """Whether raw JSON ``x`` is a micro-op list: a list whose first element is a list starting with
    "send" or "poll" (checkers/queue_extract.py's ``_is_mops``)."""
    first = F.from_json(F.when(x.startswith("[["), x), T.ArrayType(_STRS))[0]
    return F.coalesce(first[0].isin("send", "poll"), F.lit(False))


def _send_parts(rec_type: Column, k: Column, x: Column) -> Column:
    """(key, value, offset) of one send whose payload ``x`` is ``[offset, v]`` or a bare ``v``."""
    pair = F.when(x.startswith("["), F.from_json(x, _STRS))
    is_pair = F.coalesce(F.size(pair) == 2, F.lit(False))
    offset = F.when(is_pair & (rec_type != "fail"), _int(pair[0]))
    value = F.when(is_pair, pair[1]).otherwise(x)
    return F.struct(k.try_cast("long").alias("key"), value.try_cast("long").alias("value"),
                    offset.alias("offset"))


def sends(recs: DataFrame) -> DataFrame:
    """One row per send micro-op: run, op, process, type, invoke/complete time, spos, key, value, offset."""
    cval_list = F.from_json("cval", _STRS)
    single_val = F.when(F.size(cval_list) == 2, cval_list).otherwise(F.from_json("ival", _STRS))
    single = F.when(F.size(single_val) == 2,
                    F.array(_send_parts(F.col("type"), single_val[0], single_val[1])))
    # v2: the completion's micro-ops when it is a micro-op list (or an empty list), else the invocation's.
    mops = F.when(_is_mops(F.col("cval")) | (F.col("cval") == "[]"), cval_list).otherwise(
        F.from_json("ival", _STRS))
    parsed = F.transform(mops, lambda m: F.from_json(m, _STRS))
    send_mops = F.filter(parsed, lambda m: (m[0] == "send") & (F.size(m) == 3))
    txn = F.transform(send_mops, lambda m: _send_parts(F.col("type"), m[1], m[2]))
    arr = F.when(F.col("ef") == "send", single).when(F.col("ef") == "txn", txn)
    base = recs.where(F.col("ef").isin("send", "txn")).select(
        "run", "op", "process", "type", "invoke_time", "complete_time", arr.alias("arr"))
    return base.select("run", "op", "process", "type", "invoke_time", "complete_time",
                       F.posexplode("arr").alias("spos", "s")).select(
        "run", "op", "process", "type", "invoke_time", "complete_time", "spos",
        "s.key", "s.value", "s.offset")


def reads(recs: DataFrame) -> DataFrame:
    """One row per read pair: run, op, process, type, complete_time, final, key, pos, offset, value."""
    cols = ["run", "op", "process", "type", "complete_time", "final"]
    polls = (recs.where(F.col("ef") == "poll")
             .select(*cols, F.lit(1).alias("n_polls"), F.lit(0).alias("mpos"),
                     F.from_json("cval", _READ_MAP).alias("m")))
    cval_mops = F.when(_is_mops(F.col("cval")) | (F.col("cval") == "[]"), F.col("cval")).otherwise(F.col("ival"))
    txn_mops = F.transform(F.from_json(cval_mops, _STRS), lambda m: F.from_json(m, _STRS))
    txns = (recs.where(F.col("ef") == "txn")
            .select(*cols, F.filter(txn_mops, lambda m: (m[0] == "poll") & (F.size(m) == 2)).alias("pm"))
            .select(*cols, F.size("pm").alias("n_polls"), F.posexplode("pm").alias("mpos", "mop"))
            .select(*cols, "n_polls", "mpos", F.from_json(F.col("mop")[1], _READ_MAP).alias("m")))
    # Python skips pairs that are not 2-lists without counting them: filter before numbering.
    exploded = (polls.unionByName(txns)
                .select(*cols, "n_polls", "mpos", F.explode("m").alias("k", "pairs"))
                .select(*cols, "n_polls", "mpos", F.col("k").try_cast("long").alias("key"),
                        F.posexplode(F.filter("pairs", lambda p: F.size(p) == 2)).alias("ppos", "pair"))
                .select(*cols, "n_polls", "mpos", "key", "ppos", _int(F.col("pair")[0]).alias("offset"),
                        F.col("pair")[1].try_cast("long").alias("value")))
    # A read sequence concatenates the op's poll micro-ops in order; only txn ops with several poll
    # micro-ops need the (shuffling) window to number their rows.
    w = Window.partitionBy("run", "op", "key").orderBy("mpos", "ppos")
    single = exploded.where(F.col("n_polls") <= 1).select(*cols, "key", F.col("ppos").alias("pos"),
                                                          "offset", "value")
    multi = exploded.where(F.col("n_polls") > 1).select(
        *cols, "key", (F.row_number().over(w) - 1).alias("pos"), "offset", "value")
    return single.unionByName(multi)


def extract(ops: DataFrame) -> Extracted:
    """``recs``, ``sends`` and ``reads`` of the (ordered, valid) ops of one or more runs."""
    recs = records(ops)
    return Extracted(recs, sends(recs), reads(recs))
