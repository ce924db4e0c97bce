"""Remove everything kraftcheck started, also after the harness itself was killed (``kraftcheck clean``).

What is found, and how (each kind is tagged when it is created, so nothing else is ever touched):
- node processes (local backend): pid files in the state directory; a pid is signalled only while its
  start time still matches the one recorded (a recycled pid is left alone); the process group is
  continued (if paused) and killed;
- iptables rules: the filter table's rules whose comment is ``kraftcheck-<run id>``;
- FUSE mounts: ``/proc/mounts`` entries whose source is ``kraftcheck-<run id>`` (the lazyfs fsname) or
  that lie inside a recorded node directory; unmounted lazily (``fusermount3 -uz``, then ``umount -l``);
- faketime offset files and data directories: inside the recorded node directories, which are removed;
- containers and networks: Docker objects labelled ``kraftcheck=1``, grouped by ``kraftcheck.run``.

By default only runs recorded in this state directory whose owning harness process is gone (crashed,
killed, or a detached ``cluster up``) are cleaned, so that ``clean`` never breaks a run in progress on
the same machine, nor a run recorded in another state directory (tests use private ones).
``include_live=True`` (``kraftcheck clean --all``) removes everything tagged kraftcheck, recorded or
not.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from typing import Any

import docker

from harness.hosts import state

TAG_RE = re.compile(r"kraftcheck-([0-9]{14}-[0-9a-f]{6})")


class _Targets:
    """Which run ids may be cleaned: the dead recorded ones, or everything with ``include_live``."""

    def __init__(self, include_live: bool):
        self.everything = include_live
        records = state.read_run_records()
        self.dead = {r["run_id"] for r in records if include_live or not state.owner_alive(r)}
        self.live = {r["run_id"] for r in records} - self.dead

    def __contains__(self, run_id: object) -> bool:
        return self.everything or run_id in self.dead


def kill_processes(live: set[str]) -> list[dict]:
    """Kill node processes from this state directory's pid files of runs not in ``live``."""
    killed = []
    for entry in state.read_pid_files():
        if entry.get("run_id") in live:
            continue
        pid, start = entry.get("pid"), entry.get("start")
        if state.same_process_alive(pid, start):
            pgid = entry.get("pgid") or pid
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.killpg(pgid, sig)
                except (ProcessLookupError, PermissionError):
                    try:
                        os.kill(pid, sig)
                    except (ProcessLookupError, PermissionError):
                        pass
            killed.append({"run_id": entry.get("run_id"), "node": entry.get("node"), "pid": pid})
        try:
            os.unlink(entry["_path"])
        except OSError:
            pass
    return killed


def remove_iptables_rules(targets) -> list[str]:
    """Delete host iptables rules tagged by a run in ``targets``; return the deleted rule specs."""
    if shutil.which("iptables") is None or os.geteuid() != 0:
        return []
    listing = subprocess.run(["iptables", "-w", "-S"], capture_output=True, text=True, check=False)
    removed = []
    for line in listing.stdout.splitlines():
        match = TAG_RE.search(line)
        if not line.startswith("-A ") or not match or match.group(1) not in targets:
            continue
        args = [a.strip('"') for a in line.split()[1:]]
        done = subprocess.run(["iptables", "-w", "-D", *args], capture_output=True, text=True, check=False)
        if done.returncode == 0:
            removed.append(line)
    return removed


def kraftcheck_mounts() -> list[tuple[str, str]]:
    """(source, mount point) of every FUSE mount that kraftcheck's lazyfs made."""
    out = []
    try:
        with open("/proc/mounts", encoding="utf-8") as fh:
            for line in fh:
                fields = line.split()
                if len(fields) >= 3 and fields[0].startswith("kraftcheck-") and fields[2].startswith("fuse"):
                    out.append((fields[0], fields[1].replace("\\040", " ")))
    except OSError:
        pass
    return out


def unmount(path: str) -> bool:
    """Unmount a FUSE mount lazily; True when it is gone."""
    for argv in (["fusermount3", "-uz", path], ["fusermount", "-uz", path], ["umount", "-l", path]):
        if shutil.which(argv[0]) is None:
            continue
        if subprocess.run(argv, capture_output=True, check=False).returncode == 0:
            return True
    return False


def unmount_fuse(targets, extra_dirs: list[str]) -> list[str]:
    """Unmount lazyfs mounts of runs in ``targets`` (and any mount inside ``extra_dirs``)."""
    done = []
    for source, point in kraftcheck_mounts():
        run_id = source[len("kraftcheck-") :]
        inside = any(point.startswith(d.rstrip("/") + "/") or point == d for d in extra_dirs)
        if run_id not in targets and not inside:
            continue
        if unmount(point):
            done.append(point)
    return done


def remove_docker(targets) -> dict[str, Any]:
    """Remove containers and networks labelled ``kraftcheck=1`` of runs in ``targets``."""
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:
        return {"skipped": f"no Docker engine ({type(exc).__name__})"}
    containers, networks = [], []
    for container in client.containers.list(all=True, filters={"label": "kraftcheck=1"}):
        if container.labels.get("kraftcheck.run") not in targets:
            continue
        try:
            container.remove(force=True, v=True)
            containers.append(container.name)
        except Exception:
            pass
    for network in client.networks.list(filters={"label": "kraftcheck=1"}):
        if (network.attrs.get("Labels") or {}).get("kraftcheck.run") not in targets:
            continue
        try:
            network.remove()
            networks.append(network.name)
        except Exception:
            pass
    return {"containers": containers, "networks": networks}


def clean_all(include_live: bool = False, docker: bool = True) -> dict[str, Any]:
    """Remove everything kraftcheck started (see the module docstring); return what was removed."""
    targets = _Targets(include_live)
    live = targets.live
    dead_records = [r for r in state.read_run_records() if r["run_id"] in targets.dead]
    node_dirs = [d for r in dead_records for d in r.get("node_dirs", [])]
    report: dict[str, Any] = {"live_runs_kept": sorted(live)}
    report["processes"] = kill_processes(live)
    report["iptables_rules"] = remove_iptables_rules(targets)
    report["mounts"] = unmount_fuse(targets, node_dirs)
    report["docker"] = remove_docker(targets) if docker else {"skipped": "not asked"}
    removed_dirs = []
    for path in node_dirs:
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
            removed_dirs.append(path)
    report["node_dirs"] = removed_dirs
    for record in dead_records:
        state.remove_run_record(record["run_id"])
    report["runs"] = [r["run_id"] for r in dead_records]
    return report


def summary(report: dict[str, Any]) -> str:
    """One line per kind of thing removed, for ``kraftcheck clean``."""
    docker_part = report.get("docker", {})
    lines = [
        f"runs cleaned: {len(report.get('runs', []))} (live runs kept: {len(report.get('live_runs_kept', []))})",
        f"processes killed: {len(report.get('processes', []))}",
        f"iptables rules removed: {len(report.get('iptables_rules', []))}",
        f"FUSE mounts removed: {len(report.get('mounts', []))}",
        f"node directories removed: {len(report.get('node_dirs', []))}",
    ]
    if "skipped" in docker_part:
        lines.append(f"docker: skipped ({docker_part['skipped']})")
    else:
        lines.append(
            f"docker containers removed: {len(docker_part.get('containers', []))}, "
            f"networks removed: {len(docker_part.get('networks', []))}"
        )
    return "\n".join(lines)
