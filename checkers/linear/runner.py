"""``LinearChecker``: the Checker that runs the engine as a subprocess (as Jepsen runs knossos).

The subprocess isolates the search (memory, CPU, time limit) from the analysis: a search that runs away
is killed at ``time_limit_s`` + a grace period and the result is ``unknown`` with the reason. Given the
file the history was read from, ``start`` launches the engine on it early (``check_run`` does, before it
reads the file) and ``check`` then collects the verdict; ``cancel`` kills and reaps one never collected.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import Any

from checkers.queue.profiles import derive_profile
from harness.checked_spec import CheckedSpec


class _Engine:
    """A running engine process and when it started (the hard time limit counts from there)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.started_at = time.monotonic()

    def stop(self) -> None:
        """Kill the process if it still runs, and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


class LinearChecker:
    """Linearizability of the history's queue (kafka-log) or register ops, per key."""

    name = "linear"

    def __init__(self, time_limit_s: float = 60.0, model: str = "auto", knossos: str | None = None,
                 history_path: str | os.PathLike | None = None):
        """``history_path``: the file the history given to ``check`` was read from (the engine reads it
        itself); without it ``check`` writes the ops to a temporary file."""
        self.time_limit_s = time_limit_s
        self.model = model
        self.knossos = knossos
        self.history_path = None if history_path is None else str(history_path)
        self._started: _Engine | None = None

    def start(self) -> None:
        """Start the engine on ``history_path`` now, so that it works while the other checkers do;
        ``check`` then collects its verdict. The caller must call ``cancel`` when it is done."""
        if self.history_path is None:
            raise ValueError("LinearChecker.start needs the history_path the checker was made with")
        self.cancel()
        self._started = self._launch(self.history_path)

    def cancel(self) -> None:
        """Kill and reap an engine started by ``start`` that is still running (an exception or Ctrl-C
        before ``check`` collected it); a no-op otherwise."""
        started, self._started = self._started, None
        if started is not None:
            started.stop()

    def _launch(self, path: str) -> _Engine:
        cmd = [sys.executable, "-m", "checkers.linear", "--model", self.model, "--format", "jsonl",
               "--time-limit", str(self.time_limit_s), path]
        if self.knossos:
            cmd += ["--knossos", self.knossos]
        return _Engine(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))

    def check(self, spec: CheckedSpec | Mapping | None, history: list[dict], traces: list[dict]) -> dict[str, Any]:
        """Collect the engine ``start`` launched, or run ``python -m checkers.linear`` now (on
        ``history_path``, or on the ops written to a temporary file when no file is known); parse its JSON."""
        engine, self._started = self._started, None
        tmp = None
        if engine is None:
            path = self.history_path
            if path is None:
                fd, tmp = tempfile.mkstemp(prefix="kraftcheck-linear-", suffix=".jsonl")
                with os.fdopen(fd, "w") as fh:
                    for op in history:
                        fh.write(json.dumps(op, default=str) + "\n")
                path = tmp
            engine = self._launch(path)
        proc = engine.proc
        limit = self.time_limit_s + 30
        try:
            stdout, stderr = proc.communicate(timeout=max(0.0, engine.started_at + limit - time.monotonic()))
        except subprocess.TimeoutExpired:
            engine.stop()
            return {"valid": "unknown", "reason": f"engine killed after {limit}s"}
        except BaseException:  # Ctrl-C while waiting: leave nothing running
            engine.stop()
            raise
        finally:
            if tmp:
                os.unlink(tmp)
        try:
            result = json.loads(stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return {"valid": "unknown", "reason": f"engine exited {proc.returncode}: {stderr[-500:]}"}
        result["command"] = proc.args
        if result.get("valid") is True and result.get("keys") == {}:
            result["checked"] = False  # no operation of the model: a vacuous yes (checkers.analysis)
            result["reason"] = f"no {result.get('model', 'model')} operation: nothing to check"
        if result.get("valid") is False:
            # A lost or rewritten suffix is not linearizable either; whether that is a bug is the profile's
            # call (e.g. Last Replica Standing under v3.5 is a known issue, docs/protocol-rules.md 5.1).
            has_final = any(op.get("final") is True for op in history)
            status = derive_profile(spec, history, has_final)["statuses"]["lost-write"]
            result["status"] = status
            if status != "forbidden":
                result["counted"] = False
                result["reason"] = (result.get("reason") or "not linearizable") + f" ({status} under this profile)"
        return result
