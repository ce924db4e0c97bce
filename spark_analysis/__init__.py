"""PySpark jobs over stored histories: one run too big for memory, or thousands of runs.

Theory of operation
-------------------
The Python checkers (``checkers/``) hold a whole history in memory. That is right for ordinary runs and
wrong for two cases this package covers: a single history too large for one process's memory, and a
store of thousands of runs to be compared. Both are the same computation, every row carrying the ``run``
it belongs to, so that one run and a thousand runs are the same Spark job.

The queue checks are not restated in Spark: every kind but the cycles is a function of one key's records
plus three facts of the whole history (``checkers/queue/keys.py``), so Spark only gets each key's records
to one Python worker and runs the Python checker's own code there. The input is the key table of
``checkers.queue.rows`` (one row per record and key, typed columns, micro-ops in list columns).

The consumer-group checks are not restated either. They too judge one key at a time, given the key's
commits and reads and every rebalance event of the run (``checkers/groups/extract.py``), so ``groups``
gets each process's lines of the op table to a worker (where ``harness.history`` pairs and completes
them and the group checker's extraction makes its per-key parts), then each key's parts to a worker,
where the group checker's ``check_key`` judges them. The Python checker runs the same per-key code; both
engines assemble the result with ``checkers.groups.checker.group_result``.

Pipeline (modules in order):

1. ``session``: the one SparkSession of the process. It checks Java and the master URL first (a missing
   Java or an unreachable ``spark://`` master becomes one clear error), keeps traffic on loopback for
   local masters, turns the UI off unless asked, and keeps shuffles small.
2. Input, two ways to the same key table:

   - ``columnar``: a columnar history (``history.parquet/`` beside ``history.jsonl``, written at the end of
     every run and by ``kraftcheck export --format parquet``; ``checkers.history.parquet``) is read as it
     is: ``queue.parquet`` is the key table, ``ops.parquet`` the ops, ``nemesis.parquet`` the fault
     schedule; ``check.locate`` first checks it against its JSONL (a mismatch is an error, never a silent
     fallback).
   - ``read`` + ``extract``: otherwise the JSONL is read with ``spark.read.text`` + ``from_json`` and an
     explicit schema (never Python per line); every line gets a file-order key (split offset, row id) from
     which line numbers are derived only when needed (malformed lines are reported with file and line,
     ops without ``index`` get their position, as ``harness.history`` does); invocations are paired
     with completions by a window per process, completed by the readers' one rule (``completion``:
     ``harness.history.COMPLETED_FIELDS`` as column expressions) and unpacked into the key table with
     higher-order functions, and the one cross-key fact a key's rows need (which ``info`` ops are
     committed) is a join.

3. ``keyed``: one pass per key. A small aggregation gives each run's facts (final phase, transactions,
   rows per key); the table is shuffled once so that each (run, key) group lands whole in one partition
   (groups packed by size, largest first); ``mapInArrow`` sorts each partition by (run, key, op), rebuilds
   each key's records and runs ``checkers.queue.keys.key_anomalies`` on them. Only anomaly rows leave the
   workers. ``check`` runs it on one history (``--engine spark`` via ``engine``), with the same results as
   ``checkers.queue.queue_anomalies`` for every kind but the cycles: the differential tests hold both
   inputs to that.
4. ``groups``: the consumer-group checks over the op table (the columnar ``ops.parquet`` with the group
   fields taken out of its ``extra``, or the JSONL lines read with them), for the runs that have group
   ops: two passes, by (run, process) then by (run, key); only anomaly rows and a tally per run and task
   leave the workers. ``check`` runs its first pass while ``prepare`` has the op table at hand.
5. ``intervals`` + ``aggregate``: nemesis fault intervals per run (``harness.faults``), then anomaly
   counts (queue and group kinds) by fault mix and variant, ok/fail/info rates and latency quantiles during faults versus healthy
   periods, and time to recover after a heal, written as Parquet, CSV and ``summary.json``. The columnar
   histories of a whole store are read by one job (runs without one are read from JSONL, in the same job).

Performance: figures and what limits them are in docs/benchmarks.md (``bench/bench_spark.py`` prints them).
In local mode the driver JVM is limited to the C1 JIT compiler and adaptive execution is off
(``session``); what remains is moving the key table from the JVM to the Python workers and the Python
checks themselves.

What it guarantees: nothing collects a history on the driver; only anomaly rows, a few rows per run and
key, a group tally per run and task, the nemesis ops (through ``nemesis.parquet``, or ``applyInPandas``
one run at a time) and the final aggregated tables leave the executors. What it cannot see: the
protocol invariants over traces (so the group checker's count of coordinator moves, read from the
trace, is null here); a store aggregation also leaves out the cycle kinds (G0/G1c and their realtime
variants, which cross keys: ``check`` computes them one history at a time). Keys and values must be integers
that fit in 64 bits, as the schema says: a history with others is refused, not read as something else.
The JSONL reader coerces a non-string ``f`` to text instead of rejecting the line, and reads a number
written as a JSON string (``"7"``) where an integer is expected as that integer (``read`` and ``extract``
list their differences from the Python reader); the columnar path has neither difference. Both inputs
give the group checks their fields as raw JSON text, a null field taken as absent (``groups`` says what
that changes).
"""

from spark_analysis.errors import BadMasterURL, CorruptInput, JavaMissing, SessionConflict, SparkAnalysisError

__all__ = ["BadMasterURL", "CorruptInput", "JavaMissing", "SessionConflict", "SparkAnalysisError"]
