"""A large queue check on both cores: the cycle kinds computed in a forked child while this process
computes the rest.

Only an optimisation (``check_run`` and the benchmarks use it, the checkers never need it): the kinds are
the same as computed in one process (``checkers.queue.anomalies_of(a, side)`` takes them from the side
handle), and any failure of the child falls back to computing them here (``checkers.forked``). It joins
the queue checks and the fast JSONL reader, which is why it sits beside both packages rather than in
either.
"""

from __future__ import annotations

import os

from checkers.forked import Forked
from checkers.history import jsonl
from checkers.queue.cycles import find_cycles
from checkers.queue.keys import QueueAnalysis, precommitted_reads

# Smaller histories are checked in one process: a second analysis in a forked child (``start_side``)
# costs more than it saves. History ops when the history is in memory, bytes when it is a file.
PARALLEL_MIN_OPS = 100_000
PARALLEL_MIN_BYTES = 20_000_000


def _side_kinds(a: QueueAnalysis) -> dict[str, list[dict]]:
    """The kinds a side process computes: the cycle search (the longest single check) and one small
    check that balances the two processes' work on large histories."""
    res = find_cycles(a)
    res["precommitted-read"] = precommitted_reads(a)
    return res


def _side_from_file(path: str, options: dict) -> dict[str, list[dict]]:
    """``_side_kinds`` of the history file, built from its ops one at a time: the child never holds the
    history itself, only the analysis (half the memory; on this kind of VM two processes that each touch
    gigabytes of fresh memory slow each other down far more than two that compute)."""
    try:
        a = QueueAnalysis(jsonl.iter_ops(path), options)
    except jsonl.NeedsReference:
        a = QueueAnalysis(jsonl.read_ops(path), options)
    return _side_kinds(a)


def start_side(source: list[dict] | str | os.PathLike, options: dict | None = None) -> Forked | None:
    """Start computing ``_side_kinds`` (the cycle kinds and precommitted-read) in a forked child while
    this process computes the rest (``checkers.queue.anomalies_of(a, side)``), so a large check uses both
    cores; only the child's small result crosses back (``checkers.forked``), and the kinds are the same as
    computed in one process.

    ``source``: the history file (best: call this before reading it; the child reads it too, one op at a
    time, keeping only its analysis) or the history already read (the child shares it copy-on-write,
    which costs page copies in both processes). None when not worth it: a history under
    ``PARALLEL_MIN_OPS`` ops / ``PARALLEL_MIN_BYTES`` bytes, ``options["parallel"]`` False, or the cycle
    kinds not wanted. Call it with the garbage collector paused (``checkers.queue.no_gc``), as the
    analysis itself is.
    """
    options = options or {}
    if not options.get("parallel", True) or not options.get("cycles", True):
        return None
    if isinstance(source, list):
        if len(source) < PARALLEL_MIN_OPS:
            return None
        ops = source
        side = Forked(lambda: _side_kinds(QueueAnalysis(ops, options)))
    else:
        path = os.fspath(source)
        try:
            if os.path.getsize(path) < PARALLEL_MIN_BYTES:
                return None
        except OSError:
            return None
        side = Forked(lambda: _side_from_file(path, options))
    return side if side.pid is not None else None
