"""The run spec: plain, serializable data that describes one run and can replay it (``spec.json``).

Jepsen's habit: the test is plain data; live handles (hosts, sockets, threads) live beside it in
``RunContext``. Everything that influences what a run does is a key here, so ``kraftcheck run --replay
STORE_DIR/spec.json`` repeats it: the seed decides the generator's op mix and timing and the nemesis
schedule; the rest configures the cluster (variant, MinISR, unclean election, flush policy) and the
workload. Facts about the environment that cannot be replayed but explain a result (git commit, image
hash, Python version) are recorded too.

Keys the checkers read for guarantee profiles: ``acks``, ``idempotence``, ``min_isr``, ``replication_factor``,
``variant``, ``unclean_leader_election``, ``flush_messages``, ``flush_ms``, ``nemesis``.
"""

from __future__ import annotations

import json
import os
import platform
import random
import shlex
import subprocess
from pathlib import Path
from typing import Any

SPEC_VERSION = 1
BACKENDS = ("local", "docker")
VARIANTS = ("v3.5", "kip966")
REASSIGNMENT_MODES = ("all-at-once", "incremental")

# Every key a spec may hold, with its default. ``seed`` None means "draw one at build time".
DEFAULTS: dict[str, Any] = {
    "test_name": "queue",
    "workload": "queue",
    "backend": "local",
    "seed": None,
    "time_limit_s": 30.0,
    "rate": 50.0,
    "concurrency": 4,
    "keys": 4,
    "brokers": 3,
    "replication_factor": 3,
    "min_isr": 2,
    "variant": "kip966",
    "acks": "all",
    "idempotence": True,
    "unclean_leader_election": False,
    "flush_messages": None,
    "flush_ms": None,
    "reassignment_mode": "all-at-once",
    "inject_bug": None,
    "nemesis": [],
    "nemesis_interval_s": 5.0,
    "topic": "kraftcheck",
    "op_timeout_s": 10.0,
    "recovery_timeout_s": 60.0,
    "final_read_timeout_s": 60.0,
    "send_ratio": 0.6,
    "assign_ratio": 0.05,
    "replica_lag_time_max_ms": 10000,
    "broker_session_timeout_ms": 6000,
    "broker_heartbeat_interval_ms": 1000,
}

# Keys describing the environment, filled by ``build_spec``; not options, so replay ignores them.
ENVIRONMENT_KEYS = ("spec_version", "git_commit", "git_dirty", "image", "python", "kraftcheck_version",
                    "created_utc", "argv")


class SpecError(ValueError):
    """A spec (or command-line option) that cannot describe a run; the message names the bad key."""


def git_commit(repo: str | os.PathLike | None = None) -> tuple[str | None, bool | None]:
    """The current git commit of the project and whether the work tree has changes (None when unknown)."""
    repo = str(repo or Path(__file__).resolve().parent.parent)
    try:
        commit = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
        status = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit, dirty


def _as_int(key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SpecError(f"{key}: expected an integer, got {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise SpecError(f"{key}: expected an integer, got {value!r}") from None
    if isinstance(value, float) and number != value:
        raise SpecError(f"{key}: expected an integer, got {value!r}")
    if number < minimum:
        raise SpecError(f"{key}: must be >= {minimum}, got {number}")
    return number


def _as_float(key: str, value: Any, minimum: float, strict: bool = False) -> float:
    if isinstance(value, bool):
        raise SpecError(f"{key}: expected a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise SpecError(f"{key}: expected a number, got {value!r}") from None
    if number < minimum or (strict and number == minimum):
        raise SpecError(f"{key}: must be {'>' if strict else '>='} {minimum}, got {number}")
    return number


def parse_nemesis(value: Any) -> list[str]:
    """``"kill,pause"`` / ``["kill"]`` / ``None`` / ``"none"`` -> a sorted, de-duplicated list of names."""
    if value is None:
        return []
    if isinstance(value, str):
        parts = value.split(",")
    elif isinstance(value, list | tuple):
        parts = [str(p) for p in value]
    else:
        raise SpecError(f"nemesis: expected a comma-separated list, got {value!r}")
    names = sorted({p.strip() for p in parts if p.strip() and p.strip() != "none"})
    return names


def normalize(options: dict[str, Any]) -> dict[str, Any]:
    """Fill defaults and validate every option; raise ``SpecError`` naming the first bad key.

    Unknown keys are rejected (a typo must not silently fall back to a default) except the environment
    keys of a stored spec.
    """
    unknown = sorted(set(options) - set(DEFAULTS) - set(ENVIRONMENT_KEYS))
    if unknown:
        raise SpecError(f"unknown spec key(s): {', '.join(unknown)}")
    spec = dict(DEFAULTS)
    spec.update({k: v for k, v in options.items() if v is not None or k in ("seed", "inject_bug")})
    if spec["backend"] not in BACKENDS:
        raise SpecError(f"backend: must be one of {', '.join(BACKENDS)}, got {spec['backend']!r}")
    if spec["variant"] not in VARIANTS:
        raise SpecError(f"variant: must be one of {', '.join(VARIANTS)}, got {spec['variant']!r}")
    if spec["reassignment_mode"] not in REASSIGNMENT_MODES:
        raise SpecError(f"reassignment_mode: must be one of {', '.join(REASSIGNMENT_MODES)}")
    if str(spec["acks"]) not in ("all", "-1", "1", "0"):
        raise SpecError(f"acks: must be all, 1 or 0, got {spec['acks']!r}")
    spec["acks"] = "all" if str(spec["acks"]) in ("all", "-1") else int(spec["acks"])
    # Kafka's idempotent producer requires acks=all (L6: the leader dedupes retried batches).
    spec["idempotence"] = bool(spec["idempotence"]) and spec["acks"] == "all"
    if spec["workload"] != "queue":
        raise SpecError(f"workload: only 'queue' exists, got {spec['workload']!r}")
    if not isinstance(spec["test_name"], str) or not spec["test_name"] or "/" in spec["test_name"]:
        raise SpecError(f"test_name: must be a non-empty name without '/', got {spec['test_name']!r}")
    for key, minimum in (("concurrency", 1), ("keys", 1), ("brokers", 1), ("replication_factor", 1),
                         ("min_isr", 1), ("replica_lag_time_max_ms", 1), ("broker_session_timeout_ms", 1),
                         ("broker_heartbeat_interval_ms", 1)):
        spec[key] = _as_int(key, spec[key], minimum)
    for key, minimum in (("flush_messages", 1), ("flush_ms", 0)):
        if spec[key] is not None:
            spec[key] = _as_int(key, spec[key], minimum)
    if spec["seed"] is not None:
        spec["seed"] = _as_int("seed", spec["seed"], 0)
    spec["time_limit_s"] = _as_float("time_limit_s", spec["time_limit_s"], 0.0, strict=True)
    spec["rate"] = _as_float("rate", spec["rate"], 0.0, strict=True)
    for key in ("nemesis_interval_s", "op_timeout_s", "recovery_timeout_s", "final_read_timeout_s"):
        spec[key] = _as_float(key, spec[key], 0.0, strict=True)
    for key in ("send_ratio", "assign_ratio"):
        spec[key] = _as_float(key, spec[key], 0.0)
        if spec[key] > 1:
            raise SpecError(f"{key}: must be between 0 and 1, got {spec[key]}")
    if spec["send_ratio"] + spec["assign_ratio"] > 1:
        raise SpecError("send_ratio + assign_ratio must not exceed 1")
    if spec["replication_factor"] > spec["brokers"]:
        raise SpecError(f"replication_factor ({spec['replication_factor']}) exceeds brokers ({spec['brokers']})")
    if spec["min_isr"] > spec["replication_factor"]:
        raise SpecError(f"min_isr ({spec['min_isr']}) exceeds replication_factor ({spec['replication_factor']})")
    if not isinstance(spec["unclean_leader_election"], bool):
        raise SpecError(f"unclean_leader_election: expected true/false, got {spec['unclean_leader_election']!r}")
    spec["nemesis"] = parse_nemesis(spec["nemesis"])
    return spec


def build_spec(options: dict[str, Any], argv: list[str] | None = None) -> dict[str, Any]:
    """A complete spec from options: defaults, validation, a drawn seed when none was given, environment.

    The seed is drawn from the OS (not from a clock) and written into the spec, so the run can be replayed.
    """
    from datetime import UTC, datetime

    spec = normalize({k: v for k, v in options.items() if k not in ENVIRONMENT_KEYS})
    if spec["seed"] is None:
        spec["seed"] = random.SystemRandom().randrange(2**31)
    commit, dirty = git_commit()
    spec.update({
        "spec_version": SPEC_VERSION,
        "git_commit": commit,
        "git_dirty": dirty,
        "image": options.get("image"),
        "python": platform.python_version(),
        "kraftcheck_version": _package_version(),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "argv": list(argv) if argv is not None else None,
    })
    return spec


def _package_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("kraftcheck")
    except Exception:  # not installed as a distribution (e.g. run from a checkout)
        return None


def replay_options(spec: dict[str, Any]) -> dict[str, Any]:
    """The options of a stored spec, without its environment keys (what ``build_spec`` needs to replay)."""
    return {k: v for k, v in spec.items() if k in DEFAULTS}


def load_spec(path: str | os.PathLike) -> dict[str, Any]:
    """Read a ``spec.json`` (a file, or a run directory containing one); raise ``SpecError`` if unusable."""
    path = Path(path)
    if path.is_dir():
        path = path / "spec.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"no spec at {path}") from None
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: a spec must be a JSON object")
    return data


# ``kraftcheck run`` option dest -> spec key (the flag is the dest with dashes: ``time_limit`` is
# ``--time-limit``).
OPTION_KEYS = {
    "test_name": "test_name", "backend": "backend", "seed": "seed", "time_limit": "time_limit_s",
    "rate": "rate", "concurrency": "concurrency", "keys": "keys", "brokers": "brokers",
    "replication_factor": "replication_factor", "min_isr": "min_isr", "variant": "variant", "acks": "acks",
    "flush_messages": "flush_messages", "flush_ms": "flush_ms", "reassignment_mode": "reassignment_mode",
    "inject_bug": "inject_bug", "nemesis": "nemesis", "nemesis_interval": "nemesis_interval_s",
    "op_timeout": "op_timeout_s", "recovery_timeout": "recovery_timeout_s",
    "final_read_timeout": "final_read_timeout_s", "topic": "topic",
}

# Spec key -> command-line flag, for printing a replay command line (``--nemesis`` is a list, printed apart).
_FLAGS = {key: "--" + dest.replace("_", "-") for dest, key in OPTION_KEYS.items() if key != "nemesis"}


def replay_argv(spec: dict[str, Any]) -> list[str]:
    """The ``kraftcheck run`` argument list that repeats ``spec`` (only options differing from defaults)."""
    argv = ["kraftcheck", "run"]
    for key, flag in _FLAGS.items():
        value = spec.get(key, DEFAULTS[key])
        if key != "seed" and value == DEFAULTS[key]:
            continue
        if value is None:
            continue
        argv += [flag, str(value)]
    if spec.get("nemesis"):
        argv += ["--nemesis", ",".join(spec["nemesis"])]
    if spec.get("unclean_leader_election"):
        argv.append("--unclean")
    return argv


def replay_command(spec: dict[str, Any], spec_path: str | os.PathLike | None = None) -> str:
    """A shell command that repeats the run: ``--replay spec.json`` when stored, else the full arguments."""
    if spec_path is not None:
        return f"kraftcheck run --replay {shlex.quote(str(spec_path))}"
    return shlex.join(replay_argv(spec))
