"""The volatile page cache of lazyfs, as a plain object (unit-tested without mounting anything).

Per file it keeps the unsynced operations in order: writes ``("w", offset, bytes)`` and truncates
``("t", length)``. Reads overlay them on the backing file's bytes; ``sync`` applies them to the backing
file and fsyncs it; ``drop`` forgets them (what a power loss does to a page cache). With ``torn``, a drop
keeps a prefix of each file's last unsynced write (a torn write: part of it reached the disk).

Metadata (create, unlink, rename, mkdir) is applied to the backing directory at once: only file
*data* is volatile here. That is the documented limit of this model (a real disk may also lose a
create or rename not followed by an fsync of the directory).
"""

from __future__ import annotations

import os
import random
import threading

Op = tuple


class LazyCache:
    """Unsynced writes and truncates per backing path."""

    def __init__(self, torn: bool = False, seed: int = 0):
        self.pending: dict[str, list[Op]] = {}
        self.torn = torn
        self.rng = random.Random(seed)
        self.lock = threading.RLock()
        self.last_write_len: dict[str, int] = {}  # for torn writes: the last write inside a merged op
        self.stats = {"dropped_bytes": 0, "synced_bytes": 0, "drops": 0, "syncs": 0, "torn_bytes_kept": 0}

    def write(self, path: str, offset: int, data: bytes) -> int:
        """Buffer a write; return its length. A write that continues the previous one (an append, as
        logs do) extends it in place, so reads stay cheap however many appends are pending."""
        with self.lock:
            ops = self.pending.setdefault(path, [])
            if ops and ops[-1][0] == "w" and ops[-1][1] + len(ops[-1][2]) == offset:
                ops[-1][2].extend(data)
                self.last_write_len[path] = len(data)
            else:
                ops.append(("w", offset, bytearray(data)))
                self.last_write_len[path] = len(data)
        return len(data)

    def truncate(self, path: str, length: int) -> None:
        """Buffer a truncate."""
        with self.lock:
            self.pending.setdefault(path, []).append(("t", length))

    def size(self, path: str, backing_size: int) -> int:
        """The file size as readers see it."""
        with self.lock:
            size = backing_size
            for op in self.pending.get(path, []):
                size = max(size, op[1] + len(op[2])) if op[0] == "w" else op[1]
            return size

    def read(self, path: str, offset: int, size: int, backing: bytes, backing_size: int) -> bytes:
        """Bytes ``[offset, offset+size)``: ``backing`` (read from the backing file there) overlaid with
        the pending ops, cut at the visible size."""
        with self.lock:
            buf = bytearray(backing[:size].ljust(size, b"\0"))
            current = backing_size
            for op in self.pending.get(path, []):
                if op[0] == "w":
                    _, off, data = op
                    start, end = max(off, offset), min(off + len(data), offset + size)
                    if start < end:
                        buf[start - offset : end - offset] = data[start - off : end - off]
                    current = max(current, off + len(data))
                else:
                    length = op[1]
                    if length < offset + size:
                        cut = max(0, length - offset)
                        buf[cut:] = b"\0" * (size - cut)
                    current = length
            visible = max(0, min(size, current - offset))
            return bytes(buf[:visible])

    def pending_bytes(self) -> int:
        """Bytes written but not synced."""
        with self.lock:
            return sum(len(op[2]) for ops in self.pending.values() for op in ops if op[0] == "w")

    def sync(self, path: str, fd: int | None = None) -> int:
        """Apply ``path``'s pending ops to the backing file and fsync it; return the bytes written."""
        with self.lock:
            ops = self.pending.pop(path, [])
            if not ops:
                if fd is not None:
                    os.fsync(fd)
                return 0
            own = fd is None
            if own:
                fd = os.open(path, os.O_WRONLY)
            written = 0
            try:
                for op in ops:
                    if op[0] == "w":
                        os.pwrite(fd, bytes(op[2]), op[1])
                        written += len(op[2])
                    else:
                        os.ftruncate(fd, op[1])
                os.fsync(fd)
            finally:
                if own:
                    os.close(fd)
            self.stats["synced_bytes"] += written
            self.stats["syncs"] += 1
            return written

    def sync_all(self) -> int:
        """Sync every file with pending ops (a clean shutdown of the disk)."""
        with self.lock:
            return sum(self.sync(p) for p in list(self.pending) if os.path.exists(p))

    def drop(self) -> int:
        """Forget every unsynced op (power loss); return the bytes dropped. With ``torn``, a random
        prefix of each file's last write is applied first (and not counted as dropped)."""
        with self.lock:
            dropped = 0
            for path, ops in self.pending.items():
                if self.torn and ops and ops[-1][0] == "w" and os.path.exists(path):
                    _, off, merged = ops[-1]
                    # The torn write is the last write() call, which may be the tail of a merged op.
                    last = min(self.last_write_len.get(path, len(merged)), len(merged))
                    data, off = bytes(merged[len(merged) - last :]), off + len(merged) - last
                    keep = self.rng.randrange(len(data)) if data else 0
                    fd = os.open(path, os.O_WRONLY)
                    try:
                        os.pwrite(fd, data[:keep], off)
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                    self.stats["torn_bytes_kept"] += keep
                    dropped -= keep
                dropped += sum(len(op[2]) for op in ops if op[0] == "w")
            self.pending.clear()
            self.last_write_len.clear()
            self.stats["dropped_bytes"] += dropped
            self.stats["drops"] += 1
            return dropped

    def forget(self, path: str) -> None:
        """A file was unlinked: its pending data goes with it."""
        with self.lock:
            self.pending.pop(path, None)

    def rename(self, old: str, new: str) -> None:
        """A file was renamed: its pending data follows it."""
        with self.lock:
            if old in self.pending:
                self.pending[new] = self.pending.pop(old)
