"""A small store of runs (layout: docs/architecture.md) built from synthetic histories with nemesis ops."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.synth import synth_history


def with_nemesis(ops: list[dict], fault: str, heal: str | None, at: float = 0.3, until: float = 0.6) -> list[dict]:
    """Insert a fault (invoke+ok) at ``at`` and its heal at ``until`` (fractions of the history), reindexed."""
    out = [dict(op) for op in ops]
    n = len(out)
    i, j = int(n * at), int(n * until)
    t_i, t_j = out[i]["time"], out[j]["time"]
    nem = [(i, {"type": "invoke", "process": "nemesis", "f": fault, "value": None, "time": t_i}),
           (i, {"type": "ok", "process": "nemesis", "f": fault, "value": {"effective": True}, "time": t_i})]
    if heal is not None:
        nem += [(j, {"type": "invoke", "process": "nemesis", "f": heal, "value": None, "time": t_j}),
                (j, {"type": "ok", "process": "nemesis", "f": heal, "value": {}, "time": t_j})]
    for pos, op in sorted(nem, key=lambda x: x[0], reverse=True):
        out.insert(pos, op)
    for k, op in enumerate(out):
        op["index"] = k
        op.setdefault("node", None)
        op.setdefault("error", None)
    return out


RUNS = [  # (test, stamp, nemesis, variant, fault f, heal f, verdict, seed)
    ("queue", "20261122T100000.000Z", ["kill"], "v3.5", "kill", "start", True, 1),
    ("queue", "20261122T100100.000Z", ["kill"], "kip966", "kill", "start", True, 2),
    ("queue", "20261122T100200.000Z", "partition,kill", "v3.5", "start-partition", "stop-partition", False, 3),
    ("lrs", "20261122T100300.000Z", [], "v3.5", None, None, None, 4),
]


def build_store(root: Path, n_ops: int = 150, corrupt_last: bool = True) -> dict[str, list[dict]]:
    """Write the RUNS under ``root``; return run directory -> ops written (for expected values)."""
    written = {}
    for test, stamp, nemesis, variant, fault, heal, verdict, seed in RUNS:
        run = root / test / stamp
        run.mkdir(parents=True)
        ops = synth_history(n_ops, keys=2, concurrency=3, seed=seed)
        if fault is not None:
            ops = with_nemesis(ops, fault, heal)
        (run / "spec.json").write_text(json.dumps({"nemesis": nemesis, "variant": variant, "acks": "all",
                                                   "min_isr": 2}))
        if verdict is not None:
            (run / "results.json").write_text(json.dumps({"valid": verdict}))
        with open(run / "history.jsonl", "w") as fh:
            for op in ops:
                fh.write(json.dumps(op) + "\n")
            if corrupt_last and test == "lrs":
                fh.write('{"index": 99999, "time": 1, "type": "ok", "proc')  # torn last line (kill -9)
        written[str(run.resolve())] = ops
    (root / "latest").symlink_to(Path("lrs") / RUNS[-1][1])
    return written
