"""One log segment: a ``.log`` file of frames plus a sparse ``.index`` (offset -> file position).

Named as Kafka names them: ``<20-digit base offset>.log`` / ``.index``. The index holds an entry
``u32 relative_offset | u32 position`` each time at least ``index_interval_bytes`` were appended since the
last entry (Kafka's ``log.index.interval.bytes``), so a lookup is a binary search in the index followed by
a short forward scan of frames. The index is derived data: recovery rebuilds it from the ``.log`` file.
"""

from __future__ import annotations

import bisect
import os
import struct

from reference_impl.server.storage.frames import (
    PREFIX,
    PREFIX_SIZE,
    CorruptFrame,
    FrameHeader,
    decode_frame,
    encode_frame,
)

INDEX_ENTRY = struct.Struct(">II")


def segment_name(base_offset: int, suffix: str) -> str:
    """Kafka's file name for a segment file: the base offset zero-padded to 20 digits."""
    return f"{base_offset:020d}{suffix}"


class Segment:
    """A ``.log`` file with its in-memory sparse index; appends go through one O_APPEND descriptor."""

    def __init__(self, directory: str, base_offset: int, index_interval_bytes: int = 4096) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = os.path.join(directory, segment_name(base_offset, ".log"))
        self.index_path = os.path.join(directory, segment_name(base_offset, ".index"))
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.next_offset = base_offset
        self.index_offsets: list[int] = []
        self.index_positions: list[int] = []
        self._bytes_since_index = 0

    # -- recovery ------------------------------------------------------------------------------------
    def recover(self, expected_base: int) -> tuple[list[FrameHeader], str | None]:
        """Scan every frame, verifying CRCs and offset continuity; truncate a torn or corrupt tail.

        Returns the valid frame headers in order and a description of what was cut (None if nothing).
        Rebuilds and rewrites the index.
        """
        data = self._read_all()
        headers: list[FrameHeader] = []
        positions: list[int] = []
        pos, expected, problem = 0, expected_base, None
        while pos < len(data):
            try:
                header, _payload, end = decode_frame(data, pos)
            except CorruptFrame as exc:
                problem = str(exc)
                break
            if header.base_offset != expected:
                problem = f"offset gap at {pos}: expected {expected}, found {header.base_offset}"
                break
            headers.append(header)
            positions.append(pos)
            expected, pos = header.next_offset, end
        cut = None
        if pos < len(data):
            cut = f"{self.log_path}: truncated {len(data) - pos} bytes at position {pos} ({problem})"
            os.ftruncate(self._fd, pos)
            os.fsync(self._fd)
        self.size = pos
        self.next_offset = expected
        self._rebuild_index(headers, positions)
        return headers, cut

    def _read_all(self) -> bytes:
        size = os.fstat(self._fd).st_size
        return os.pread(self._fd, size, 0) if size else b""

    def _rebuild_index(self, headers: list[FrameHeader], positions: list[int]) -> None:
        self.index_offsets, self.index_positions = [], []
        self._bytes_since_index = 0
        last = 0
        for i, (h, p) in enumerate(zip(headers, positions, strict=True)):
            if i == 0 or p - last >= self.index_interval_bytes:
                self.index_offsets.append(h.base_offset)
                self.index_positions.append(p)
                last = p
        if positions:
            self._bytes_since_index = self.size - last
        self.write_index()

    def write_index(self) -> None:
        """Rewrite the ``.index`` file from memory (not fsynced: it is rebuilt on recovery)."""
        with open(self.index_path, "wb") as fh:
            for off, pos in zip(self.index_offsets, self.index_positions, strict=True):
                fh.write(INDEX_ENTRY.pack(off - self.base_offset, pos))

    def load_index(self) -> list[tuple[int, int]]:
        """The entries of the ``.index`` file as ``(absolute offset, position)`` (for tests and tools)."""
        try:
            with open(self.index_path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return []
        return [(self.base_offset + r, p) for r, p in INDEX_ENTRY.iter_unpack(raw[: len(raw) // 8 * 8])]

    # -- append / read -------------------------------------------------------------------------------
    def append(self, header: FrameHeader, payload: bytes) -> int:
        """Append one frame; returns its size in bytes. Adds an index entry per ``index_interval_bytes``."""
        frame = encode_frame(header, payload)
        position = self.size
        if not self.index_offsets or self._bytes_since_index >= self.index_interval_bytes:
            self.index_offsets.append(header.base_offset)
            self.index_positions.append(position)
            with open(self.index_path, "ab") as fh:
                fh.write(INDEX_ENTRY.pack(header.base_offset - self.base_offset, position))
            self._bytes_since_index = 0
        written = os.write(self._fd, frame)
        if written != len(frame):
            raise OSError(f"short write to {self.log_path}: {written} of {len(frame)}")
        self.size += len(frame)
        self._bytes_since_index += len(frame)
        self.next_offset = header.next_offset
        return len(frame)

    def lookup(self, offset: int) -> int:
        """The file position to start scanning from for ``offset`` (largest index entry <= offset)."""
        i = bisect.bisect_right(self.index_offsets, offset) - 1
        return self.index_positions[i] if i >= 0 else 0

    def scan_from(self, offset: int, max_bytes: int) -> list[tuple[FrameHeader, bytes, int]]:
        """Frames from the one containing ``offset`` on, up to about ``max_bytes`` (at least one frame).

        Returns ``(header, payload, position)`` triples.
        """
        pos = self.lookup(offset)
        out: list[tuple[FrameHeader, bytes, int]] = []
        total = 0
        while pos < self.size:
            prefix = os.pread(self._fd, PREFIX_SIZE, pos)
            if len(prefix) < PREFIX_SIZE:
                break
            length, _crc = PREFIX.unpack(prefix)
            frame = os.pread(self._fd, PREFIX_SIZE + length, pos)
            header, payload, end = decode_frame(frame, 0)
            if header.next_offset > offset:
                if out and total + len(payload) > max_bytes:
                    break
                out.append((header, payload, pos))
                total += len(payload)
            pos += end
        return out

    def position_of(self, offset: int) -> int | None:
        """The position of the frame whose base offset is exactly ``offset``, or None."""
        pos = self.lookup(offset)
        while pos < self.size:
            prefix = os.pread(self._fd, PREFIX_SIZE, pos)
            length, _crc = PREFIX.unpack(prefix)
            header, _payload, end = decode_frame(os.pread(self._fd, PREFIX_SIZE + length, pos), 0)
            if header.base_offset == offset:
                return pos
            if header.base_offset > offset:
                return None
            pos += end
        return None

    def truncate_at(self, position: int, new_next_offset: int) -> None:
        """Cut the file at ``position`` (a frame boundary) and drop index entries past it."""
        os.ftruncate(self._fd, position)
        self.size = position
        self.next_offset = new_next_offset
        keep = bisect.bisect_left(self.index_positions, position)
        del self.index_offsets[keep:], self.index_positions[keep:]
        self._bytes_since_index = position - (self.index_positions[-1] if self.index_positions else 0)
        self.write_index()

    # -- durability / lifecycle ----------------------------------------------------------------------
    def flush(self) -> None:
        """fsync the log file (the index is derived and rebuilt on recovery)."""
        os.fsync(self._fd)

    def close(self) -> None:
        """Close the descriptor."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        """Close and remove both files."""
        self.close()
        for path in (self.log_path, self.index_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
