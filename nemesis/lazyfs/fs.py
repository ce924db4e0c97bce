"""The lazyfs FUSE operations: a pass-through to a backing directory whose file data stays in a
``LazyCache`` until fsync. Control through two virtual files at the mount's root:

- write ``drop`` to ``/.lazyfs-ctl`` to lose every unsynced write (``sync`` to sync everything);
- read ``/.lazyfs-status`` for JSON counters (dropped / synced / pending bytes).

Run as ``python -m nemesis.lazyfs BACKING MOUNTPOINT [--fsname NAME] [--torn]``.
"""

from __future__ import annotations

import errno
import json
import os

import mfusepy as fuse

from nemesis.lazyfs.cache import LazyCache

CTL = "/.lazyfs-ctl"
STATUS = "/.lazyfs-status"


class LazyFS(fuse.Operations):
    """Pass-through with volatile file data (see the module docstring)."""

    def __init__(self, backing: str, torn: bool = False):
        self.backing = os.path.realpath(backing)
        self.cache = LazyCache(torn=torn)

    def _real(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    def status(self) -> bytes:
        """The status document."""
        return (json.dumps({**self.cache.stats, "pending_bytes": self.cache.pending_bytes()}) + "\n").encode()

    # -- metadata ------------------------------------------------------------------------------
    def getattr(self, path, fh=None):
        """Stat a backing path, with a regular file's size as readers see it (pending writes and truncates included); the control files are fixed entries."""
        if path in (CTL, STATUS):
            size = len(self.status()) if path == STATUS else 0
            return {"st_mode": 0o100666, "st_nlink": 1, "st_size": size, "st_uid": 0, "st_gid": 0,
                    "st_atime": 0, "st_mtime": 0, "st_ctime": 0}
        real = self._real(path)
        try:
            st = os.lstat(real)
        except OSError as exc:
            raise fuse.FuseOSError(exc.errno) from exc
        out = {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_atime",
                                           "st_mtime", "st_ctime", "st_size")}
        if os.path.isfile(real):
            out["st_size"] = self.cache.size(real, st.st_size)
        return out

    def readdir(self, path, fh):
        """List the backing directory (the control files are not listed); unsynced state does not enter names."""
        return [".", "..", *os.listdir(self._real(path))]

    def mkdir(self, path, mode):
        """Create the directory in the backing tree at once (metadata is not held back)."""
        os.mkdir(self._real(path), mode)
        return 0

    def rmdir(self, path):
        """Remove the backing directory at once (metadata is not held back)."""
        os.rmdir(self._real(path))
        return 0

    def unlink(self, path):
        """Remove the backing file at once and forget its unsynced data."""
        real = self._real(path)
        os.unlink(real)
        self.cache.forget(real)
        return 0

    def rename(self, old, new):
        """Rename in the backing tree at once; the file's unsynced data moves with it."""
        os.rename(self._real(old), self._real(new))
        self.cache.rename(self._real(old), self._real(new))
        return 0

    def chmod(self, path, mode):
        """Change the backing file's mode at once; no unsynced state involved."""
        os.chmod(self._real(path), mode)
        return 0

    def chown(self, path, uid, gid):
        """Change the backing file's owner at once; no unsynced state involved."""
        os.chown(self._real(path), uid, gid)
        return 0

    def utimens(self, path, times=None):
        """Set the backing file's times at once (ignored for the control files); no unsynced state involved."""
        if path not in (CTL, STATUS):
            os.utime(self._real(path), ns=times) if times else os.utime(self._real(path))
        return 0

    def statfs(self, path):
        """File-system counters of the backing directory's file system; unsynced bytes are not counted."""
        st = os.statvfs(self.backing)
        return {k: getattr(st, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                            "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    # -- data ----------------------------------------------------------------------------------
    def create(self, path, mode, fi=None):
        """Create the (empty) backing file at once; its data will be unsynced until fsync."""
        fd = os.open(self._real(path), os.O_RDWR | os.O_CREAT, mode)
        os.close(fd)
        return 0

    def open(self, path, flags):
        """Open an existing file; ``O_TRUNC`` is buffered as an unsynced truncate to 0 (lost on drop)."""
        if path in (CTL, STATUS):
            return 0
        real = self._real(path)
        if not os.path.exists(real):
            raise fuse.FuseOSError(errno.ENOENT)
        if flags & os.O_TRUNC:
            self.cache.truncate(real, 0)
        return 0

    def read(self, path, size, offset, fh):
        """Read backing bytes overlaid with the file's unsynced writes and truncates; the status file returns the counters."""
        if path == STATUS:
            return self.status()[offset : offset + size]
        if path == CTL:
            return b""
        real = self._real(path)
        with open(real, "rb") as fh_:
            backing_size = os.fstat(fh_.fileno()).st_size
            fh_.seek(offset)
            data = fh_.read(size)
        return self.cache.read(real, offset, size, data, backing_size)

    def write(self, path, data, offset, fh):
        """Buffer the write as unsynced data (the backing file is untouched); on the control file, run ``drop`` or ``sync``."""
        if path == CTL:
            command = bytes(data).strip().decode(errors="replace")
            if command == "drop":
                self.cache.drop()
            elif command == "sync":
                self.cache.sync_all()
            else:
                raise fuse.FuseOSError(errno.EINVAL)
            return len(data)
        return self.cache.write(self._real(path), offset, bytes(data))

    def truncate(self, path, length, fh=None):
        """Buffer the truncate as an unsynced op (the backing file keeps its size until fsync)."""
        if path in (CTL, STATUS):
            return 0
        self.cache.truncate(self._real(path), length)
        return 0

    def fsync(self, path, datasync, fh):
        """Apply the file's unsynced writes and truncates to the backing file and fsync it: they survive a drop."""
        if path in (CTL, STATUS):
            return 0
        self.cache.sync(self._real(path))
        return 0

    def fsyncdir(self, path, datasync, fh):
        """Nothing to do: directory metadata was applied at once."""
        return 0  # metadata is applied at once (cache.py's documented limit)

    def flush(self, path, fh):
        """Nothing to do: close() does not sync, the file's data stays unsynced."""
        return 0  # close() is not a sync: data stays volatile, as in a page cache

    def release(self, path, fh):
        """Nothing to do: no handle state is kept; unsynced data outlives the last close."""
        return 0


def mount(backing: str, mountpoint: str, fsname: str = "kraftcheck-lazyfs", torn: bool = False) -> None:
    """Mount in the foreground until unmounted (``fusermount3 -u``)."""
    fuse.FUSE(LazyFS(backing, torn=torn), mountpoint, foreground=True, nothreads=False,
              fsname=fsname, allow_other=True, default_permissions=False)
