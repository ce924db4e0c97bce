"""Histories with planted anomalies for the differential tests (Python checker vs Spark jobs).

Starts from ``tests.support.synth.synth_history`` (a valid history) and applies its mutations plus a few
more plantings of our own, so that one history exercises many anomaly kinds at once (one Spark pass).
"""

from __future__ import annotations

import random

from tests.support.synth import deep_copy, mutate, synth_history


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


def plant_send_skip(ops: list[dict], rng: random.Random) -> None:
    """A txn's completion also lists, after its send to a key, a value three records further on in that
    key's log (int-send-skip: other values sit between two sends of one transaction)."""
    log: dict = {}
    for op in _completions(ops, "send"):
        if isinstance(op["value"][1], list):
            log.setdefault(op["value"][0], []).append(op["value"][1])
    for op in _completions(ops, "txn"):
        sends = [m for m in op["value"] if m[0] == "send" and isinstance(m[2], list)]
        for _, k, (o, _v) in sends:
            later = sorted(p for p in log.get(k, []) if p[0] > o)
            if len(later) >= 3:
                op["value"].append(["send", k, list(later[2])])
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
                  plant_lost_write, plant_internal_send_order, plant_send_skip, plant_skip_after_seek):
        plant(ops, rng)
    return ops


def _shift_keys(value, f: str, delta: int):
    """An op value with every key moved by ``delta`` (send, poll, txn and assign encodings)."""
    def poll_result(d):
        return {str(int(k) + delta): v for k, v in d.items()} if isinstance(d, dict) else d
    if f in ("assign", "subscribe") and isinstance(value, list):
        return [k + delta for k in value]
    if f == "poll":
        return poll_result(value)
    if f == "send" and isinstance(value, list) and len(value) == 2 and not isinstance(value[0], list):
        return [value[0] + delta, value[1]]
    if isinstance(value, list):
        return [[m[0], m[1] + delta, *m[2:]] if m and m[0] == "send" else
                [m[0], poll_result(m[1])] if m and m[0] == "poll" and len(m) == 2 else m for m in value]
    return value


def concatenated(histories: list[list[dict]], step: int = 10) -> list[dict]:
    """The histories one after the other in time, each on keys and processes of its own (history n's
    keys moved by ``step * n``, its processes by ``100 * n``), indices renumbered."""
    ops: list[dict] = []
    t0 = 0
    for n, history in enumerate(histories):
        for op in deep_copy(history):
            op["value"] = _shift_keys(op.get("value"), op["f"], step * n)
            if "hwm" in op:
                op["hwm"] = {str(int(k) + step * n): v for k, v in op["hwm"].items()}
            if isinstance(op["process"], int):
                op["process"] = op["process"] + 100 * n
            op["time"] = t0 + op["time"]
            ops.append(op)
        t0 = ops[-1]["time"] + 10
    for i, op in enumerate(ops):
        op["index"] = i
    return ops


def cycles_history() -> list[dict]:
    """Histories with dependency cycles of every class, one after the other: the golden cycle fixtures,
    two cycles of wr edges alone (two transactions reading each other's write, and a read of a value
    written later), and small synthetic histories (info and fail ops, transactions) whose logs are
    mutated into cycles, or not mutated (acyclic parts between the others)."""
    from tests.checkers.fixtures import GOLDEN, future_read, wr_only_pair

    parts = [GOLDEN[name][0] for name in ("G0", "G1c", "G0-realtime", "G1c-realtime")]
    parts += [wr_only_pair(), future_read()]
    for seed in range(6):
        ops = synth_history(60, keys=2, concurrency=4, seed=seed, p_txn=0.5, p_info=0.1)
        kind = ("swap-offsets", "duplicate-value", None)[seed % 3]
        if kind is not None:
            out = mutate(ops, kind, random.Random(seed))
            ops = out[0] if out is not None else ops
        parts.append(ops)
    return concatenated(parts)


def encodings_history() -> list[dict]:
    """Every golden fixture (tests/checkers/fixtures.py) on keys and processes of its own, one after the
    other, plus the encodings the JSONL extraction must read as the Python one does: Jepsen's micro-op
    send/poll ops, ``subscribe``, ``rebalance_log``, ``ends`` on a final poll, a non-integer offset, a
    pair that is not a 2-list, a key read with an empty list, and an invocation never completed."""
    from tests.checkers.fixtures import GOLDEN

    ops = concatenated([GOLDEN[name][0] for name in sorted(GOLDEN)])
    p, k = 9000, 500

    def add(process, type_, f, value, **extra):
        ops.append({"time": ops[-1]["time"] + 5, "type": type_, "process": process, "f": f, "value": value,
                    "node": None, "error": None, **extra})

    add(p, "invoke", "send", [["send", k, 1]])
    add(p, "ok", "send", [["send", k, [0, 1]]])
    add(p, "invoke", "send", [["send", k, 2], ["send", k + 1, 3]])
    add(p, "ok", "send", [["send", k, [1, 2]], ["send", k + 1, [0, 3]]])
    add(p + 1, "invoke", "subscribe", [k])
    add(p + 1, "ok", "subscribe", [k])
    add(p + 1, "invoke", "poll", [["poll"]])
    add(p + 1, "ok", "poll", [["poll", {str(k): [[0, 1], [1, 2]]}]])
    add(p + 1, "invoke", "poll", None)
    add(p + 1, "ok", "poll", {str(k): [[1, 2], [0, 1]], str(k + 1): [[0, 3]]},
        rebalance_log=[{"keys": [k]}])
    add(p + 2, "invoke", "poll", None)
    add(p + 2, "ok", "poll", {str(k): [[0.5, 1], [1, 2], [2]], str(k + 1): []}, hwm={str(k): 7, str(k + 1): "x"})
    add(p + 3, "invoke", "assign", [k, k + 1], final=True, seek_to_beginning=True)
    add(p + 3, "ok", "assign", [k, k + 1], final=True, seek_to_beginning=True)
    add(p + 3, "invoke", "poll", None, final=True)
    add(p + 3, "ok", "poll", {str(k): [[0, 1]], str(k + 1): [[0, 3]]}, final=True, ends={str(k): 2})
    add(p + 4, "invoke", "txn", [["send", k + 1, 9], ["send", k, 8]])
    for i, op in enumerate(ops):
        op["index"] = i
    return ops
