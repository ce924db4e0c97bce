"""``python -m nemesis.lazyfs BACKING MOUNTPOINT [--fsname NAME] [--torn]``: mount lazyfs (foreground)."""

import argparse

from nemesis.lazyfs.fs import mount


def main() -> None:
    """Parse arguments and mount until unmounted."""
    parser = argparse.ArgumentParser(prog="python -m nemesis.lazyfs")
    parser.add_argument("backing")
    parser.add_argument("mountpoint")
    parser.add_argument("--fsname", default="kraftcheck-lazyfs")
    parser.add_argument("--torn", action="store_true")
    args = parser.parse_args()
    mount(args.backing, args.mountpoint, args.fsname, args.torn)


if __name__ == "__main__":
    main()
