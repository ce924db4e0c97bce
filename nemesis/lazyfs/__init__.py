"""lazyfs: a FUSE pass-through file system that loses unsynced data on command (fsync-loss faults).

``cache.LazyCache`` holds the model (unsynced writes per file, sync, drop, torn writes) as a plain
object; ``fs.LazyFS`` exposes it through FUSE with mfusepy; ``python -m nemesis.lazyfs`` mounts it.
"""
