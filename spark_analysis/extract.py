"""Extraction as Spark jobs: a JSONL history's ops -> the key table of ``checkers.queue.rows``.

The rules are those of ``checkers/queue/extract.py`` (the contract's "Extraction"); this module states
them as DataFrame operations, every grouping keyed by ``run`` too, so one job can handle many runs. It is
the JSONL path of the Spark engine: a columnar history (``checkers.history.parquet``) already holds the
key table, written by the Python extraction itself, and the differential tests hold the two to the same
anomalies.

- Pairing (``records``; a window per run and process, in file order): a completion pairs with the row just
  before it in its process when that row is an invocation with the same ``f`` (an invocation followed by
  another invocation is dropped, as the Python checker overwrites it); an invocation that is the last row
  of its process never completed and becomes an ``info`` record. Only ``send``, ``poll``, ``txn``,
  ``assign`` and ``subscribe`` records are kept. Each pair is completed by the rule every reader uses
  (``harness.history.COMPLETED_FIELDS``, stated as columns by ``spark_analysis.completion``): a record's
  ``op`` is the completion's index (the invocation's when none).
- Values are parsed from their raw JSON text by ``from_json`` with explicit schemas, once per record, into
  arrays of (key, value, offset) sends and (key, pairs) reads in micro-op order; ``key_table`` then makes
  one row per (record, key) with higher-order functions (no shuffle), and one row per key of the run for
  every ``assign``/``subscribe`` record.
- ``odd`` marks a record with a key or value that is not a 64-bit integer: the key table cannot hold it,
  and the check refuses the history (as ``checkers.queue.rows.NotColumnar`` does for the writer).
- ``committed`` (an ``info`` record one of whose sends some ok read returned) is one join: the only
  cross-key fact the per-key checks need.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_analysis.completion import completed, invocation_struct

CLIENT_FS = ("send", "poll", "txn", "assign", "subscribe")
SUBSCRIPTION_FS = ("assign", "subscribe")

_STRS = T.ArrayType(T.StringType())
_READ_MAP = T.MapType(T.StringType(), T.ArrayType(_STRS))
_INT_RE = r"^-?[0-9]+$"
_HWMS = T.ArrayType(T.StructType([T.StructField("key", T.LongType()), T.StructField("value", T.LongType()),
                                  T.StructField("bad", T.BooleanType())]))



def _int(col: Column) -> Column:
    """An integer from JSON text, or null when the text is not an integer (never an error)."""
    return F.when(col.rlike(_INT_RE), col.try_cast("long"))


def _at(arr: Column, i: int) -> Column:
    """Element ``i`` of an array, null when there is none (indexing would fail the job in ANSI mode)."""
    return F.get(arr, F.lit(i))


def _key(col: Column) -> Column:
    """A key from JSON text or an object key: decimal text (``checkers.queue.extract.norm_key``)."""
    return F.trim(col).try_cast("long")


def _bad_int(raw: Column, parsed: Column) -> Column:
    """True when ``raw`` is there but is not a 64-bit integer."""
    return raw.isNotNull() & parsed.isNull()


def checkpoint(df: DataFrame, disk_only: bool = False) -> DataFrame:
    """Materialize ``df`` and cut its lineage (an eager local checkpoint): the key table of a JSONL
    history is read by several jobs, and parsing it again for each would dominate. In memory, spilling to
    disk; straight to disk with ``disk_only`` (large inputs: a partition is serialized whole in memory
    before it spills, and two of them outgrew a 2 GB local heap at 10 M ops)."""
    from pyspark import StorageLevel

    level = StorageLevel.DISK_ONLY if disk_only else StorageLevel.MEMORY_AND_DISK
    return df.localCheckpoint(eager=True, storageLevel=level)


def records(ops: DataFrame) -> DataFrame:
    """Pair client invocations with completions (``ops`` from ``spark_analysis.read.with_order``) and
    complete them by the one rule (``spark_analysis.completion``: ``harness.history.complete_op``)."""
    client = (ops.where(F.col("process") != "nemesis")
              .withColumn("process", F.col("process").try_cast("long")))
    w = Window.partitionBy("run", "process").orderBy("block", "rid")
    fields = ("index", "f", "type", "invoke_index", "invoke_time", "complete_time", "invoke_value", "value",
              "final", "seek_to_beginning", "hwm", "ends", "rebalance_log")
    prev = F.lag(invocation_struct(fields, extra=("type", "f"))).over(w)
    is_last = F.lead(F.lit(1)).over(w).isNull()
    x = client.select("run", "process", "type", "f", "index", "time", "value", "final", "seek", "hwm", "ends",
                      "rebalance", prev.alias("prev"), is_last.alias("is_last"))
    # One pass over the window's output (a union of two filters would sort the whole history twice): a
    # row is either a completion paired with the invocation before it, or an invocation that is the
    # last row of its process (never completed: an ``info`` record). The two cases exclude each other.
    paired = (F.col("type") != "invoke") & (F.col("prev.type") == "invoke") & (F.col("prev.f") == F.col("f"))
    unfinished = (F.col("type") == "invoke") & F.col("is_last")

    def field(name: str) -> Column:
        return completed(name, paired)

    # ``process`` is the window's partition: the invocation's and the completion's are the same.
    recs = x.where(paired | unfinished).select(
        "run", field("index").alias("op"), field("invoke_index").alias("invoke_index"), "process",
        field("f").alias("f"), field("type").alias("type"), field("invoke_time").alias("invoke_time"),
        field("complete_time").alias("complete_time"), field("invoke_value").alias("ival"),
        field("value").alias("cval"), field("final").alias("final"), field("seek_to_beginning").alias("seek"),
        field("hwm").alias("hwm"), field("ends").alias("ends"), field("rebalance_log").alias("rebalance"))
    recs = recs.where(F.col("f").isin(*CLIENT_FS))
    # A final op's "ends" (the end offsets it read up to) count as high watermarks when "hwm" is absent.
    hwm = (F.when(F.col("hwm").startswith("{"), F.col("hwm"))
           .when(F.col("final") & F.col("ends").startswith("{"), F.col("ends")))
    # send/poll ops carrying a micro-op list (Jepsen's encoding) are read as txn ops.
    cval, ival = F.col("cval"), F.col("ival")
    container = cval.startswith("[") | cval.startswith("{")
    as_txn = F.col("f").isin("send", "poll") & (
        _is_mops(cval) | (~F.coalesce(container, F.lit(False)) & _is_mops(ival))
        | ((F.col("f") == "send") & _is_mops(ival)))
    ef = F.when(as_txn, F.lit("txn")).otherwise(F.col("f"))
    return recs.withColumn("hwm", hwm).drop("ends").withColumn("ef", ef)


def _is_mops(x: Column) -> Column:
    """Whether raw JSON ``x`` is a micro-op list: a list whose first element is a list starting with
    "send" or "poll" (checkers/queue/extract.py's ``_is_mops``)."""
    first = _at(F.from_json(F.when(x.startswith("[["), x), T.ArrayType(_STRS)), 0)
    return F.coalesce(_at(first, 0).isin("send", "poll"), F.lit(False))


def _send(rec_type: Column, k: Column, x: Column) -> Column:
    """(key, value, offset, bad) of one send whose payload ``x`` is ``[offset, v]`` or a bare ``v``."""
    pair = F.when(x.startswith("["), F.from_json(x, _STRS))
    is_pair = F.coalesce(F.size(pair) == 2, F.lit(False))
    # A negative offset is Kafka's "no offset" (see checkers.queue.extract._unpack_send): unknown.
    parsed = _int(_at(pair, 0))
    offset = F.when(is_pair & (rec_type != "fail") & (parsed >= 0), parsed)
    raw_value = F.when(is_pair, _at(pair, 1)).otherwise(x)
    key, value = _key(k), _int(raw_value)
    return F.struct(key.alias("key"), value.alias("value"), offset.alias("offset"),
                    (key.isNull() | value.isNull()).alias("bad"))


def _mops(recs_cval: Column, recs_ival: Column) -> Column:
    """A txn record's micro-ops: the completion's when it is a micro-op list (or empty), else the
    invocation's, each parsed as an array of raw JSON texts."""
    chosen = F.when(_is_mops(recs_cval) | (recs_cval == "[]"), recs_cval).otherwise(recs_ival)
    return F.transform(F.from_json(chosen, _STRS), lambda m: F.from_json(m, _STRS))


def _sends(recs: DataFrame) -> Column:
    """The record's sends in micro-op order: array<struct<key, value, offset, bad>>."""
    cval_list = F.from_json("cval", _STRS)
    single_val = F.when(F.size(cval_list) == 2, cval_list).otherwise(F.from_json("ival", _STRS))
    single = F.when(F.size(single_val) == 2,
                    F.array(_send(F.col("type"), _at(single_val, 0), _at(single_val, 1))))
    txn = F.transform(F.filter(_mops(F.col("cval"), F.col("ival")),
                               lambda m: (_at(m, 0) == "send") & (F.size(m) == 3)),
                      lambda m: _send(F.col("type"), _at(m, 1), _at(m, 2)))
    return F.when(F.col("ef") == "send", single).when(F.col("ef") == "txn", txn)


def _read_entries(m: Column) -> Column:
    """One poll result ``{k: [[o, v], ...]}`` as array<struct<key, pairs, bad>>: pairs that are not 2-lists
    are skipped, an offset that is not an integer is null."""
    def entry(e: Column) -> Column:
        pairs = F.filter(e["value"], lambda p: F.size(p) == 2)
        parsed = F.transform(pairs, lambda p: F.struct(_int(_at(p, 0)).alias("offset"), _int(_at(p, 1)).alias("value")))
        key = _key(e["key"])
        bad = key.isNull() | F.exists(parsed, lambda p: p["value"].isNull())
        return F.struct(key.alias("key"), F.coalesce(parsed, F.array().cast(
            T.ArrayType(T.StructType([T.StructField("offset", T.LongType()),
                                      T.StructField("value", T.LongType())])))).alias("pairs"),
                        F.coalesce(bad, F.lit(False)).alias("bad"))
    return F.transform(F.map_entries(m), entry)


def _reads(recs: DataFrame) -> Column:
    """The record's reads in micro-op order (a key may come back in several poll micro-ops)."""
    poll = _read_entries(F.from_json("cval", _READ_MAP))
    polls = F.filter(_mops(F.col("cval"), F.col("ival")), lambda m: (_at(m, 0) == "poll") & (F.size(m) == 2))
    txn = F.flatten(F.transform(polls, lambda m: _read_entries(F.from_json(_at(m, 1), _READ_MAP))))
    return F.when((F.col("ef") == "poll") & (F.col("type") != "invoke"), poll).when(F.col("ef") == "txn", txn)


def key_table(recs: DataFrame) -> DataFrame:
    """One row per (record, key) with the columns of ``checkers.queue.rows.KEY_SCHEMA`` plus ``run`` and
    ``odd`` (``committed`` still False: ``with_committed`` decides it)."""
    hwm_map = F.from_json("hwm", T.MapType(T.StringType(), T.StringType()))
    rebal = F.from_json("rebalance", T.ArrayType(T.MapType(T.StringType(), T.StringType())))
    rebal_keys = F.flatten(F.transform(rebal, lambda e: F.coalesce(
        F.transform(F.from_json(F.try_element_at(e, F.lit("keys")), _STRS), _key), F.array().cast(T.ArrayType(T.LongType())))))
    n_mops = F.size(F.from_json(F.when(F.col("ef") == "txn", F.when(
        _is_mops(F.col("cval")) | (F.col("cval") == "[]"), F.col("cval")).otherwise(F.col("ival"))), _STRS))
    base = recs.select(
        "run", "op", "invoke_index", "process", "f", "type", "invoke_time", "complete_time", "final", "seek",
        ((F.col("f") == "txn") | F.coalesce(n_mops > 1, F.lit(False))).alias("txn"),
        _sends(recs).alias("sends"), _reads(recs).alias("reads"),
        F.coalesce(F.filter(F.transform(F.map_entries(hwm_map), lambda e: F.struct(
            _key(e["key"]).alias("key"), _int(e["value"]).alias("value"),
            _bad_int(F.when(e["value"].rlike(_INT_RE), e["value"]), _int(e["value"])).alias("bad"))),
            lambda e: e["value"].isNotNull() | e["bad"]), F.array().cast(_HWMS)).alias("hwms"),
        F.coalesce(rebal_keys, F.array().cast(T.ArrayType(T.LongType()))).alias("rebalanced_keys"),
        F.when(F.col("f").isin(*SUBSCRIPTION_FS), F.coalesce(
            F.transform(F.from_json("ival", _STRS), _key), F.array().cast(T.ArrayType(T.LongType()))))
        .alias("assign"))
    null_key = F.lit(None).cast("long")
    keys = F.array_distinct(F.concat(
        F.coalesce(F.transform("sends", lambda s: s["key"]), F.array().cast(T.ArrayType(T.LongType()))),
        F.coalesce(F.transform("reads", lambda e: e["key"]), F.array().cast(T.ArrayType(T.LongType()))),
        F.transform("hwms", lambda e: e["key"])))
    odd = (F.exists(F.coalesce("sends", F.array()), lambda s: s["bad"])
           | F.exists(F.coalesce("reads", F.array()), lambda e: e["bad"])
           | F.exists("hwms", lambda e: e["bad"] | e["key"].isNull()))
    client = base.where(F.col("assign").isNull()).withColumn("odd", odd).select(
        "*", F.posexplode_outer(F.when(F.size(keys) > 0, keys)).alias("part", "key"))
    k = F.col("key")
    mine = F.filter("sends", lambda s: s["key"] == k)
    read_here = F.filter("reads", lambda e: e["key"] == k)
    pairs = F.flatten(F.transform(read_here, lambda e: e["pairs"]))
    hwm_here = F.filter("hwms", lambda e: e["key"] == k)
    rows = client.select(
        "run", "key", "op", F.coalesce("part", F.lit(0)).cast("int").alias("part"), "invoke_index", "process",
        "f", "type", "invoke_time", "complete_time", "final", "seek", "txn",
        F.lit(None).cast("boolean").alias("assigned"),
        F.coalesce(F.array_contains("rebalanced_keys", k), F.lit(False)).alias("rebalanced"),
        F.lit(False).alias("committed"),
        F.when(F.size(mine) > 0, F.transform(mine, lambda s: s["value"])).alias("send_values"),
        F.when(F.size(mine) > 0, F.transform(mine, lambda s: s["offset"])).alias("send_offsets"),
        F.when(F.size(read_here) > 0, F.transform(pairs, lambda p: p["offset"])).alias("read_offsets"),
        F.when(F.size(read_here) > 0, F.transform(pairs, lambda p: p["value"])).alias("read_values"),
        F.try_element_at(hwm_here, F.lit(-1))["value"].alias("hwm"), "odd")
    # An assign/subscribe record concerns every key of its run: one row per key the other records name.
    run_keys = rows.where(k.isNotNull()).select("run", "key").distinct()
    run_keys = run_keys.withColumn("part", (F.row_number().over(
        Window.partitionBy("run").orderBy("key")) - 1).cast("int"))
    assigns = (base.where(F.col("assign").isNotNull()).join(run_keys, "run", "left")
               .select("run", "key", "op", F.coalesce("part", F.lit(0)).cast("int").alias("part"),
                       "invoke_index", "process", "f", "type", "invoke_time", "complete_time", "final",
                       "seek", "txn",
                       F.when(k.isNotNull(), F.array_contains("assign", k)).alias("assigned"),
                       F.lit(False).alias("rebalanced"), F.lit(False).alias("committed"),
                       *[F.lit(None).cast(T.ArrayType(T.LongType())).alias(c)
                         for c in ("send_values", "send_offsets", "read_offsets", "read_values")],
                       null_key.alias("hwm"), F.lit(False).alias("odd")))
    return rows.unionByName(assigns)


def with_committed(table: DataFrame) -> DataFrame:
    """``committed`` set for the ``info`` rows of records with a send that an ok read of the same key
    returned (in any row of the record: the commitment crosses keys). The info sends are few: they are
    broadcast, and the reads are only filtered against them. Runs one job (the committed ops)."""
    sent = (table.where((F.col("type") == "info") & F.col("send_values").isNotNull())
            .select("run", "op", "key", F.explode("send_values").alias("value")))
    wanted = F.broadcast(sent.select("run", "key", "value").distinct())
    read = (table.where((F.col("type") == "ok") & F.col("read_values").isNotNull())
            .select("run", "key", F.explode("read_values").alias("value"))
            .join(wanted, ["run", "key", "value"], "left_semi").distinct())
    flagged = (sent.join(read, ["run", "key", "value"], "left_semi").select("run", "op").distinct()
               .withColumn("_c", F.lit(True)))
    # Computed now (one job, a few rows), so the table's later readers only join a broadcast table.
    flagged = flagged.localCheckpoint(eager=True)
    return (table.join(F.broadcast(flagged), ["run", "op"], "left")
            .withColumn("committed", (F.col("type") == "info") & F.coalesce("_c", F.lit(False))).drop("_c"))
