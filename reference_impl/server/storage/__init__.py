"""File-backed storage for the reference broker: segment logs, checkpoints, clean-shutdown marker, recovery.

Theory of operation. Each partition replica owns a directory ``<log.dirs>/<topic>-<partition>/`` holding a
``SegmentLog`` (``segment_log``): append-only segment files of CRC-framed batches (``frames``) with a sparse
offset index (``segment``), the leader-epoch checkpoint and an HWM checkpoint (``checkpoints``). The broker's
data directory also holds the clean-shutdown marker (K4), written as the very last step of a graceful
shutdown and deleted durably at start, so it only ever describes the latest shutdown.

What is durable when: the protocol core decides nothing about disks; this package follows the flush policy
(``flush.messages`` / ``flush.ms``, default: never fsync, leave it to the OS, as Kafka) and always fsyncs
checkpoint files and rolled segments. A crash of the process with the OS alive loses nothing; a power loss
(modelled by the harness's FUSE file system) loses what was not fsynced, which is exactly the B4 "lossy
unclean shutdown" the checkers reason about.

Recovery at open: each segment is scanned, the first frame that fails its CRC, is cut short or breaks
offset continuity marks a torn tail, which is truncated (with everything after it) and reported in
``SegmentLog.recovery_notes``; the offset index and epoch cache are rebuilt from what survived. There is no
epoch-based truncation at boot (B5).

The directory is a plain path and all I/O is plain POSIX calls, so it works unchanged on a FUSE mount.
"""

from reference_impl.server.storage.checkpoints import (
    consume_clean_shutdown_marker,
    write_clean_shutdown_marker,
)
from reference_impl.server.storage.segment_log import SegmentLog

__all__ = ["SegmentLog", "consume_clean_shutdown_marker", "write_clean_shutdown_marker"]
