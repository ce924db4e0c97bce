"""The store: where runs leave their files (docs/architecture.md).

Layout: ``<root>/<test-name>/<UTC-start>/`` holds ``spec.json``, ``history.jsonl``, ``trace.jsonl``,
``results.json``, ``report.html``, ``harness.log``, ``client.log``, ``clock.json`` (the history's
monotonic origin and the boot id, so node traces can be rebased after a crash) and ``nodes/<node>/``; ``<root>/latest`` is a symlink
to the newest run. The root is ``--store DIR``, else ``$KRAFTCHECK_STORE``, else ``./store``.

JSON files are written atomically (temporary file + rename), so a harness killed mid-write leaves either
the old file or the new one, never half of one; ``history.jsonl`` is streamed by ``HistoryWriter`` instead.
Every file of a run gets the same permissions: those the process's umask gives a newly created file.
A run directory is usable by ``analyze`` as soon as ``spec.json`` exists: it is written before the cluster
starts.
"""

from __future__ import annotations

import json
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

STORE_ENV = "KRAFTCHECK_STORE"
SPEC, HISTORY, TRACE, RESULTS, REPORT, NODES, CLOCK = (
    "spec.json", "history.jsonl", "trace.jsonl", "results.json", "report.html", "nodes", "clock.json")


def store_root(explicit: str | os.PathLike | None = None) -> Path:
    """The store root: the explicit argument, else ``$KRAFTCHECK_STORE``, else ``./store`` (absolute)."""
    chosen = explicit or os.environ.get(STORE_ENV) or "store"
    return Path(chosen).expanduser().resolve()


def utc_stamp(moment: datetime | None = None) -> str:
    """A sortable, filesystem-safe UTC timestamp such as ``20261122T110733.123Z``."""
    moment = moment or datetime.now(UTC)
    return moment.strftime("%Y%m%dT%H%M%S.") + f"{moment.microsecond // 1000:03d}Z"


def new_run_dir(root: str | os.PathLike, test_name: str, moment: datetime | None = None) -> Path:
    """Create and return ``<root>/<test_name>/<UTC-start>/`` (a suffix keeps simultaneous runs apart)."""
    base = Path(root) / test_name
    base.mkdir(parents=True, exist_ok=True)
    stamp = utc_stamp(moment)
    for attempt in range(1000):
        candidate = base / (stamp if attempt == 0 else f"{stamp}-{attempt}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        (candidate / NODES).mkdir()
        return candidate
    raise RuntimeError(f"cannot create a run directory under {base}")


def update_latest(root: str | os.PathLike, run_dir: str | os.PathLike) -> Path:
    """Point ``<root>/latest`` at ``run_dir`` (relative link, replaced atomically by rename)."""
    root = Path(root)
    link = root / "latest"
    target = os.path.relpath(Path(run_dir).resolve(), root.resolve())
    tmp = root / f".latest.{os.getpid()}"
    try:
        tmp.unlink()
    except FileNotFoundError:
        pass
    os.symlink(target, tmp)
    os.replace(tmp, link)
    return link


def write_json(path: str | os.PathLike, data: Any) -> Path:
    """Write ``data`` as indented JSON atomically (readers see the old or the new file, never a torn one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}"
    # Created like any other file of the run (mode 0666 less the umask); tempfile.mkstemp would make it
    # private (0600), so results.json would differ from history.jsonl beside it.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def boot_id() -> str | None:
    """This boot's id: CLOCK_MONOTONIC values are comparable only within one boot."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return None


def clock_record(start_ns: int) -> dict[str, Any]:
    """What ``clock.json`` holds: the history's monotonic origin and the boot it belongs to."""
    return {"history_start_monotonic_ns": int(start_ns), "boot_id": boot_id()}


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON file."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def resolve_run_dir(arg: str | os.PathLike) -> Path:
    """Accept a run directory, a file inside one (e.g. its spec.json) or a store root (uses ``latest``).

    Raise ``FileNotFoundError`` with a clear message when no run is there.
    """
    path = Path(arg).expanduser()
    if path.is_file():
        path = path.parent
    if (path / SPEC).is_file() or (path / HISTORY).is_file():
        return path.resolve()
    if (path / "latest" / SPEC).is_file():
        return (path / "latest").resolve()
    raise FileNotFoundError(f"{arg}: not a run directory (no {SPEC} or {HISTORY}) and no 'latest' run in it")


def list_runs(root: str | os.PathLike) -> list[Path]:
    """Every run directory under a store root, oldest first by name."""
    root = Path(root)
    if not root.is_dir():
        return []
    runs = [p.parent for p in root.glob(f"*/*/{SPEC}")]
    return sorted(runs, key=lambda p: (p.name, str(p)))


def list_histories(root: str | os.PathLike) -> list[Path]:
    """The ``history.jsonl`` of every run directory under a store root (``<test>/<start>/``), sorted;
    ``latest`` is a link to one of them and is not listed again."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob(f"*/*/{HISTORY}") if p.parent.parent.name != "latest")
