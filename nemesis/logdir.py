"""Reading a node's data directory from outside: log end offsets per partition, and byte counts.

The reference implementation stores each partition in ``<log.dirs>/<topic>-<partition>/`` as
``<20-digit base offset>.log`` segments of frames ``u32 body_length | u32 crc32c(body) | body`` whose
body starts with ``i64 base_offset | i32 record_count``. The log end offset is the end of the last
complete frame whose CRC matches (the same rule the broker's recovery uses for a torn tail). For an
implementation with another layout, ``log_end_offsets`` returns nothing and only byte counts remain as
evidence.
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys

import crc32c

_PREFIX = struct.Struct(">II")
_HEAD = struct.Struct(">qi")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_SEGMENT = re.compile(r"^\d{20}\.log$")


def segment_end_offset(data: bytes) -> int | None:
    """End offset (last base offset + record count) of the valid frames in one segment's bytes."""
    pos, end = 0, None
    while pos + _PREFIX.size <= len(data):
        length, crc = _PREFIX.unpack_from(data, pos)
        body = data[pos + _PREFIX.size : pos + _PREFIX.size + length]
        if length < _HEAD.size or len(body) < length or crc32c.crc32c(body) != crc:
            break
        base, count = _HEAD.unpack_from(body, 0)
        end = base + count
        pos += _PREFIX.size + length
    return end


def log_end_offsets(data_dir: str) -> dict[str, int]:
    """``"topic-partition" -> log end offset`` for every partition directory in ``data_dir``."""
    out: dict[str, int] = {}
    try:
        entries = sorted(os.listdir(data_dir))
    except OSError:
        return out
    for name in entries:
        path = os.path.join(data_dir, name)
        if not _PARTITION_DIR.match(name) or not os.path.isdir(path):
            continue
        leo = 0
        for seg in sorted(f for f in os.listdir(path) if _SEGMENT.match(f)):
            try:
                with open(os.path.join(path, seg), "rb") as fh:
                    end = segment_end_offset(fh.read())
            except OSError:
                continue
            if end is not None:
                leo = max(leo, end)
        out[name] = leo
    return out


def data_bytes(data_dir: str) -> int:
    """Total size of every file under ``data_dir``."""
    total = 0
    for root, _, files in os.walk(data_dir):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def main(argv: list[str] | None = None) -> int:
    """``python -m nemesis.logdir DIR``: print the log end offsets and byte count of DIR as JSON
    (run inside a node's environment, where its mounts are visible)."""

    args = sys.argv[1:] if argv is None else argv
    print(json.dumps({"leo": log_end_offsets(args[0]), "bytes": data_bytes(args[0])}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
