"""Run the WGL search over every partition within one time budget and summarise the verdict."""

from __future__ import annotations

import time
from typing import Any

from checkers.linear.models import MODELS
from checkers.linear.wgl import check_operations

STATE_TAIL = 20


def state_json(state: Any) -> Any:
    """A model state as JSON for reports: a log as its length and last ``STATE_TAIL`` values, a value as
    itself when JSON can hold it, anything else as its repr."""
    if hasattr(state, "vals") and hasattr(state, "__len__"):
        return {"length": len(state), "tail": state.lst[max(0, len(state) - STATE_TAIL):len(state)]}
    if state is None or isinstance(state, bool | int | float | str):
        return state
    if isinstance(state, tuple | list):
        return [state_json(s) for s in state]
    return repr(state)


def check_partitions(model_name: str, parts: dict[Any, list], time_limit_s: float | None = None,
                     all_keys: bool = False) -> dict:
    """``{"valid", "model", "engine": "wgl", "keys": {key: {...}}, "reason"?, "elapsed_s"}``.

    Keys are searched smallest first so that cheap keys decide a ``False`` early; the whole run shares
    ``time_limit_s``. Any invalid key makes the verdict False; otherwise any timed-out key makes it unknown.
    After the first non-linearizable key the rest are skipped (``"skipped"``) unless ``all_keys``.
    """
    model = MODELS[model_name]
    start = time.monotonic()
    deadline = None if time_limit_s is None else start + time_limit_s
    keys: dict[str, dict] = {}
    verdicts = []
    order = sorted(parts, key=lambda k: (len(parts[k]), str(k)))
    for i, k in enumerate(order):
        if deadline is not None and time.monotonic() > deadline:
            for rest in order[i:]:
                keys[str(rest)] = {"valid": "unknown", "ops": len(parts[rest]), "reason": "time limit reached"}
                verdicts.append("unknown")
            break
        t0 = time.monotonic()
        ops = model.prepare(parts[k]) if hasattr(model, "prepare") else parts[k]
        res = check_operations(model, ops, deadline)
        info = {"valid": res.valid, "ops": res.total, "explored": res.explored,
                "elapsed_s": round(time.monotonic() - t0, 4)}
        if res.valid is not True:
            info["reason"] = res.reason
            info["linearized"] = res.linearized
            info["stuck_ops"] = [r for r in res.stuck if r is not None][:20]
            info["last_states"] = [state_json(s) for s in res.stuck_states]
        keys[str(k)] = info
        verdicts.append(res.valid)
        if res.valid is False and not all_keys:
            for rest in order[i + 1:]:
                keys[str(rest)] = {"valid": "skipped", "ops": len(parts[rest]),
                                   "reason": "a non-linearizable key was already found"}
            break
    if any(v is False for v in verdicts):
        valid: Any = False
    elif any(v is not True for v in verdicts):
        valid = "unknown"
    else:
        valid = True
    out = {"valid": valid, "model": model_name, "engine": "wgl", "keys": keys,
           "elapsed_s": round(time.monotonic() - start, 4)}
    if valid == "unknown":
        slow = [k for k, v in keys.items() if v["valid"] == "unknown"]
        out["reason"] = f"time limit {time_limit_s}s reached; undecided keys: {slow[:20]}"
    elif valid is False:
        out["reason"] = "not linearizable: keys " + ", ".join(k for k, v in keys.items() if v["valid"] is False)
    return out
