"""Queue anomalies of a Kafka-style send/poll history: the definitions and the exact result shapes.

This docstring is the **contract** of the queue checker: the definitions and the result shapes. Every kind
but the cycles is computed key by key by ``checkers/queue/keys.py``, which the Spark engine
(``spark_analysis.keyed``) runs once per key on the same history: the two must return identical
``queue_anomalies`` results for the kinds in ``SPARK_KINDS`` (the differential tests hold them to it; what
Spark computes itself is the extraction from JSONL, ``spark_analysis.extract``). The definitions follow
Jepsen's Kafka workload (``jepsen.tests.kafka``) with the deviations marked [dev], which make every result
deterministic. Do not change a shape silently: bump ``CONTRACT_VERSION``; a change of the extraction rules
must be made in ``spark_analysis.extract`` too.

Extraction
----------
* Client ops are those whose ``process`` is an int. Each invocation is paired with the next completion of
  the same process (same ``f``) and the two are merged by the one op completion rule of every reader
  (``harness.history.complete_op``). An invocation never completed counts as type ``info``.
* An op is named by its **op index** = the history ``index`` of its completion (of the invocation when it
  never completed). Every ``op``/``ops``/``writer``/``reader``/``earlier``/``later`` field below is an op
  index. Ops are processed in op-index order.
* ``f`` is ``send``, ``poll``, ``txn``, ``assign`` or ``subscribe``; others (and nemesis ops) are ignored.
  A ``send`` or ``poll`` whose value is a micro-op list (Jepsen's own encoding, ``[["send", k, v], ...]``)
  is read as a ``txn``. A **transaction** is an op of ``f`` ``txn`` or with two or more micro-ops.
* **Sends** (micro-op order within the op): ``send`` with value ``[k, [offset, v]]`` or ``[k, v]``; the
  completion's value is used when it is a 2-list, else the invocation's. ``txn``: the completion's
  micro-op list when it is a list, else the invocation's; ``["send", k, [offset, v]]`` or
  ``["send", k, v]``. The offset is null when absent, not an integer, or the op's type is ``fail``.
* **Reads**: ``poll`` completion value ``{k: [[offset, v], ...]}`` and ``["poll", {k: [...]}]`` micro-ops
  of a ``txn`` completion. An op's read sequence for key k is the concatenation, in micro-op order, of
  its pairs for k; ``pos`` is the 0-based position in that sequence. A non-integer offset is null.
* Keys that are decimal strings (JSON object keys) become ints. Values are compared by equality; "sorted"
  lists of values are ascending (the schema makes values ints).
* ``ok read`` = a read row of an op whose type is ``ok``. ``writer(k, v)`` = the op with the smallest op
  index that sends v to k. A writer is **committed** if its type is ``ok``, or ``info`` and at least one of
  its sends (k', v') is read by some ok read of k'.

Version order (per key k)
-------------------------
* The log of k is the set of observations (k, offset, v) from (a) every read row with a non-null offset,
  of any op type (Kafka never lets a poll see unsafe data, so even info polls count); (b) every send with
  a non-null offset whose op is committed.
* ``index(k, o)`` = 0-based dense rank of offset o among the distinct offsets in k's log (gaps ignored).
* ``first(k, v)`` / ``last(k, v)`` = the smallest / largest index at which v is observed. "The index of v"
  below means ``first(k, v)`` [dev: Jepsen picks one value per offset by hash order].
* ``values_at(k, i)`` = the sorted values observed at index i. ``skipped`` lists = ``values_at`` of every
  index strictly between the two indices, concatenated in index order.

Anomaly kinds and result shapes (every kind maps to a list of dicts; lists sorted as stated)
---------------------------------------------------------------------------------------------
``inconsistent-offsets``: an offset of k observed with >= 2 distinct values.
    ``{"key", "offset", "values": sorted distinct values, "ops": sorted distinct op indices that observed
    any value at (k, offset) (read rows of any type, committed sends)}``. Sorted by (key, offset).
``duplicate``: a value observed at >= 2 distinct offsets of k.
    ``{"key", "value", "offsets": sorted distinct offsets}``. Sorted by (key, value).
``lost-write``: for key k with ok reads, ``bound`` = max index of the values read by ok reads of k (values
    with an index). Every value v in k's log with ``last(k, v) <= bound``, not read by any ok read of k,
    whose writer exists and is committed, is lost.
    ``{"key", "value", "offset": smallest offset v was observed at, "index": first(k, v),
    "max_read_index": bound, "writer", "max_read": smallest op index of an ok op that read k some value
    whose first index == bound}``. Sorted by (key, index, value).
``poll-skip`` / ``nonmonotonic-poll``: per process, ops (any completion type) with a non-empty read
    sequence of k are compared to the process's *baseline* for k: the last value of k read by its latest
    earlier ``ok`` op with a non-empty read sequence of k. delta = index(first value read now) - index(
    baseline value), both must have an index. delta > 1 -> poll-skip, delta < 1 -> nonmonotonic-poll.
    Only ok ops set the baseline. An ok or info ``assign``/``subscribe`` op of the process replaces the keys
    it follows (an info one is taken as applied, as Jepsen does): the baselines of keys not in its value are
    dropped, so a key the process acquires again is not compared with what it read before; with
    ``"seek_to_beginning": true`` (on the invoke or completion) it instead sets the baseline of every key
    in its value to the *log start*: value null, index -1, baseline op = the assign (so a consumer that
    seeks to the beginning and first reads index 2 skipped indices 0 and 1) [dev: Jepsen keeps the old
    baseline of a key still assigned].
    The **final** ops (``"final": true``) of a process are one fresh consumer reading from the beginning,
    with baselines of their own: a key's first final read is compared with the log start (baseline op =
    the final op itself, value null); a later final op of the process is compared with what its previous
    ok final op read of that key (a final reader may poll several times, as Jepsen's does); an ok/info
    final ``assign``/``subscribe`` starts them over. Final ops neither use nor change the other baselines
    [dev].
    [dev: Jepsen lets an empty read of k reset the baseline; here empty reads are ignored.]
    poll-skip: ``{"key", "process", "ops": [baseline op, op], "values": [v, v'], "delta", "skipped"}``;
    nonmonotonic-poll: the same without ``skipped``. Both sorted by (key, ops[1]).
``int-poll-skip`` / ``int-nonmonotonic-poll``: within one op's read sequence of k, each consecutive pair
    (v1 at pos-1, v2 at pos) with indices: delta = index(v2) - index(v1); > 1 skip, < 1 nonmonotonic.
    ``{"key", "op", "pos", "values": [v1, v2], "delta"}`` (+ ``"skipped"`` for int-poll-skip). Sorted by
    (key, op, pos). Keys named in the op's ``rebalance_log`` (``[{"keys": [k, ...]}, ...]`` on the
    completion: the consumer was rebalanced while the op ran) are not checked, as in Jepsen.
``nonmonotonic-send``: per process, ``ok``/``info`` ops that send to k, in op order: the first value this
    op sends to k vs the last value the process's previous such op sent to k; both with an index and
    delta < 1. An ok/info ``assign``/``subscribe`` of the process drops the keys not in its value, as for
    polls (Jepsen). ``{"key", "process", "ops": [prev, op], "values": [v, v'], "delta"}``. Sorted by
    (key, ops[1]).
``int-nonmonotonic-send`` / ``int-send-skip``: within one ``ok``/``info`` op, consecutive sends to k (pos =
    position among the op's sends to k), both with an index: delta < 1 nonmonotonic, delta > 1 skip (another
    value sits between two sends of one transaction). ``{"key", "op", "pos", "values", "delta"}`` (+
    ``"skipped"`` for int-send-skip). Sorted by (key, op, pos). [dev: Jepsen also looks at fail ops; a
    fail op's value only has an index when some read returned it, which is a G1a.]
``G1a`` (aborted read): an ok read of (k, v) whose writer's type is ``fail``.
    ``{"key", "value", "writer", "reader"}``, one per distinct (key, value, reader). Sorted by
    (key, value, reader).
``precommitted-read``: an op (any completion type) that reads (k, v) and also sends (k, v).
    ``{"key", "value", "op"}``, distinct. Sorted by (key, value, op).
``unseen``: an ``ok`` send (k, v) not read by any ok read of k completed at or before the recovery
    deadline (``options["unseen_deadline_ns"]``, history time; default: no limit). ``{"key", "value",
    "offset": its acknowledged offset or null, "writer"}``. Sorted by (key, value). Whether an unseen
    value is a violation is the profile's decision (it is one only after a final phase).
``acked-unreadable``: only when the history has a final phase (else ``[]``): an ``ok`` send (k, o, v) for
    which no ok read of a **final** op returned (o, v) for k (with o null: v at any offset).
    ``{"key", "offset", "value", "writer", "final_values": sorted distinct values final ok reads returned
    at (k, o) ([] when o is null)}``, plus ``"unreached": true`` when no ok final op reached k at all (k
    neither among its reads nor its ``ends``: e.g. a KIP-966 partition left leaderless, K10): such a
    write is not known to be lost, so the checkers judge those rows ``unknown``. Sorted by (key, offset
    (null first), value).
``realtime-order``: for each ``ok`` send B -> (k, oB, vB) with non-null offset: among ok sends A -> (k, oA,
    vA) with non-null offset and ``A.complete_time < B.invoke_time`` take the one with the largest oA
    (ties: smallest op index, then micro-op order). If oA >= oB: ``{"key", "earlier": A, "later": B,
    "offsets": [oA, oB], "values": [vA, vB]}``. Sorted by (key, later, offsets[1]).
``hwm-regression``: ok ops whose completion carries ``"hwm": {k: int}`` (the high watermark the consumer
    saw; for final ops ``"ends": {k: int}``, the end offsets the final read went up to, counts as well): for B, the ok op A with ``A.complete_time < B.invoke_time`` and the largest hwm for k (ties:
    smallest op index); if hwm_A > hwm_B: ``{"key", "earlier", "later", "hwms": [hA, hB]}``. Sorted by
    (key, later).
``G0``, ``G1c``, ``G0-realtime``, ``G1c-realtime`` (not in SPARK_KINDS): dependency cycles between ok (and
    committed info) ops with at least one send or read. ww: writer(values_at(k, i-1)) -> writer(values_at(
    k, i)); wr: writer(k, v) -> each op that ok-read (k, v); rt: A -> B when A.complete_time <
    B.invoke_time. Each strongly connected component of a graph (wr; wr+rt; ww; ww+wr; ww+rt; ww+wr+rt,
    in this order) yields the shortest cycle through its smallest op; it is reported under the class its
    edge types give (only ww: G0; ww+wr: G1c; rt without wr: G0-realtime; rt and wr: G1c-realtime), once
    per set of ops. The wr and wr+rt graphs come first so that a cycle without any ww edge - Jepsen's
    G1c without ``:ww-deps``, which no read-committed execution produces - is found even where its
    component also holds a shorter cycle with ww edges.
    ``{"cycle": [op indices, from the smallest, in edge order], "edges": [{"from", "to", "type", "key",
    "value"}, ...]}`` (rt edges have key and value null; ww edges carry the later value). Sorted by
    (len(cycle), cycle).

Final phase (convention for the harness)
----------------------------------------
The final phase (heal everything, then read everything back) is marked on the ops themselves: every op of
the final phase (the ``assign`` with ``"seek_to_beginning": true`` and the polls) carries the op field
``"final": true`` on its invocation (the completion may repeat it). The history "has a final phase" iff at
least one client op is marked final. Use fresh processes for the final readers.

``options`` (a dict or None): ``unseen_deadline_ns`` (int | None), ``cycles`` (bool, default True: compute
the four cycle kinds; when False they are ``[]``).

Contract changes (result shapes unchanged since version 1)
-----------------------------------------------------------
* v3: ``subscribe`` is read like ``assign`` (poll-skip and nonmonotonic-poll baselines); ok/info
  ``assign``/``subscribe`` ops drop the nonmonotonic-send baselines of keys not in their value; a
  process's later final ops continue from its earlier ones instead of each starting at the log start;
  keys in an op's ``rebalance_log`` are skipped by the internal poll kinds; new kind ``int-send-skip``
  (in SPARK_KINDS since the Spark engine runs this module's per-key code). On histories the harness writes (no ``subscribe``, one final poll per
  process, no ``rebalance_log``) v2 and v3 differ only where a process sent to a key, re-assigned away
  from it and back, and then sent to it at a lower index.
* v2 (11:50 UTC): poll-skip baselines: an ``assign`` with ``seek_to_beginning`` sets the *log start*
  baseline (index -1, value null) instead of dropping baselines; **final** ops are compared with the log
  start and neither use nor set baselines. ``hwm-regression`` also reads ``"ends"`` of final ops. A
  ``send``/``poll`` op whose value is a micro-op list (Jepsen's encoding) is read as a ``txn``.
"""

from __future__ import annotations

import gc

from checkers.forked import Forked
from checkers.queue.keys import KEY_KINDS, QueueAnalysis, key_anomalies

CONTRACT_VERSION = 3

KINDS = (
    "inconsistent-offsets", "duplicate", "lost-write", "poll-skip", "nonmonotonic-poll", "int-poll-skip",
    "int-nonmonotonic-poll", "nonmonotonic-send", "int-nonmonotonic-send", "int-send-skip", "G1a",
    "precommitted-read", "unseen", "acked-unreadable", "realtime-order", "hwm-regression", "G0", "G1c",
    "G0-realtime", "G1c-realtime",
)
CYCLE_KINDS = ("G0", "G1c", "G0-realtime", "G1c-realtime")
# The kinds the Spark engine computes: every kind but the cycles (checkers/queue/keys.py, one key at a time).
SPARK_KINDS = KEY_KINDS


class no_gc:
    """Pause the cyclic garbage collector: the analysis allocates millions of small acyclic objects, and
    collections triggered by them cost a third of the time on large histories. Reference counting still
    frees everything; the collector runs again on exit."""

    def __enter__(self):
        self.was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        if self.was_enabled:
            gc.enable()


def queue_anomalies(ops: list[dict], options: dict | None = None) -> dict[str, list[dict]]:
    """Every anomaly kind of the module docstring -> its list of result dicts (empty lists included)."""
    return anomalies_of(QueueAnalysis(ops, options))


def anomalies_of(a: QueueAnalysis, side: Forked | None = None) -> dict[str, list[dict]]:
    """Like ``queue_anomalies`` on an already built analysis (the checker reuses it for details).

    ``side``: a ``start_side`` handle for the same history and options; its kinds are taken from it
    (the result is the same as computed here)."""
    res: dict[str, list[dict]] = {}
    try:
        # Every kind but the cycles is defined key by key; here all keys are analysed at once.
        res.update(key_anomalies(a, without=("precommitted-read",) if side is not None else ()))
        if side is not None:
            res.update(side.result())
        elif a.options.get("cycles", True):
            from checkers.queue.cycles import find_cycles
            res.update(find_cycles(a))
    finally:
        if side is not None:
            side.cancel()
    if not a.options.get("cycles", True):
        for kind in CYCLE_KINDS:
            res[kind] = []
    return {kind: res[kind] for kind in KINDS}
