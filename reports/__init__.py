"""Reports: a self-contained HTML page per run (and, later, conformance matrices across runs).

Theory of operation. Reports read only files in the store (``spec.json``, ``history.jsonl``,
``results.json``), never live objects, so any stored run, also a partial one left by a killed harness,
can be rendered again at any time (``kraftcheck report STORE_DIR``). The page states the verdict and why
(checker verdicts, harness notes such as an incomplete final read, fault coverage), the op counts, the
latency of client ops over time with the intervals during which a fault was in place shaded, and every
anomaly the checkers reported next to the history ops it names. Plots are embedded as base64 PNGs, so a
report is one file that can be attached to a CI run or mailed.

What a report cannot show: anything the store does not hold. It renders the checkers' results, it does
not re-judge them: a run without a readable ``results.json`` is shown with the verdict UNKNOWN, never a
guessed one; malformed history lines are counted, not rendered.
"""
