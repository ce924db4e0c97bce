"""Test helper run *inside a node's environment*: write frames in the reference log format under DIR.

``write_frames.py DIR N``: ``DIR/t-0/00000000000000000000.log`` gets N one-record frames without fsync;
``DIR/synced.bin`` gets 100 bytes with fsync. Prints the bytes written.
"""

import os
import struct
import sys

import crc32c


def frame(base_offset: int, payload: bytes) -> bytes:
    """One frame: u32 length | u32 crc32c(body) | body (i64 base, i32 count, ... header, payload)."""
    body = struct.pack(">qiiqhiq", base_offset, 1, 0, -1, -1, -1, 0) + payload
    return struct.pack(">II", len(body), crc32c.crc32c(body)) + body


def main() -> None:
    """Write the frames (unsynced) and the synced file."""
    root, count = sys.argv[1], int(sys.argv[2])
    os.makedirs(os.path.join(root, "t-0"), exist_ok=True)
    data = b"".join(frame(i, b"v%06d" % i) for i in range(count))
    with open(os.path.join(root, "t-0", "00000000000000000000.log"), "wb") as fh:
        fh.write(data)
    with open(os.path.join(root, "synced.bin"), "wb") as fh:
        fh.write(b"s" * 100)
        fh.flush()
        os.fsync(fh.fileno())
    print(len(data))


if __name__ == "__main__":
    main()
