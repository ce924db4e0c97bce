"""Histories with planted anomalies for the differential tests (Python checker vs Spark jobs).

Starts from ``checkers.synth.synth_history`` (a valid history) and applies its mutations plus a few
more plantings of our own, so that one history exercises many anomaly kinds at once (one Spark pass).
"""

from __future__ import annotations

import random

from checkers.synth import deep_copy, mutate, synth_history


def _completions(ops: list[dict], f: str, type_: str = "ok") -> list[dict]:
    return [op for op in ops if op["f"] == f and op["type"] == type_ and isinstance(op["process"], int)
            and not op.get("final")]


def plant_g1a(ops: list[dict], rng: random.Random) -> None:
    """An ok send that was read becomes ``fail``: its reads are aborted reads (G1a)."""
    sends = [op for op in _completions(ops, "send") if isinstance(op["value"][1], list)]
    op = rng.choice(sends)
    op["type"] = "fail"


def plant_hwm_regression(ops: list[dict], rng: random.Random) -> None:
    """A late poll reports a high watermark of 0 for every key (earlier polls saw more)."""
    polls = [op for op in _completions(ops, "poll") if op.get("hwm")]
    op = polls[-1 - rng.randrange(min(5, len(polls)))]
    op["hwm"] = dict.fromkeys(op["hwm"], 0)


def plant_reversed_poll(ops: list[dict], rng: random.Random) -> None:
    """One poll returns a key's records in reverse order (int-nonmonotonic-poll)."""
    sites = [(op, k) for op in _completions(ops, "poll") for k, pairs in op["value"].items() if len(pairs) >= 3]
    op, k = rng.choice(sites)
    op["value"][k] = list(reversed(op["value"][k]))


def plant_precommitted(ops: list[dict], rng: random.Random) -> None:
    """A txn's poll returns the value the same txn sends (precommitted-read)."""
    for op in _completions(ops, "txn"):
        polls = [m for m in op["value"] if m[0] == "poll"]
        sends = [m for m in op["value"] if m[0] == "send"]
        if polls and sends:
            _, k, (o, v) = sends[0]
            polls[0][1].setdefault(str(k), []).append([o, v])
            return


def plant_send_order(ops: list[dict], rng: random.Random) -> None:
    """Two ok sends of one process to one key get each other's acknowledged offsets (nonmonotonic-send)."""
    by = {}
    for op in _completions(ops, "send"):
        if isinstance(op["value"][1], list):
            by.setdefault((op["process"], op["value"][0]), []).append(op)
    pairs = [lst for lst in by.values() if len(lst) >= 2]
    a, b = rng.choice(pairs)[:2]
    a["value"][1][0], b["value"][1][0] = b["value"][1][0], a["value"][1][0]


def plant_lost_write(ops: list[dict], rng: random.Random) -> None:
    """An acknowledged send in the middle of its key vanishes from every read (lost-write, unseen)."""
    sends = [op for op in _completions(ops, "send") if isinstance(op["value"][1], list)]
    victim = sends[len(sends) // 2]
    k, (_, v) = str(victim["value"][0]), victim["value"][1]
    for op in ops:
        if op["type"] != "ok":
            continue
        polls = [op["value"]] if op["f"] == "poll" else [m[1] for m in op["value"] if m[0] == "poll"] \
            if op["f"] == "txn" and isinstance(op["value"], list) else []
        for d in polls:
            if isinstance(d, dict) and k in d:
                d[k] = [p for p in d[k] if p[1] != v]


def plant_internal_send_order(ops: list[dict], rng: random.Random) -> None:
    """A txn sending twice to one key gets the two offsets swapped (int-nonmonotonic-send)."""
    for op in _completions(ops, "txn"):
        sends = [m for m in op["value"] if m[0] == "send"]
        for i in range(len(sends)):
            for j in range(i + 1, len(sends)):
                if sends[i][1] == sends[j][1]:
                    sends[i][2][0], sends[j][2][0] = sends[j][2][0], sends[i][2][0]
                    return


def plant_skip_after_seek(ops: list[dict], rng: random.Random) -> None:
    """A consumer's first poll after its seek-to-beginning assign misses the key's first record
    (poll-skip against the log-start baseline)."""
    seen: set = set()
    for op in ops:
        p = op["process"]
        if op["f"] == "poll" and op["type"] == "ok" and not op.get("final") and isinstance(p, int) and p not in seen:
            seen.add(p)
            for pairs in op["value"].values():
                if len(pairs) >= 2 and pairs[0][0] == 0:
                    pairs.pop(0)
                    return


def planted_history(n_ops: int, seed: int) -> list[dict]:
    """A synthetic history of about ``n_ops`` client ops with many kinds of planted anomalies."""
    rng = random.Random(seed)
    ops = synth_history(n_ops, keys=4, concurrency=6, seed=seed)
    for kind in ("drop-read", "drop-read", "swap-offsets", "duplicate-value", "drop-read"):
        out = mutate(ops, kind, rng)
        if out is not None:
            ops = out[0]
    ops = deep_copy(ops)
    for plant in (plant_g1a, plant_hwm_regression, plant_reversed_poll, plant_precommitted, plant_send_order,
                  plant_lost_write, plant_internal_send_order, plant_skip_after_seek):
        plant(ops, rng)
    return ops
