"""The per-op and per-process kinds against the contract's definitions written out plainly, on valid,
mutated and deliberately odd histories: internal_polls (with its shortcut for reads that equal a run of
the log), poll_skips (assign/subscribe resets, seeks, final readers) and send_order (assign/subscribe
resets, int-nonmonotonic-send, int-send-skip)."""

import random

from checkers.queue.keys import QueueAnalysis, internal_polls, poll_skips, send_order
from tests.support.synth import deep_copy, mutate, synth_history


def _by_definition(a):
    """int-poll-skip / int-nonmonotonic-poll exactly as checkers/queue/anomalies.py's docstring states them."""
    skips, nonmono = [], []
    vo = a.vo
    for r in a.recs:
        for k, seq in r.reads.items():
            if k in r.rebalanced:
                continue
            first = vo.first.get(k, {})
            for pos in range(1, len(seq)):
                v1, v2 = seq[pos - 1][1], seq[pos][1]
                i1, i2 = first.get(v1), first.get(v2)
                if i1 is None or i2 is None:
                    continue
                if i2 - i1 > 1:
                    skips.append({"key": k, "op": r.index, "pos": pos, "values": [v1, v2], "delta": i2 - i1,
                                  "skipped": vo.skipped(k, i1, i2)})
                elif i2 - i1 < 1:
                    nonmono.append({"key": k, "op": r.index, "pos": pos, "values": [v1, v2], "delta": i2 - i1})
    skips.sort(key=lambda e: (e["key"], e["op"], e["pos"]))
    nonmono.sort(key=lambda e: (e["key"], e["op"], e["pos"]))
    return skips, nonmono


def _polls_by_definition(a):
    """poll-skip / nonmonotonic-poll as the contract states them: one baseline map per (process, final)."""
    skips, nonmono = [], []
    vo = a.vo

    def index(k, v):
        return vo.first.get(k, {}).get(v)

    base: dict = {}  # (process, is final) -> {key: (op, value, index)}
    for r in a.recs:
        if r.f in ("assign", "subscribe"):
            if r.type in ("ok", "info"):
                b = base.setdefault((r.process, False), {})
                if r.seek:
                    b.clear()
                    b.update({k: (r.index, None, -1) for k in r.assign})
                else:
                    for k in [k for k in b if k not in r.assign]:
                        del b[k]
                if r.final:
                    base[(r.process, True)] = {}
            continue
        b = base.setdefault((r.process, r.final), {})
        for k, seq in r.reads.items():
            if not seq:
                continue
            prev = b.get(k, (r.index, None, -1) if r.final else None)
            if prev is not None:
                op, v, i = prev
                v2 = seq[0][1]
                i2 = index(k, v2)
                if i is not None and i2 is not None and i2 - i != 1:
                    row = {"key": k, "process": r.process, "ops": [op, r.index], "values": [v, v2],
                           "delta": i2 - i}
                    if i2 - i > 1:
                        skips.append(dict(row, skipped=vo.skipped(k, i, i2)))
                    else:
                        nonmono.append(row)
            if r.type == "ok":
                b[k] = (r.index, seq[-1][1], index(k, seq[-1][1]))
    skips.sort(key=lambda e: (e["key"], e["ops"][1]))
    nonmono.sort(key=lambda e: (e["key"], e["ops"][1]))
    return skips, nonmono


def _sends_by_definition(a):
    """nonmonotonic-send, int-nonmonotonic-send and int-send-skip as the contract states them."""
    ext, internal, skips = [], [], []
    vo = a.vo
    last: dict = {}  # (process, key) -> (op, last value sent)
    for r in a.recs:
        if r.type not in ("ok", "info"):
            continue
        if r.f in ("assign", "subscribe"):
            for p, k in [pk for pk in last if pk[0] == r.process and pk[1] not in r.assign]:
                del last[(p, k)]
            continue
        by_key: dict = {}
        for k, v, _ in r.sends:
            by_key.setdefault(k, []).append(v)
        for k, vals in by_key.items():
            first = vo.first.get(k, {})
            if (r.process, k) in last:
                op, v = last[(r.process, k)]
                i1, i2 = first.get(v), first.get(vals[0])
                if i1 is not None and i2 is not None and i2 - i1 < 1:
                    ext.append({"key": k, "process": r.process, "ops": [op, r.index], "values": [v, vals[0]],
                                "delta": i2 - i1})
            for pos in range(1, len(vals)):
                i1, i2 = first.get(vals[pos - 1]), first.get(vals[pos])
                if i1 is None or i2 is None or i2 - i1 == 1:
                    continue
                row = {"key": k, "op": r.index, "pos": pos, "values": [vals[pos - 1], vals[pos]],
                       "delta": i2 - i1}
                if i2 - i1 > 1:
                    skips.append(dict(row, skipped=vo.skipped(k, i1, i2)))
                else:
                    internal.append(row)
            last[(r.process, k)] = (r.index, vals[-1])
    ext.sort(key=lambda e: (e["key"], e["ops"][1]))
    internal.sort(key=lambda e: (e["key"], e["op"], e["pos"]))
    skips.sort(key=lambda e: (e["key"], e["op"], e["pos"]))
    return ext, internal, skips


def _interleaved(ops, rng):
    """Make a few txn ops' sends of one key non-adjacent in their key's log: another value is read
    between them (int-send-skip), and swap a few send offsets inside txns (int-nonmonotonic-send)."""
    ops = deep_copy(ops)
    for op in ops:
        if op["f"] == "txn" and op["type"] == "ok" and rng.random() < 0.3:
            sends = [m for m in op["value"] if m[0] == "send"]
            if len(sends) >= 2 and sends[0][1] == sends[1][1]:
                sends[0][2][0], sends[1][2][0] = sends[1][2][0], sends[0][2][0]
    return ops


def _reassigned(ops, rng):
    """Insert assign/subscribe ops (some info, some fail, some with seek) between a process's ops."""
    out = []
    for op in ops:
        p = op["process"]
        if op["type"] == "invoke" and isinstance(p, int) and rng.random() < 0.1:
            f = rng.choice(["assign", "subscribe"])
            keys = sorted(rng.sample(range(4), rng.randint(0, 3)))
            extra = {"seek_to_beginning": True} if rng.random() < 0.2 else {}
            out.append({"index": 0, "time": op["time"], "type": "invoke", "process": p, "f": f, "value": keys,
                        **extra})
            out.append({"index": 0, "time": op["time"], "type": rng.choice(["ok", "ok", "info", "fail"]),
                        "process": p, "f": f, "value": keys, **extra})
        out.append(op)
    for i, op in enumerate(out):
        op["index"] = i
    return out


def _odd(ops, rng):
    """Reorder, thin out, repeat or retype pairs of a few ok poll reads."""
    ops = deep_copy(ops)
    polls = [op for op in ops if op["type"] == "ok" and op["f"] == "poll" and isinstance(op.get("value"), dict)]
    for _ in range(3):
        seqs = [s for s in rng.choice(polls)["value"].values() if len(s) > 2]
        if not seqs:
            continue
        s = rng.choice(seqs)
        how = rng.randrange(5)
        if how == 0:
            rng.shuffle(s)
        elif how == 1:
            del s[1]
        elif how == 2:
            s.insert(1, list(s[1]))
        elif how == 3:
            s[1] = (s[1][0], s[1][1])  # a tuple among lists
        else:
            s[1][0] = True if s[1][0] == 1 else float(s[1][0])
    return ops


def test_same_rows_as_the_definition():
    rng = random.Random(9)
    found = 0
    for seed in range(60):
        h = synth_history(120, seed=seed, keys=rng.choice([1, 2, 4]), batch=rng.choice([2, 4, 8]))
        cases = [h, _odd(h, rng)]
        m = mutate(h, rng.choice(["drop-read", "duplicate-value", "swap-offsets"]), rng)
        if m:
            cases.append(m[0])
        for ops in cases:
            a = QueueAnalysis(ops, {})
            got = internal_polls(a)
            assert got == _by_definition(a)
            found += bool(got[0] or got[1])
    assert found > 20  # the odd histories do have internal skips and backward steps


def test_poll_and_send_order_as_the_definition():
    rng = random.Random(11)
    found = {"poll": 0, "send": 0, "int-send-skip": 0}
    for seed in range(60):
        h = synth_history(150, seed=seed, keys=rng.choice([1, 2, 4]), p_txn=0.4,
                          p_reassign=rng.choice([0.0, 0.1]))
        cases = [h, _reassigned(h, rng), _odd(_reassigned(h, rng), rng), _interleaved(h, rng)]
        m = mutate(h, rng.choice(["drop-read", "duplicate-value", "swap-offsets"]), rng)
        if m:
            cases.append(_reassigned(m[0], rng))
        for ops in cases:
            a = QueueAnalysis(ops, {})
            polls, sends = poll_skips(a), send_order(a)
            assert polls == _polls_by_definition(a)
            assert sends == _sends_by_definition(a)
            found["poll"] += bool(polls[0] or polls[1])
            found["send"] += bool(sends[0] or sends[1])
            found["int-send-skip"] += bool(sends[2])
    assert min(found.values()) > 5, found  # the cases do exercise every kind
