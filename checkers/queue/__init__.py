"""The queue checker: Jepsen's Kafka queue anomalies in a send/poll history, judged by a guarantee profile.

Theory of operation
-------------------
A history's client ops are paired and unpacked into one record per op (``extract``: the op completion
rule of ``harness.history.complete_op``, then the sends and reads of both value encodings), from which
per-key version orders are built (``extract.VersionOrders``). Every anomaly kind but the cycles is a
function of one key's records (``keys``; realtime-order and hwm-regression in ``realtime``), which is what
lets the Spark engine run the same code key by key on the columnar key table (``rows``). The cycle kinds
cross keys and are found on the dependency graph (``cycles``). ``anomalies`` states the exact contract
(definitions and result shapes, in its docstring) and composes the kinds; ``profiles`` decides from the
spec and the history which kinds are forbidden, allowed, known issues or expected; ``checker`` judges the
anomalies against that profile and is the checker ``check_run`` composes.

Dependencies run one way: ``extract`` at the bottom; ``realtime`` and ``cycles`` read its records;
``keys`` adds ``realtime``; ``anomalies`` composes ``keys`` and ``cycles``; ``profiles`` reads the kinds
``anomalies`` names; ``checker`` sits on top. ``rows`` (the columnar key table, beside them) needs pyarrow,
so nothing here imports it.
"""

from checkers.queue.anomalies import (
    CONTRACT_VERSION,
    CYCLE_KINDS,
    KINDS,
    SPARK_KINDS,
    anomalies_of,
    no_gc,
    queue_anomalies,
)
from checkers.queue.checker import QueueChecker, QueueFindings, find_anomalies, judge
from checkers.queue.keys import KEY_KINDS, QueueAnalysis, unreached_keys
from checkers.queue.profiles import apply_override, derive_profile

__all__ = [
    "CONTRACT_VERSION", "CYCLE_KINDS", "KEY_KINDS", "KINDS", "SPARK_KINDS", "QueueAnalysis", "QueueChecker",
    "QueueFindings", "anomalies_of", "apply_override", "derive_profile", "find_anomalies", "judge", "no_gc",
    "queue_anomalies", "unreached_keys",
]
