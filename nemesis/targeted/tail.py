"""Following the nodes' trace files while a run goes: new complete events, read incrementally.

Each node appends one JSON object per line to ``<node_dir>/trace.jsonl`` and flushes it at once
(docs/history-schema.md). ``TraceTail`` remembers, per file, the byte offset up to which it has read and
returns only the complete lines written since; a line still being written stays for the next poll.
Lines whose text does not mention one of the ``kinds`` asked for are skipped before JSON parsing, so
following the busy ``hwm``/``leo`` stream costs little.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

TRACE_FILE = "trace.jsonl"
"""The file each node writes its trace to, in its node directory (where the reference cluster puts it)."""


class TraceTail:
    """Incremental reader of several nodes' trace files (see the module docstring)."""

    def __init__(self, paths: dict[str, str], kinds: Iterable[str]):
        self.paths = dict(paths)
        self.offsets = {node: 0 for node in self.paths}
        self.needles = tuple(f'"kind":"{k}"'.encode() for k in kinds)

    def skip_to_end(self) -> None:
        """Forget what is already written: the next poll returns only later events."""
        for node, path in self.paths.items():
            try:
                self.offsets[node] = os.path.getsize(path)
            except OSError:
                self.offsets[node] = 0

    def poll(self) -> list[dict]:
        """Events appended since the last poll (every node's, each with ``node_name``), in file order."""
        events: list[dict] = []
        for node, path in self.paths.items():
            try:
                with open(path, "rb") as fh:
                    size = os.fstat(fh.fileno()).st_size
                    if size < self.offsets[node]:  # a new file (the node dir was reset): start over
                        self.offsets[node] = 0
                    fh.seek(self.offsets[node])
                    chunk = fh.read()
            except OSError:
                continue
            end = chunk.rfind(b"\n")
            if end < 0:
                continue
            self.offsets[node] += end + 1
            for line in chunk[:end].split(b"\n"):
                if self.needles and not any(n in line for n in self.needles):
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    continue  # a torn line left by a kill -9
                if isinstance(event, dict):
                    event["node_name"] = node
                    events.append(event)
        return events
