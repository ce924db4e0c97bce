"""The environment a published report describes: what tested, with which libraries, on what machine.

Two sources, kept apart on the page because they can differ: what each run recorded in its
``spec.json`` (kraftcheck version, git commit and whether the tree had changes, Python, backend, image),
summarised over the store; and what is installed where the site was generated (client and library
versions, the machine), which is where the runs of a suite ran unless the store was copied from
elsewhere. Runs do not record their machine or library versions, so the page says which is which.
"""

from __future__ import annotations

import os
import platform
from collections import Counter
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from harness.spec import git_commit

LIBRARIES = ("kraftcheck", "kafka-python", "confluent-kafka", "aiokafka", "pyspark", "pandas", "pyarrow",
             "numpy", "matplotlib", "testcontainers", "docker")
"""Distributions whose versions the environment lists: the Kafka clients first."""

RUN_KEYS = ("kraftcheck_version", "git_commit", "git_dirty", "python", "backend", "image", "variant")


def recorded(specs: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """For each environment key the runs record, how many runs had each value."""
    out: dict[str, dict[str, int]] = {}
    for key in RUN_KEYS:
        counts = Counter(str(spec.get(key)) for spec in specs if key in spec)
        if counts:
            out[key] = dict(sorted(counts.items()))
    return out


def libraries() -> dict[str, str]:
    """Installed version of each of ``LIBRARIES`` (``not installed`` when absent)."""
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def machine() -> dict[str, Any]:
    """This machine: OS, kernel, architecture, CPUs, memory, Python."""
    uname = platform.uname()
    return {"system": f"{uname.system} {uname.release}", "machine": uname.machine,
            "cpus": os.cpu_count(), "memory_gb": _memory_gb(), "python": platform.python_version(),
            "os_release": _os_release()}


def describe(specs: list[dict[str, Any]]) -> dict[str, Any]:
    """The environment section of ``summary.json`` and of the environment page."""
    commit, dirty = git_commit()
    installed = libraries()
    return {"generated_utc": datetime.now(UTC).isoformat(timespec="seconds"),
            "publisher": {"kraftcheck": installed["kraftcheck"], "git_commit": commit, "git_dirty": dirty},
            "runs": recorded(specs), "libraries": installed, "machine": machine()}


def _memory_gb() -> float | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _os_release() -> str | None:
    try:
        with open("/etc/os-release", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None
