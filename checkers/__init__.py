"""Checkers: pure functions of a history (and traces) that return a verdict with the ops that prove it.

Theory of operation
-------------------
A run leaves ``history.jsonl`` (client and nemesis ops, docs/history-schema.md), ``trace.jsonl`` (protocol
events from the nodes) and ``spec.json`` (its configuration). ``checkers.analysis.check_run(spec,
history_path, trace_path, profile=None)`` reads them, runs every checker and returns the content of
``results.json``::

    {"valid": True | False | "unknown", "checkers": {name: result}, "not_checked": [str], "profile": {...},
     "malformed": [{"file", "line", "reason"}], "pairing_problems": [...]}

The history is read with orjson, in blocks of whole lines (``history/jsonl.py``: exactly
``harness.history.iter_history``'s ops and malformed-line reasons, faster: docs/benchmarks.md). Every
reader that pairs an invocation with its completion completes it by the one rule,
``harness.history.complete_op``. The linearizability engine is started on the file first and searches
in its own process while the other checkers work. When it is off, on a large history (20 MB or more) the
queue checker's cycle search runs in a child forked before the read instead (``parallel.py`` on
``forked.py``): it reads the file itself and sends back only its result, so both cores work; any failure
of the child falls back to computing in this process. These tricks (and pausing the garbage collector
while the history is alive) live in ``check_run`` alone. The history is analysed once: ``check_run``
passes the queue findings (``queue.find_anomalies``) to the queue and invariants checkers, and a checker
given none computes its own. ``not_checked`` in the results lists, in plain words, what the verdict does
not cover and why (invariants listed in ``NOT_COVERED``, none at present, and checkers left out of the
verdict, such as the invariants without a trace).

Verdicts compose by priority (``checkers.base``): false > unknown > true. A checker that raises is
``unknown`` with the error, never a crash; malformed lines are listed with their line numbers and the rest
is still checked; a history that gave no checker anything to look at is ``unknown``, never valid. The same
function serves ``kraftcheck check`` (``kraftcheck/commands/check.py``, any history file, also a Jepsen
``history.edn`` read by ``history/edn.py``), ``kraftcheck analyze STORE_DIR`` and the harness after a run.
``docs/jepsen-verdicts.md`` maps the verdict onto Jepsen's ``:valid?``.

The packages:

* ``queue/`` (the queue checker; its package docstring says how the modules divide the work): Jepsen's
  Kafka queue anomalies - lost-write, duplicate, inconsistent-offsets, poll-skip, nonmonotonic-poll,
  their internal variants, nonmonotonic-send and its internal variants (int-nonmonotonic-send,
  int-send-skip), G1a, precommitted-read, unseen with a recovery deadline, G0/G1c cycles with realtime
  variants, with assign/subscribe changing what a process tracks as in Jepsen - plus acked-unreadable
  (every ``ok`` send readable at its offset after the final phase), realtime-order and hwm-regression.
  ``queue/anomalies.py``'s docstring is the exact contract (definitions and result shapes); every kind
  but the cycles is a function of one key's records (``queue/keys.py``), which is what the Spark engine
  runs, key by key. Guarantee profiles (``queue/profiles.py``): the spec decides per anomaly whether it
  is forbidden, allowed, a known issue (Last Replica Standing under v3.5 with lossy faults) or expected;
  the history decides between Jepsen's rules (transactions, subscribe); a cycle of wr edges alone is
  always forbidden; ``--profile jepsen`` judges as Jepsen's checker does.
* ``invariants/``: the invariants I1-I26 of docs/protocol-rules.md over the trace and the history, as a
  trace state moved by each event and one rule per invariant keyed by the event kinds it reads; every
  violation names trace lines and ops; an invariant whose data is missing is ``unknown``.
* ``linear/``: a Wing-Gong-Lowe linearizability engine run as a subprocess (``python -m
  checkers.linear``), with per-key partitioning, memoisation and a time limit, models register,
  cas-register, kv and the Kafka partition log, dense or - for histories with ``txn`` ops - with the
  offset gaps transaction markers leave (a final read with end offsets is a read of the whole log, so an
  empty final read after acknowledged sends is not linearizable); an adapter runs knossos instead when
  configured.
* ``history/``: the readers (JSONL, Jepsen EDN, the columnar history) and the exports.

Conventions for the harness
---------------------------
* **Final phase**: mark every final-phase op (the ``assign`` with ``"seek_to_beginning": true`` and the
  polls) with the op field ``"final": true`` on its invocation (the completion may repeat it); use fresh
  processes for the final readers. Without final ops, ``unseen`` is ``unknown`` and acked-unreadable is
  not checked.
* Optional op fields the checkers read: ``"seek_to_beginning": true`` on ``assign``; ``"hwm": {key: int}``
  on poll completions (the high watermark the consumer saw).
* Spec keys read: ``acks``, ``min_isr``, ``variant``, ``unclean_leader_election``, ``flush_messages``,
  ``nemesis``, ``test_name``/``scenario``, ``idempotence``, ``topic``, ``unseen_deadline_ns``,
  ``linearizability`` (false skips the engine). See ``queue/profiles.py``.
* Exports (``history/export.py``, ``kraftcheck export``): EDN and Jepsen JSON in Jepsen's Kafka encoding;
  ``history/edn.py`` reads that EDN (and Jepsen's own ``history.edn``) back.
* The columnar history (``history/parquet.py``, ``queue/rows.py``; pyarrow, the optional ``spark``
  extra): ``history.parquet/`` beside ``history.jsonl``, derived from it after every run and by
  ``kraftcheck export --format parquet``: the ops losslessly, the queue records as one row per key (the
  key table the Spark engine checks), a manifest tying it to the JSONL; reproducible to the byte.
* The seeded generator of valid histories and of the mutations that break them, shared by the tests, the
  Spark differential tests and the benchmarks, is test support: ``tests/support/synth.py``.
"""
