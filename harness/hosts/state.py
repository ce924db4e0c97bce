"""The state directory: what kraftcheck started, written down so ``kraftcheck clean`` can undo it.

Every host records one *run record* per run (``runs/<run_id>.json``) and one *pid file* per started node
process (``pids/<run_id>--<node>.json``). A record names its owner (the harness pid and that process's
start time from ``/proc``), so a record whose owner is gone can be told apart from a live run of another
harness on the same machine, and a recycled pid is never mistaken for the original process.

The directory is ``$KRAFTCHECK_STATE`` or ``~/.cache/kraftcheck/state``.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any


def state_dir() -> Path:
    """The state directory (created on first use)."""
    root = os.environ.get("KRAFTCHECK_STATE") or os.path.join(
        os.path.expanduser("~"), ".cache", "kraftcheck", "state"
    )
    path = Path(root)
    (path / "runs").mkdir(parents=True, exist_ok=True)
    (path / "pids").mkdir(parents=True, exist_ok=True)
    return path


def new_run_id() -> str:
    """A short unique run id usable in labels, iptables comments and file names."""
    return time.strftime("%Y%m%d%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


def proc_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (field 22 of /proc/PID/stat), None if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            data = fh.read()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    rest = data[data.rfind(")") + 2 :].split()
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def proc_state(pid: int) -> str | None:
    """The one-letter state of ``pid`` from /proc (R, S, T for stopped, Z, ...), None if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            data = fh.read()
    except OSError:
        return None
    return data[data.rfind(")") + 2 :].split()[0]


def same_process_alive(pid: int | None, start_time: int | None) -> bool:
    """Whether ``pid`` is alive and is still the process that had ``start_time`` (not a recycled pid)."""
    if not pid:
        return False
    now = proc_start_time(pid)
    if now is None:
        return False
    if proc_state(pid) == "Z":
        return False
    return start_time is None or now == start_time


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_run_record(run_id: str, backend: str, **extra: Any) -> Path:
    """Record that this process owns run ``run_id`` (updated in place on later calls)."""
    path = state_dir() / "runs" / f"{run_id}.json"
    record = _read_json(path) or {}
    record.update(extra)
    record.update(
        {
            "run_id": run_id,
            "backend": backend,
            "owner_pid": record.get("owner_pid", os.getpid()),
            "owner_start": record.get("owner_start", proc_start_time(os.getpid())),
            "created": record.get("created", time.time()),
        }
    )
    _write_json(path, record)
    return path


def update_run_record(run_id: str, **changes: Any) -> None:
    """Merge ``changes`` into an existing run record; lists under ``append_*`` keys are extended."""
    path = state_dir() / "runs" / f"{run_id}.json"
    record = _read_json(path)
    if record is None:
        return
    for key, value in changes.items():
        if key.startswith("append_"):
            name = key[len("append_") :]
            items = list(record.get(name, []))
            for item in value:
                if item not in items:
                    items.append(item)
            record[name] = items
        else:
            record[key] = value
    _write_json(path, record)


def read_run_records() -> list[dict[str, Any]]:
    """Every run record in the state directory."""
    records = []
    for path in sorted((state_dir() / "runs").glob("*.json")):
        record = _read_json(path)
        if record is not None:
            record["_path"] = str(path)
            records.append(record)
    return records


def run_record(run_id: str) -> dict[str, Any] | None:
    """The record of ``run_id`` or None."""
    return _read_json(state_dir() / "runs" / f"{run_id}.json")


def owner_alive(record: dict[str, Any]) -> bool:
    """Whether the harness that owns ``record`` still runs (a detached ``cluster up`` counts as dead)."""
    if record.get("detached"):
        return False
    return same_process_alive(record.get("owner_pid"), record.get("owner_start"))


def remove_run_record(run_id: str) -> None:
    """Forget run ``run_id`` (after everything it started is gone)."""
    try:
        (state_dir() / "runs" / f"{run_id}.json").unlink()
    except FileNotFoundError:
        pass


def pid_file(run_id: str, node: str) -> Path:
    """Path of the pid file of ``node`` in ``run_id``."""
    return state_dir() / "pids" / f"{run_id}--{node}.json"


def write_pid_file(run_id: str, node: str, pid: int, **extra: Any) -> None:
    """Record a started node process (pid, process group, start time)."""
    data = {"run_id": run_id, "node": node, "pid": pid, "start": proc_start_time(pid)}
    data.update(extra)
    _write_json(pid_file(run_id, node), data)


def remove_pid_file(run_id: str, node: str) -> None:
    """Forget a node process that is gone."""
    try:
        pid_file(run_id, node).unlink()
    except FileNotFoundError:
        pass


def read_pid_files() -> list[dict[str, Any]]:
    """Every pid file in the state directory."""
    out = []
    for path in sorted((state_dir() / "pids").glob("*.json")):
        data = _read_json(path)
        if data is not None:
            data["_path"] = str(path)
            out.append(data)
    return out
