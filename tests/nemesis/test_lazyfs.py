"""lazyfs: the cache model without mounting, and one real mount (jepsen) losing unsynced data."""

import os
import shutil
import subprocess
import sys
import time

import pytest

from nemesis.lazyfs.cache import LazyCache


def _read(cache, path):
    data = open(path, "rb").read()
    size = cache.size(path, len(data))
    return cache.read(path, 0, size, data, len(data))


def test_unsynced_writes_are_visible_then_dropped(tmp_path):
    path = str(tmp_path / "f")
    open(path, "wb").write(b"base-data")
    cache = LazyCache()
    cache.write(path, 4, b"XXXXXXXX")
    assert _read(cache, path) == b"baseXXXXXXXX"
    cache.truncate(path, 6)
    assert _read(cache, path) == b"baseXX"
    assert cache.drop() == 8
    assert _read(cache, path) == b"base-data" and cache.stats["dropped_bytes"] == 8


def test_sync_makes_writes_durable(tmp_path):
    path = str(tmp_path / "f")
    open(path, "wb").close()
    cache = LazyCache()
    cache.write(path, 0, b"hello")
    assert open(path, "rb").read() == b""  # not on the backing file before fsync
    assert cache.sync(path) == 5
    cache.write(path, 5, b" world")
    assert cache.drop() == 6
    assert open(path, "rb").read() == b"hello"


def test_torn_drop_keeps_a_prefix_of_the_last_write(tmp_path):
    path = str(tmp_path / "f")
    open(path, "wb").close()
    cache = LazyCache(torn=True, seed=3)
    cache.write(path, 0, b"0123456789")
    dropped = cache.drop()
    kept = open(path, "rb").read()
    assert b"0123456789".startswith(kept) and dropped == 10 - len(kept)


@pytest.mark.jepsen
@pytest.mark.skipif(shutil.which("fusermount3") is None or not os.path.exists("/dev/fuse"), reason="no FUSE")
def test_mounted_write_without_fsync_is_lost_with_fsync_kept(tmp_path):
    backing, mnt = tmp_path / "backing", tmp_path / "mnt"
    backing.mkdir()
    mnt.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "nemesis.lazyfs", str(backing), str(mnt),
                             "--fsname", "kraftcheck-test"])
    try:
        deadline = time.monotonic() + 10
        while not os.path.ismount(mnt) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.path.ismount(mnt)
        with open(mnt / "lost", "wb") as fh:
            fh.write(b"x" * 1000)
        with open(mnt / "kept", "wb") as fh:
            fh.write(b"y" * 100)
            fh.flush()
            os.fsync(fh.fileno())
        assert (mnt / "lost").read_bytes() == b"x" * 1000
        (mnt / ".lazyfs-ctl").write_text("drop")
        assert (mnt / "lost").read_bytes() == b""
        assert (mnt / "kept").read_bytes() == b"y" * 100
        assert '"dropped_bytes": 1000' in (mnt / ".lazyfs-status").read_text()
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], check=False)
        proc.wait(10)


def test_appends_merge_and_torn_drop_only_tears_the_last_write(tmp_path):
    path = str(tmp_path / "f")
    open(path, "wb").close()
    cache = LazyCache(torn=True, seed=5)
    for i in range(100):
        cache.write(path, i * 4, b"%04d" % i)
    assert len(cache.pending[path]) == 1  # sequential appends are one op
    assert _read(cache, path) == b"".join(b"%04d" % i for i in range(100))
    cache.sync(path)
    cache.write(path, 400, b"aaaa")
    cache.write(path, 404, b"bbbbbbbb")
    dropped = cache.drop()
    kept = open(path, "rb").read()
    # The earlier appends were synced; of the unsynced ones, "aaaa" is lost whole and a prefix of the
    # last write ("bbbbbbbb") may land at its own position (a torn write) - never in "aaaa"'s place.
    assert kept[:400] == b"".join(b"%04d" % i for i in range(100))
    tail = kept[400:]
    assert tail == b"" or (tail[:4] == b"\0\0\0\0" and b"bbbbbbbb".startswith(tail[4:]))
    assert dropped == 12 - len(tail[4:])
