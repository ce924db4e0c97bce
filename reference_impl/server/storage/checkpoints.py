"""Small durable files: leader-epoch checkpoint, HWM checkpoint, clean-shutdown marker (K4).

All are written atomically (temporary file, fsync, rename, fsync of the directory) so a crash leaves
either the old or the new content, never a torn mix. Formats follow Kafka's where Kafka has one:
the leader-epoch checkpoint is ``0`` (version), the entry count, then ``epoch start_offset`` lines; the HWM
checkpoint is ``0``, count, ``topic partition offset`` lines (Kafka's replication-offset-checkpoint). A
file that does not parse is reported as ``None``/empty (the caller logs it and rebuilds), never trusted.
"""

from __future__ import annotations

import errno
import json
import os

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


def fsync_dir(path: str) -> None:
    """fsync a directory so a rename or unlink inside it is durable.

    File systems that cannot fsync a directory (some FUSE implementations answer EINVAL / ENOSYS /
    ENOTSUP) are tolerated: there the rename is as durable as that file system makes it.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def write_atomic(path: str, text: str, fsync: bool = True) -> None:
    """Replace ``path`` with ``text`` atomically (and durably when ``fsync``)."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())
    os.replace(tmp, path)
    if fsync:
        fsync_dir(os.path.dirname(path) or ".")


def _read_entries(path: str, width: int) -> list[list[str]] | None:
    """Lines of a version-0 checkpoint file split into ``width`` fields, or None if absent or malformed."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except FileNotFoundError:
        return None
    if len(lines) < 2 or lines[0].strip() != "0":
        return None
    try:
        count = int(lines[1])
    except ValueError:
        return None
    rows = [line.split() for line in lines[2:] if line.strip()]
    if len(rows) != count or any(len(r) != width for r in rows):
        return None
    return rows


def write_epoch_checkpoint(path: str, entries: list[tuple[int, int]]) -> None:
    """Persist the leader-epoch cache: ``(epoch, start_offset)`` pairs in increasing order."""
    body = "".join(f"{e} {o}\n" for e, o in entries)
    write_atomic(path, f"0\n{len(entries)}\n{body}")


def read_epoch_checkpoint(path: str) -> list[tuple[int, int]] | None:
    """The checkpointed epoch entries, or None when the file is missing or malformed."""
    rows = _read_entries(path, 2)
    if rows is None:
        return None
    try:
        return [(int(e), int(o)) for e, o in rows]
    except ValueError:
        return None


def write_hwm_checkpoint(path: str, entries: dict[tuple[str, int], int], fsync: bool = True) -> None:
    """Persist high watermarks: ``{(topic, partition): hwm}``."""
    body = "".join(f"{t} {p} {h}\n" for (t, p), h in sorted(entries.items()))
    write_atomic(path, f"0\n{len(entries)}\n{body}", fsync=fsync)


def read_hwm_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """The checkpointed HWMs (empty when the file is missing or malformed)."""
    rows = _read_entries(path, 3) or []
    out: dict[tuple[str, int], int] = {}
    for t, p, h in rows:
        try:
            out[(t, int(p))] = int(h)
        except ValueError:
            return {}
    return out


def write_clean_shutdown_marker(log_dir: str, broker_epoch: int) -> None:
    """K4: the last step of a clean shutdown records the broker epoch, durably."""
    write_atomic(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE), json.dumps({"broker_epoch": broker_epoch}))


def consume_clean_shutdown_marker(log_dir: str, keep: bool = False) -> int:
    """K4 at start: the epoch from the marker (-1 if missing or unreadable), then delete the marker.

    Deleting it durably before the broker does anything else makes the marker describe only the latest
    shutdown ([D] under K4): a crash after this start is then seen as unclean. ``keep`` exists only for the
    ``skip-unclean-exclusion`` bug switch.
    """
    path = os.path.join(log_dir, CLEAN_SHUTDOWN_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            epoch = int(json.load(fh)["broker_epoch"])
    except FileNotFoundError:
        return -1
    except (ValueError, KeyError, TypeError):
        epoch = -1
    if not keep:
        os.unlink(path)
        fsync_dir(log_dir)
    return epoch
