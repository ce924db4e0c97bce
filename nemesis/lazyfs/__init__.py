"""lazyfs: a FUSE pass-through file system that loses unsynced data on command (fsync-loss faults).

``cache.LazyCache`` holds the model (unsynced writes per file, sync, drop, torn writes) as a plain
object; ``fs.LazyFS`` exposes it through FUSE with mfusepy; ``python -m nemesis.lazyfs`` mounts it.

Theory of operation. File data written through the mount stays in memory until the file is fsynced, as
in a page cache that a power cut would lose; readers through the mount see it (read-your-writes), the backing
directory does not. ``drop`` forgets every unsynced byte (optionally applying a random prefix of each
file's last write, a torn write). What it guarantees: fsynced data survives a drop, unsynced data does
not, and the counters in ``/.lazyfs-status`` count the bytes dropped, synced and pending. What it cannot
model: metadata (creates, renames, unlinks, directory entries) is applied to the backing directory at once,
so a drop never loses a file or a rename, only file contents and size changes.
"""
