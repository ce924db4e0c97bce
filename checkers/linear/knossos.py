"""Optional knossos adapter: export each partition as EDN, run a configured knossos command, parse it.

Configure with ``--knossos CMD`` or the environment variable ``KRAFTCHECK_KNOSSOS`` (for example
``"java -jar knossos-standalone.jar"`` or ``"lein run -m knossos.cli"`` inside a knossos checkout). The
command is called as ``CMD --model MODEL --algorithm wgl FILE.edn`` and prints one line per file,
``FILE<TAB>true|false|:unknown`` (knossos.cli). Knossos only has the register and cas-register models,
so kafka-log histories are refused. **Knossos is not installed on this machine**; ``parse_output`` is
tested on recorded output, the subprocess path only with a stand-in command.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
from typing import Any

from checkers.history.export import edn_value
from checkers.linear.models import UNKNOWN
from checkers.linear.wgl import INF, Operation

KNOSSOS_MODELS = ("register", "cas-register")
_LINE = re.compile(r"^(?P<file>.*?)\t(?P<verdict>true|false|:unknown|nil)\s*$")


def configured_command(explicit: str | None = None) -> list[str] | None:
    """The knossos command from ``--knossos`` or ``KRAFTCHECK_KNOSSOS``, split like a shell would."""
    cmd = explicit or os.environ.get("KRAFTCHECK_KNOSSOS")
    return shlex.split(cmd) if cmd else None


def partition_to_edn(ops: list[Operation]) -> str:
    """A knossos history for one partition: one process per operation, events in time order."""
    events = []
    for pid, op in enumerate(ops):
        f, arg = op.inp
        inv_value = arg if f in ("write", "cas") else None
        events.append((op.call, 0, pid, "invoke", f, inv_value))
        if op.ret == INF or op.out is UNKNOWN:
            events.append((INF, 1, pid, "info", f, inv_value))
        elif f == "cas":
            events.append((op.ret, 1, pid, "ok" if op.out else "fail", f, inv_value))
        elif f == "read":
            events.append((op.ret, 1, pid, "ok", f, op.out))
        else:
            events.append((op.ret, 1, pid, "ok", f, inv_value))
    events.sort(key=lambda e: (e[0], -e[1], e[2]))
    return "\n".join(f"{{:process {pid}, :type :{typ}, :f :{f}, :value {edn_value(v)}}}"
                     for _, _, pid, typ, f, v in events) + "\n"


def parse_output(text: str) -> dict[str, Any]:
    """knossos.cli output -> ``{file: True | False | "unknown"}``; lines that are not verdicts are ignored."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            v = m.group("verdict")
            out[m.group("file")] = True if v == "true" else False if v == "false" else "unknown"
    return out


def run_knossos(cmd: list[str], model: str, parts: dict[Any, list[Operation]],
                time_limit_s: float | None) -> dict:
    """Run knossos on every partition; verdict merged like ``engine.check_partitions``."""
    if model not in KNOSSOS_MODELS:
        return {"valid": "unknown", "engine": "knossos", "model": model,
                "reason": f"knossos has no {model} model (only {', '.join(KNOSSOS_MODELS)})"}
    with tempfile.TemporaryDirectory(prefix="kraftcheck-knossos-") as tmp:
        files = {}
        for i, (k, ops) in enumerate(sorted(parts.items(), key=lambda kv: str(kv[0]))):
            path = os.path.join(tmp, f"key-{i}.edn")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(partition_to_edn(ops))
            files[path] = k
        try:
            proc = subprocess.run(cmd + ["--model", model, "--algorithm", "wgl", *files], capture_output=True,
                                  text=True, timeout=time_limit_s)
        except subprocess.TimeoutExpired:
            return {"valid": "unknown", "engine": "knossos", "model": model,
                    "reason": f"knossos exceeded the time limit of {time_limit_s}s"}
        except OSError as exc:
            return {"valid": "unknown", "engine": "knossos", "model": model, "reason": f"cannot run knossos: {exc}"}
        verdicts = parse_output(proc.stdout)
    keys = {str(files[f]): {"valid": verdicts.get(f, "unknown")} for f in files}
    vs = [v["valid"] for v in keys.values()]
    valid: Any = False if False in vs else ("unknown" if any(v != True for v in vs) else True)  # noqa: E712
    out = {"valid": valid, "engine": "knossos", "model": model, "keys": keys, "exit_code": proc.returncode}
    if proc.returncode != 0 or len(verdicts) < len(files):
        out["valid"] = False if valid is False else "unknown"
        out["reason"] = f"knossos exited {proc.returncode}: {proc.stderr.strip()[-500:]}"
    return out
