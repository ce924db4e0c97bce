"""internal_polls (with its shortcut for reads that equal a run of the log) against the contract's
definition written out plainly, on valid, mutated and deliberately odd histories."""

import random

from checkers.queue import QueueAnalysis, internal_polls
from checkers.synth import deep_copy, mutate, synth_history


def _by_definition(a):
    """int-poll-skip / int-nonmonotonic-poll exactly as checkers/queue.py's docstring states them."""
    skips, nonmono = [], []
    vo = a.vo
    for r in a.recs:
        for k, seq in r.reads.items():
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
