"""Many runs at once: read a whole store and aggregate anomalies, availability, latency and recovery.

What it reads (DESIGN.md section 2): every run directory under the store root that holds a
``history.jsonl`` (the ``latest`` link is skipped); its ``spec.json`` (read defensively: ``nemesis`` as a
list or comma-separated string, ``variant``, ``acks``, ``min_isr``, each possibly missing) and
``results.json`` (its verdict in the words of ``harness.verdict``, when present). Only these small
JSON files (and the manifests of columnar histories) are read on the driver. Every history is read by
Spark, all runs at once, the run being the file's directory: a run's columnar history
(``history.parquet``, ``spark_analysis.columnar``) when it matches its ``history.jsonl`` by size (hashing
every history of a store would mean reading it all on the driver), else the JSONL (``spark.read.text``);
the Parquet files of the whole store are one read. Only aggregated tables come back to the driver
(pandas, a few rows per run).

What it computes:

- ``runs``: one row per run: test, start stamp, fault mix (sorted nemesis names joined by ``+``, or
  ``none``), variant, acks, min_isr, stored verdict, op counts (client completions ok / fail / info),
  malformed lines, and the number of anomalies of each queue kind but the cycles (``spark_analysis.keyed``,
  one pass per run and key) and of each consumer-group kind (``spark_analysis.groups``, the same: one pass
  per run and key; zero for runs without group ops), computed here from the history with today's
  definitions. The cycles are left out: their search ends on the driver, one history at a time
  (``spark_analysis.cycles``), which does not fit a pass over a whole store; ``kraftcheck analyze
  --engine spark`` computes them per run.
- ``by_mix``: per (fault mix, variant): runs, runs with any anomaly, runs per stored verdict, anomalies
  per kind.
- ``availability``: per (fault mix, variant, nemesis state, f): client ops, ok / fail / info rates, and
  latency quantiles (p50, p90, p99, max, in milliseconds) of the ok ops. An op's nemesis state is
  ``fault`` when its invocation falls inside a fault interval of its run (``harness.faults``
  defines the intervals, ``spark_analysis.intervals`` merges them), else ``healthy``.
- ``recovery``: per (fault mix, variant): heals, heals never followed by an ok op, and quantiles of the time
  to recover = from a heal's completion to the first completion of an ``ok`` client op invoked at or after
  it (ms).

Outputs under ``OUT``: ``runs.parquet``, ``by_mix.parquet``, ``availability.parquet``,
``recovery.parquet``, the same as CSV, and ``summary.json`` (by_mix, availability and recovery as records,
plus totals) for the reports.
"""

from __future__ import annotations

import json
import math
import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers.groups import GROUP_KINDS
from checkers.history.parquet import ParquetHistoryError, check_current, parquet_dir_for
from checkers.queue.keys import KEY_KINDS
from harness.faults import mix_name
from harness.verdict import Verdict
from spark_analysis import columnar
from spark_analysis.completion import completed, invocation_struct
from spark_analysis.errors import SparkAnalysisError
from spark_analysis.extract import checkpoint, key_table, records, with_committed
from spark_analysis.groups import GROUP_COLUMNS, count_rows, group_parts
from spark_analysis.intervals import fault_intervals
from spark_analysis.keyed import count_anomalies, key_pass, refuse_odd, run_facts
from spark_analysis.read import read_jsonl, with_order
from spark_analysis.session import LARGE_INPUT_BYTES

HISTORY, SPEC, RESULTS = "history.jsonl", "spec.json", "results.json"
KINDS = (*KEY_KINDS, *GROUP_KINDS)  # the anomaly kinds counted per run
QUANTILES = (0.5, 0.9, 0.99)


@dataclass(frozen=True)
class RunInfo:
    """What the driver knows of one run directory before Spark reads its history."""

    run_dir: str
    test: str
    started: str
    fault_mix: str
    variant: str
    acks: str
    min_isr: str
    verdict: str
    parquet: str | None = None  # its columnar history, when one matching its history.jsonl is there
    malformed: int = 0  # malformed lines the columnar history's manifest lists


def discover_runs(store: str | os.PathLike, limit: int | None = None) -> list[RunInfo]:
    """Every run directory (one holding ``history.jsonl``) under ``store``, sorted, ``latest`` skipped."""
    root = Path(store)
    if not root.is_dir():
        raise SparkAnalysisError(f"store {root} is not a directory")
    found: list[RunInfo] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != "latest" and not d.startswith("."))
        if HISTORY in filenames:
            found.append(run_info(Path(dirpath), root))
            dirnames[:] = []  # node directories below a run hold no histories
            if limit is not None and len(found) >= limit:
                break
    return found


def _read_json(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def fault_mix(nemesis: Any) -> str:
    """A run's fault mix (``harness.faults.mix_name``): nemesis names sorted and joined by ``+``."""
    return mix_name(nemesis)


def _text(x: Any) -> str:
    return "unknown" if x is None else (x if isinstance(x, str) else json.dumps(x))


def run_info(run_dir: Path, root: Path) -> RunInfo:
    """Read a run's spec.json and results.json defensively (missing or broken files are "unknown")."""
    spec = _read_json(run_dir / SPEC)
    results = _read_json(run_dir / RESULTS)
    rel = run_dir.relative_to(root).parts if run_dir != root else ()
    test = rel[0] if len(rel) >= 2 else _text(spec.get("test") or spec.get("name"))
    started = rel[-1] if rel else run_dir.name
    valid = results.get("valid", "missing") if (run_dir / RESULTS).exists() else "missing"
    protocol = spec.get("protocol") if isinstance(spec.get("protocol"), dict) else {}
    parquet, malformed = None, 0
    columnar_dir = parquet_dir_for(run_dir / HISTORY)
    if columnar_dir.exists():
        # Sizes only (hashing every history of a store would read it all on the driver); a directory
        # that does not match is not used, and the run's JSONL is read instead.
        try:
            manifest = check_current(columnar_dir, run_dir / HISTORY, full=False)
            parquet, malformed = str(columnar_dir.resolve()), int(manifest["malformed"]["count"])
        except ParquetHistoryError:
            pass
    return RunInfo(
        run_dir=str(run_dir.resolve()), test=test, started=started,
        fault_mix=fault_mix(spec.get("nemesis")),
        variant=_text(spec.get("variant", protocol.get("variant"))),
        acks=_text(spec.get("acks")), min_isr=_text(spec.get("min_isr", spec.get("min_insync_replicas"))),
        verdict="missing" if valid == "missing" else Verdict.of(results).word, parquet=parquet,
        malformed=malformed)


def _uri_dir(uri: str) -> str:
    """The directory of a file URI, as ``spark_analysis.read`` computes the run column."""
    import re

    return re.sub(r"/[^/]*$", "", re.sub(r"^file:(//)?", "", uri))


def client_pairs(ops: DataFrame) -> DataFrame:
    """Client invocations paired with their completions (any ``f``), as ``harness.history.pair_ops``, and
    completed by the one rule (``spark_analysis.completion``: ``harness.history.complete_op``).

    Columns: run, process, f, type (completion type; ``info`` when never completed), invoke_time,
    complete_time, latency_ns.
    """
    client = ops.where(F.col("process") != "nemesis")
    w = Window.partitionBy("run", "process").orderBy("block", "rid")
    fields = ("f", "type", "invoke_time", "complete_time")
    x = client.select("run", "process", "type", "f", "time",
                      F.lag(invocation_struct(fields)).over(w).alias("prev"),
                      F.lead(F.lit(1)).over(w).isNull().alias("is_last"))
    paired = (F.col("type") != "invoke") & (F.col("prev.type") == "invoke")
    unfinished = (F.col("type") == "invoke") & F.col("is_last")
    # ``process`` is the window's partition: the invocation's and the completion's are the same.
    return (x.where(paired | unfinished)
            .select("run", "process", *[completed(name, paired).alias(name) for name in fields])
            .withColumn("latency_ns", F.col("complete_time") - F.col("invoke_time")))


_INTERVAL_SCHEMA = T.StructType([T.StructField("run", T.StringType()), T.StructField("kind", T.StringType()),
                                 T.StructField("start", T.LongType()), T.StructField("end", T.LongType()),
                                 T.StructField("fs", T.StringType())])


def _intervals_of_run(pdf: pd.DataFrame) -> pd.DataFrame:
    """applyInPandas body: one run's nemesis ops (file order) -> its fault intervals and heal times."""
    pdf = pdf.sort_values(["block", "rid"])
    run = pdf["run"].iloc[0]
    end = int(pdf["end_of_history"].iloc[0])
    nem = [{"type": t, "f": f, "time": int(tm)} for t, f, tm in zip(pdf["type"], pdf["f"], pdf["time"], strict=True)]
    intervals, heals = fault_intervals(nem, end)
    rows = [(run, "fault", iv.start, iv.end, iv.fs) for iv in intervals]
    rows += [(run, "heal", h, None, None) for h in heals]
    return pd.DataFrame(rows, columns=["run", "kind", "start", "end", "fs"])


def nemesis_intervals(ops: DataFrame) -> DataFrame:
    """Fault intervals (kind ``fault``, [start, end)) and heal times (kind ``heal``, start) per run."""
    ends = ops.groupBy("run").agg(F.max("time").alias("end_of_history"))
    nem = (ops.where(F.col("process") == "nemesis").select("run", "block", "rid", "type", "f", "time")
           .join(ends, "run"))
    return nem.groupBy("run").applyInPandas(_intervals_of_run, _INTERVAL_SCHEMA)


def with_state(pairs: DataFrame, intervals: DataFrame) -> DataFrame:
    """Add ``state``: ``fault`` when the op was invoked inside one of its run's fault intervals."""
    faults = F.broadcast(intervals.where(F.col("kind") == "fault")
                         .select(F.col("run").alias("_run"), "start", "end"))
    cond = ((pairs["run"] == faults["_run"]) & (pairs["invoke_time"] >= faults["start"])
            & (pairs["invoke_time"] < faults["end"]))
    return (pairs.join(faults, cond, "left")
            .withColumn("state", F.when(F.col("_run").isNotNull(), "fault").otherwise("healthy"))
            .drop("_run", "start", "end"))


def recoveries(pairs: DataFrame, intervals: DataFrame) -> DataFrame:
    """Per heal: ``recovery_ns`` from the heal to the first completion of an ok op invoked at or after
    it (null when none followed). A running minimum over each run's events in time order."""
    heals = intervals.where(F.col("kind") == "heal").select(
        "run", F.col("start").alias("t"), F.lit(0).alias("k"), F.lit(None).cast("long").alias("done"))
    oks = pairs.where(F.col("type") == "ok").select(
        "run", F.col("invoke_time").alias("t"), F.lit(1).alias("k"), F.col("complete_time").alias("done"))
    w = Window.partitionBy("run").orderBy("t", "k").rowsBetween(Window.currentRow, Window.unboundedFollowing)
    return (heals.unionByName(oks).withColumn("first_ok", F.min("done").over(w))
            .where(F.col("k") == 0)
            .select("run", F.col("t").alias("heal_time"), (F.col("first_ok") - F.col("t")).alias("recovery_ns")))


def _quantile_cols(col: str, scale: float) -> list:
    q = F.percentile_approx(col, list(QUANTILES), 10000)
    return [(q[i] / scale).alias(f"p{int(p * 100)}_ms") for i, p in enumerate(QUANTILES)] + [
        (F.max(col) / scale).alias("max_ms")]


def aggregate_store(spark: SparkSession, store: str | os.PathLike, out: str | os.PathLike, *,
                    anomalies: bool = True, limit_runs: int | None = None) -> dict[str, Any]:
    """Aggregate every run of ``store`` into ``out`` (see the module docstring); return the summary."""
    runs = discover_runs(store, limit_runs)
    if not runs:
        raise SparkAnalysisError(f"no run directories (with {HISTORY}) under {store}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    columnar_runs = [r for r in runs if r.parquet is not None]
    jsonl_runs = [r for r in runs if r.parquet is None]
    # Run keys as Spark computes them (directories of file URIs), mapped to run directories on the driver.
    by_dir = {r.run_dir: r for r in runs}
    key_rows = []
    parts, tables, malformed_parts = [], [], []
    raw = None
    if jsonl_runs:
        raw = read_jsonl(spark, [str(Path(r.run_dir) / HISTORY) for r in jsonl_runs])
        uris = raw.inputFiles()
        malformed_parts.append(raw.where(F.col("bad").isNotNull()).groupBy("run")
                               .agg(F.count(F.lit(1)).alias("malformed")))
        ops_jsonl = with_order(spark, raw)
        parts.append(ops_jsonl)
    else:
        uris = []
    if columnar_runs:
        dirs = [r.parquet for r in columnar_runs]
        parquet_ops = columnar.ops(spark, dirs)
        uris += [u.rsplit("/", 1)[0] for u in parquet_ops.inputFiles()]
        parts.append(parquet_ops)
    for uri in uris:
        key = _uri_dir(uri)
        info = by_dir.get(str(Path(urllib.parse.unquote(key)).resolve()))
        if info is not None:
            key_rows.append((key, info.run_dir, info.test, info.started, info.fault_mix, info.variant,
                             info.acks, info.min_isr, info.verdict, info.malformed))
    meta_cols = ["run", "run_dir", "test", "started", "fault_mix", "variant", "acks", "min_isr", "verdict",
                 "manifest_malformed"]
    meta = F.broadcast(spark.createDataFrame(key_rows, meta_cols))

    common = ["run", "file", "block", "rid", "time", "type", "process", "f"]
    ops = parts[0].select(*common)
    group_ops = parts[0].select(*GROUP_COLUMNS)
    for extra in parts[1:]:
        ops = ops.unionByName(extra.select(*common))
        group_ops = group_ops.unionByName(extra.select(*GROUP_COLUMNS))
    pairs = client_pairs(ops)
    intervals = nemesis_intervals(ops)
    intervals.persist()
    staged = with_state(pairs, intervals).join(meta.select("run", "fault_mix", "variant"), "run")

    counts = (pairs.groupBy("run").pivot("type", ["ok", "fail", "info"]).count().na.fill(0)
              .withColumnRenamed("ok", "ops_ok").withColumnRenamed("fail", "ops_fail")
              .withColumnRenamed("info", "ops_info"))
    runs_df = meta.join(counts, "run", "left")
    if malformed_parts:
        runs_df = runs_df.join(malformed_parts[0], "run", "left")
    else:
        runs_df = runs_df.withColumn("malformed", F.lit(None).cast("long"))
    runs_df = (runs_df.withColumn("malformed", F.coalesce("malformed", "manifest_malformed").cast("long"))
               .drop("manifest_malformed").na.fill(0, ["malformed"]))
    kinds_pdf = None
    if anomalies:
        checkpoints = []
        if jsonl_runs:
            large = sum((Path(r.run_dir) / HISTORY).stat().st_size for r in jsonl_runs) >= LARGE_INPUT_BYTES
            jsonl_table = checkpoint(key_table(records(ops_jsonl)), disk_only=large)
            checkpoints.append(jsonl_table)
            tables.append(with_committed(jsonl_table).drop("odd"))
        if columnar_runs:
            tables.append(columnar.key_table(spark, [r.parquet for r in columnar_runs]))
        table = tables[0]
        for t in tables[1:]:
            table = table.unionByName(t)
        try:
            facts = run_facts(table)
            if jsonl_runs:
                refuse_odd(run_facts(checkpoints[0]), str(store))
            kinds_pdf = count_anomalies(key_pass(spark, table, facts)).toPandas()
            parts = group_parts(group_ops)
            if parts is not None:
                checkpoints.append(parts)
                kinds_pdf = pd.concat([kinds_pdf, count_rows(parts).toPandas()], ignore_index=True)
        finally:
            for t in checkpoints:
                t.unpersist()
    runs_pdf = runs_df.toPandas()
    for kind in KINDS:
        runs_pdf[kind] = 0
    if kinds_pdf is not None and len(kinds_pdf):
        wide = kinds_pdf.pivot_table(index="run", columns="kind", values="count", aggfunc="sum", fill_value=0)
        for kind in wide.columns:
            runs_pdf[kind] = runs_pdf["run"].map(wide[kind]).fillna(0).astype("int64")
    runs_pdf["anomalies"] = runs_pdf[list(KINDS)].sum(axis=1)
    runs_pdf = runs_pdf.sort_values("run_dir").reset_index(drop=True)

    avail = (staged.groupBy("fault_mix", "variant", "state", "f")
             .agg(F.count(F.lit(1)).alias("ops"),
                  F.avg((F.col("type") == "ok").cast("double")).alias("ok_rate"),
                  F.avg((F.col("type") == "fail").cast("double")).alias("fail_rate"),
                  F.avg((F.col("type") == "info").cast("double")).alias("info_rate"),
                  *_quantile_cols(F.when(F.col("type") == "ok", F.col("latency_ns")), 1e6))
             .orderBy("fault_mix", "variant", "state", "f").toPandas())
    rec = (recoveries(pairs, intervals).join(meta.select("run", "fault_mix", "variant"), "run")
           .groupBy("fault_mix", "variant")
           .agg(F.count(F.lit(1)).alias("heals"),
                F.sum(F.col("recovery_ns").isNull().cast("long")).alias("never_recovered"),
                *_quantile_cols("recovery_ns", 1e6))
           .orderBy("fault_mix", "variant").toPandas())
    intervals.unpersist()

    by_mix = _by_mix(runs_pdf)
    _write(out, "runs", runs_pdf)
    _write(out, "by_mix", by_mix)
    _write(out, "availability", avail)
    _write(out, "recovery", rec)
    summary = {
        "store": str(Path(store).resolve()), "runs": len(runs_pdf), "kinds": list(KINDS),
        "anomalies_total": int(runs_pdf["anomalies"].sum()),
        "by_mix": _records(by_mix), "availability": _records(avail), "recovery": _records(rec),
    }
    with open(out / "summary.json", "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=2)
    return summary


def _by_mix(runs_pdf: pd.DataFrame) -> pd.DataFrame:
    g = runs_pdf.groupby(["fault_mix", "variant"], sort=True)
    table = g.agg(runs=("run", "count"), runs_with_anomalies=("anomalies", lambda s: int((s > 0).sum())),
                  anomalies=("anomalies", "sum"))
    for verdict in ("valid", "invalid", "unknown", "missing"):
        table[f"verdict_{verdict}"] = g["verdict"].apply(lambda s, v=verdict: int((s == v).sum()))
    for kind in KINDS:
        table[kind] = g[kind].sum()
    return table.reset_index()


def _write(out: Path, name: str, pdf: pd.DataFrame) -> None:
    pdf.to_parquet(out / f"{name}.parquet", index=False)
    pdf.to_csv(out / f"{name}.csv", index=False)


def _records(pdf: pd.DataFrame) -> list[dict]:
    rows = json.loads(pdf.to_json(orient="records"))
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]
