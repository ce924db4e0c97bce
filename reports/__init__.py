"""Reports: a self-contained HTML page per run, and a whole store published as a conformance report.

Theory of operation. Reports read only files in the store (``spec.json``, ``history.jsonl``,
``trace.jsonl``, ``results.json``), never live objects, so any stored run, also a partial one left by a
killed harness, can be rendered again at any time. Nothing is judged again: verdicts, reasons, anomaly
statuses and scenario judgements are the ones stored in ``results.json``.

One run (``run_report``, its sections in ``run_sections``, computations in ``run_facts``,
``trace_timeline``, plots in ``plots``): the verdict and why, the run's facts and files, the guarantee
profile, each fault with what was done and its effect on availability, throughput and latency with the
faults shaded and labelled, the partition timeline from the trace, client errors by Kafka error code,
the linearizability counterexample and the anomalies with the ops they name. One file, plots embedded.

A store (``catalog`` -> ``site`` -> ``publish`` / ``server``): runs placed in a matrix of scenarios and
workloads by variant x fault mix x backend, each valid, invalid, unknown or an expected failure (a known
issue shown, ``known_issues``); findings across runs (``findings``); known issues explained with their
reproduction commands; the environment; ``summary.json``. ``publish`` writes it as a static site with
every run's report and files; ``server`` renders the same pages live from the store over loopback. The
cross-run tables come from the Spark aggregation, which the application layer runs and hands in
(``site.Aggregate``): reports and spark_analysis do not import each other.

What a report cannot show: anything the store does not hold (a run without ``results.json`` is
unknown, never guessed; malformed history lines are counted, not rendered; runs do not record their
machine, so the environment page describes the machine that published).
"""
