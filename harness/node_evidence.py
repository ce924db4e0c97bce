"""What nodes leave behind, read back as evidence: their JSONL traces and listings of their data.

Each node appends protocol events to its own trace file with raw CLOCK_MONOTONIC times; ``read_trace_file``
reads one (skipping the torn last line of a node killed mid-write) and ``write_merged_trace`` rebases every
node's events onto the history's clock and writes the run's one time-ordered ``trace.jsonl``, so events and
client ops interleave. ``data_listing`` records what a node's data directory held when the run ended.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def read_trace_file(path: str | os.PathLike, node: str) -> list[dict]:
    """Parse one node's JSONL trace; lines that are not JSON objects with an integer time are skipped."""
    events = []
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return events
    with fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a node killed mid-write leaves a torn last line
            if not isinstance(event, dict) or not isinstance(event.get("time"), int):
                continue
            event.setdefault("node", node)
            event["node_name"] = node
            events.append(event)
    return events


def write_merged_trace(path: str | os.PathLike, events: list[dict], start_ns: int) -> int:
    """Rebase event times onto the run's clock, sort them stably by time and write JSONL."""
    rebased = []
    for event in events:
        event = dict(event)
        event["time"] = int(event["time"]) - start_ns
        rebased.append(event)
    rebased.sort(key=lambda e: e["time"])
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for event in rebased:
            fh.write(json.dumps(event, separators=(",", ":"), default=str) + "\n")
    os.replace(tmp, path)
    return len(rebased)


def data_listing(root: str | os.PathLike) -> str:
    """``size path`` for every file under ``root`` (relative paths, sorted), or a note when absent."""
    root = Path(root)
    if not root.is_dir():
        return f"(no data directory at {root})\n"
    lines = []
    for dirpath, _, filenames in os.walk(root):
        for name in sorted(filenames):
            full = Path(dirpath) / name
            try:
                size = full.stat().st_size
            except OSError:
                size = -1
            lines.append(f"{size:>12} {full.relative_to(root)}")
    return "\n".join(sorted(lines, key=lambda s: s[13:])) + "\n"
