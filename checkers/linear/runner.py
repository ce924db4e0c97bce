"""``LinearChecker``: the Checker that runs the engine as a subprocess (as Jepsen runs knossos).

The subprocess isolates the search (memory, CPU, time limit) from the analysis: a search that runs away
is killed at ``time_limit_s`` + a grace period and the result is ``unknown`` with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any


class LinearChecker:
    """Linearizability of the history's queue (kafka-log) or register ops, per key."""

    name = "linear"

    def __init__(self, time_limit_s: float = 60.0, model: str = "auto", knossos: str | None = None):
        self.time_limit_s = time_limit_s
        self.model = model
        self.knossos = knossos

    def check(self, spec: dict, history: list[dict], traces: list[dict]) -> dict[str, Any]:
        """Write the ops if no file is known, run ``python -m checkers.linear``, parse its JSON."""
        path = (spec or {}).get("_history_path")
        tmp = None
        if not path:
            fd, tmp = tempfile.mkstemp(prefix="kraftcheck-linear-", suffix=".jsonl")
            with os.fdopen(fd, "w") as fh:
                for op in history:
                    fh.write(json.dumps(op, default=str) + "\n")
            path = tmp
        cmd = [sys.executable, "-m", "checkers.linear", "--model", self.model, "--format", "jsonl",
               "--time-limit", str(self.time_limit_s), path]
        if self.knossos:
            cmd += ["--knossos", self.knossos]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=self.time_limit_s + 30)
        except subprocess.TimeoutExpired:
            return {"valid": "unknown", "reason": f"engine killed after {self.time_limit_s + 30}s"}
        finally:
            if tmp:
                os.unlink(tmp)
        try:
            result = json.loads(proc.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            return {"valid": "unknown", "reason": f"engine exited {proc.returncode}: {proc.stderr[-500:]}"}
        result["command"] = cmd
        if result.get("valid") is False:
            # A lost or rewritten suffix is not linearizable either; whether that is a bug is the profile's
            # call (e.g. Last Replica Standing under v3.5 is a known issue, PROTOCOL.md 5.1).
            from checkers.profiles import derive_profile
            has_final = any(op.get("final") is True for op in history)
            status = derive_profile(spec or {}, history, has_final)["statuses"]["lost-write"]
            result["status"] = status
            if status != "forbidden":
                result["counted"] = False
                result["reason"] = (result.get("reason") or "not linearizable") + f" ({status} under this profile)"
        return result
