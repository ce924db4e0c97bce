"""Throughput cost of lazyfs (the fsync-loss FUSE file system) against a plain directory.

Prints, for each target: sequential write MB/s (64 KiB writes, no fsync: data stays in lazyfs's
memory), appends of 4 KiB each followed by fsync per second (every fsync applies the pending writes to
the backing file), and sequential read MB/s. Bounded in size and time; never asserts timings.

    python bench/bench_fuse.py [--mib 32] [--appends 300]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time


def write_seq(path: str, mib: int) -> float:
    """MB/s of writing ``mib`` MiB in 64 KiB chunks (closed, not fsynced)."""
    chunk = os.urandom(64 * 1024)
    start = time.perf_counter()
    with open(path, "wb") as fh:
        for _ in range(mib * 16):
            fh.write(chunk)
    return mib / (time.perf_counter() - start)


def read_seq(path: str) -> float:
    """MB/s of reading the file back in 64 KiB chunks."""
    size = os.path.getsize(path)
    start = time.perf_counter()
    with open(path, "rb") as fh:
        while fh.read(64 * 1024):
            pass
    return size / 2**20 / (time.perf_counter() - start)


def appends_fsync(path: str, count: int) -> float:
    """Appends of 4 KiB + fsync per second."""
    block = os.urandom(4096)
    start = time.perf_counter()
    with open(path, "ab") as fh:
        for _ in range(count):
            fh.write(block)
            fh.flush()
            os.fsync(fh.fileno())
    return count / (time.perf_counter() - start)


def measure(directory: str, mib: int, appends: int) -> dict[str, float]:
    """All three figures in ``directory``."""
    seq = os.path.join(directory, "seq.bin")
    out = {"write_MBps": write_seq(seq, mib), "read_MBps": read_seq(seq)}
    out["fsync_appends_per_s"] = appends_fsync(os.path.join(directory, "appends.bin"), appends)
    return out


def main() -> int:
    """Run the benchmark and print a small table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=32)
    parser.add_argument("--appends", type=int, default=300)
    args = parser.parse_args()
    if not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None:
        print("no FUSE on this machine (/dev/fuse, fusermount3): nothing to compare", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kraftcheck-bench-") as tmp:
        plain = os.path.join(tmp, "plain")
        backing, mnt = os.path.join(tmp, "backing"), os.path.join(tmp, "mnt")
        for d in (plain, backing, mnt):
            os.mkdir(d)
        results = {"plain": measure(plain, args.mib, args.appends)}
        proc = subprocess.Popen([sys.executable, "-m", "nemesis.lazyfs", backing, mnt, "--fsname", "kraftcheck-bench"])
        try:
            deadline = time.monotonic() + 20
            while not os.path.ismount(mnt):
                if time.monotonic() > deadline or proc.poll() is not None:
                    print("lazyfs did not mount", file=sys.stderr)
                    return 2
                time.sleep(0.05)
            results["lazyfs"] = measure(mnt, args.mib, args.appends)
        finally:
            subprocess.run(["fusermount3", "-u", mnt], check=False)
            proc.wait(10)
    print(f"{'target':8} {'write MB/s':>11} {'read MB/s':>10} {'4KiB append+fsync/s':>20}")
    for name, r in results.items():
        print(f"{name:8} {r['write_MBps']:11.1f} {r['read_MBps']:10.1f} {r['fsync_appends_per_s']:20.1f}")
    for key in ("write_MBps", "read_MBps", "fsync_appends_per_s"):
        print(f"lazyfs/plain {key}: {results['lazyfs'][key] / results['plain'][key]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
