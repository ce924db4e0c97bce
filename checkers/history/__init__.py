"""History files in and out: the readers the checkers use and the exports for Jepsen's tools.

Theory of operation
-------------------
``history.jsonl`` is the record of a run (docs/history-schema.md); ``harness.history`` owns its schema,
its reference reader and the op completion rule (``complete_op``). This package holds what the checkers
add on top, each reader giving back the ops of that schema so that every checker sees the same ops
whatever the file:

* ``jsonl``: the fast JSONL reader (orjson, blocks of whole lines), with exactly the reference reader's
  ops and malformed-line reasons;
* ``edn`` (with ``edn_fast``, a reader for the EDN subset Jepsen writes): Jepsen Kafka histories in EDN,
  converted to the schema's ops, final phase recognised;
* ``load``: a run's history (JSONL or EDN, by its content) and its ``trace.jsonl``, as ``check_run``
  reads them;
* ``parquet``: the columnar history derived from the JSONL (``history.parquet/``: the ops, the queue key
  table, the nemesis ops, a manifest), reproducible to the byte; needs pyarrow (the optional ``spark``
  extra), so nothing here imports it;
* ``export``: EDN and Jepsen JSON in Jepsen's Kafka encoding (``edn`` reads the EDN back).

Where a reader pairs invocations with completions it completes them with ``complete_op``, as every other
reader does (the JSONL and columnar paths are held to the same completed ops by
tests/checkers/test_readers_agree.py).
"""

from checkers.history.edn import read_edn_history, sniff_format
from checkers.history.jsonl import NeedsReference, iter_ops, read_ops
from checkers.history.load import load_history, read_trace

__all__ = ["NeedsReference", "iter_ops", "load_history", "read_edn_history", "read_ops", "read_trace",
           "sniff_format"]
