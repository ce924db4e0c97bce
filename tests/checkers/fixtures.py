"""Golden queue histories: one small hand-built history per anomaly kind.

Each fixture is ``(ops, expected_kinds)``: the history must produce exactly ``expected_kinds`` (usually one
kind) and nothing else. Some facts can only be seen together: a realtime-order violation on one key is
also a ww+rt cycle (G0-realtime), so the ``realtime-order`` fixture expects both; and the committed value
between two sends of one transaction (int-send-skip) is a ww cycle with that transaction (G0).
"""

from __future__ import annotations


def build(*rows) -> list[dict]:
    """Rows ``(process, type, f, value[, extra dict])``; index and time are the row position."""
    ops = []
    for i, row in enumerate(rows):
        p, t, f, v = row[:4]
        op = {"index": i, "time": i * 10, "type": t, "process": p, "f": f, "value": v, "node": None,
              "error": None}
        if len(row) > 4:
            op.update(row[4])
        ops.append(op)
    return ops


def send(p, k, v, o, type_="ok"):
    """Invoke + completion of a single send."""
    comp = [k, [o, v]] if o is not None else [k, v]
    return [(p, "invoke", "send", [k, v]), (p, type_, "send", comp)]


def poll(p, result, type_="ok", extra=None):
    """Invoke + completion of a single poll; ``result`` uses int keys (written as JSON strings)."""
    value = {str(k): [list(x) for x in pairs] for k, pairs in result.items()}
    comp = (p, type_, "poll", value) if extra is None else (p, type_, "poll", value, extra)
    inv = (p, "invoke", "poll", None) if extra is None or "final" not in extra else (
        p, "invoke", "poll", None, {"final": True})
    return [inv, comp]


def seq(*parts):
    """Concatenate op-row lists and build the history."""
    rows = []
    for part in parts:
        rows.extend(part)
    return build(*rows)


GOLDEN: dict[str, tuple[list[dict], set[str]]] = {
    "inconsistent-offsets": (build(
        (0, "invoke", "send", [1, 1]), (1, "invoke", "send", [1, 2]),
        (0, "ok", "send", [1, [0, 1]]), (1, "ok", "send", [1, [0, 2]]),
        *poll(2, {1: [(0, 1)]}), *poll(3, {1: [(0, 2)]})), {"inconsistent-offsets"}),
    "duplicate": (seq(send(0, 1, 1, 0), poll(2, {1: [(0, 1)]}), poll(3, {1: [(1, 1)]})), {"duplicate"}),
    "lost-write": (seq(
        send(0, 1, 1, 0),
        [(1, "invoke", "txn", [["send", 1, 2], ["send", 2, 7]]),
         (1, "info", "txn", [["send", 1, [1, 2]], ["send", 2, [0, 7]]])],
        send(2, 1, 3, 2),
        poll(3, {1: [(0, 1)], 2: [(0, 7)]}), poll(4, {1: [(2, 3)]})), {"lost-write"}),
    "poll-skip": (seq(send(0, 1, 1, 0), send(1, 1, 2, 1), send(2, 1, 3, 2),
                      poll(3, {1: [(0, 1)]}), poll(3, {1: [(2, 3)]}), poll(4, {1: [(1, 2)]})), {"poll-skip"}),
    "nonmonotonic-poll": (seq(send(0, 1, 1, 0), send(1, 1, 2, 1),
                              poll(2, {1: [(0, 1), (1, 2)]}), poll(2, {1: [(1, 2)]})), {"nonmonotonic-poll"}),
    "int-poll-skip": (seq(send(0, 1, 1, 0), send(1, 1, 2, 1), send(2, 1, 3, 2),
                          poll(3, {1: [(0, 1), (2, 3)]}), poll(4, {1: [(1, 2)]})), {"int-poll-skip"}),
    "int-nonmonotonic-poll": (seq(send(0, 1, 1, 0), send(1, 1, 2, 1), poll(2, {1: [(1, 2), (0, 1)]})),
                              {"int-nonmonotonic-poll"}),
    # The first send ended info (with an offset), so realtime order says nothing about it.
    "nonmonotonic-send": (build(
        (0, "invoke", "send", [1, 1]), (0, "info", "send", [1, [1, 1]]),
        (0, "invoke", "send", [1, 2]), (0, "ok", "send", [1, [0, 2]]),
        *poll(1, {1: [(0, 2), (1, 1)]})), {"nonmonotonic-send"}),
    "int-nonmonotonic-send": (build(
        (0, "invoke", "txn", [["send", 1, 1], ["send", 1, 2]]),
        (0, "ok", "txn", [["send", 1, [1, 1]], ["send", 1, [0, 2]]]),
        *poll(1, {1: [(0, 2), (1, 1)]})), {"int-nonmonotonic-send"}),
    # Process 1's value lands between the two sends of process 0's transaction.
    "int-send-skip": (build(
        (0, "invoke", "txn", [["send", 1, 10], ["send", 1, 12]]),
        (1, "invoke", "send", [1, 11]), (1, "ok", "send", [1, [1, 11]]),
        (0, "ok", "txn", [["send", 1, [0, 10]], ["send", 1, [2, 12]]]),
        *poll(2, {1: [(0, 10), (1, 11), (2, 12)]})), {"int-send-skip", "G0"}),
    "G1a": (seq(send(0, 1, 1, None, type_="fail"), poll(1, {1: [(0, 1)]})), {"G1a"}),
    "precommitted-read": (build(
        (0, "invoke", "txn", [["send", 1, 1], ["poll"]]),
        (0, "ok", "txn", [["send", 1, [0, 1]], ["poll", {"1": [[0, 1]]}]])), {"precommitted-read"}),
    "unseen": (seq(send(0, 1, 1, 0)), {"unseen"}),
    "acked-unreadable": (seq(
        send(0, 1, 1, 0), poll(2, {1: [(0, 1)]}),
        [(1, "invoke", "assign", [1], {"seek_to_beginning": True, "final": True}),
         (1, "ok", "assign", [1], {"seek_to_beginning": True, "final": True})],
        poll(1, {1: []}, extra={"final": True})), {"acked-unreadable"}),
    "realtime-order": (seq(send(0, 1, 1, 1), send(1, 1, 2, 0), poll(2, {1: [(0, 2), (1, 1)]})),
                       {"realtime-order", "G0-realtime"}),
    "hwm-regression": (seq(send(0, 1, 1, 0), poll(1, {1: [(0, 1)]}, extra={"hwm": {"1": 1}}),
                           poll(2, {1: [(0, 1)]}, extra={"hwm": {"1": 0}})), {"hwm-regression"}),
    "G0": (build(
        (0, "invoke", "txn", [["send", 1, 10], ["send", 2, 11]]),
        (1, "invoke", "txn", [["send", 1, 20], ["send", 2, 21]]),
        (0, "ok", "txn", [["send", 1, [0, 10]], ["send", 2, [1, 11]]]),
        (1, "ok", "txn", [["send", 1, [1, 20]], ["send", 2, [0, 21]]]),
        *poll(2, {1: [(0, 10), (1, 20)], 2: [(0, 21), (1, 11)]})), {"G0"}),
    "G1c": (build(
        (0, "invoke", "txn", [["poll"], ["send", 1, 10]]),
        (1, "invoke", "txn", [["send", 2, 21], ["send", 1, 20]]),
        (0, "ok", "txn", [["poll", {"2": [[0, 21]]}], ["send", 1, [0, 10]]]),
        (1, "ok", "txn", [["send", 2, [0, 21]], ["send", 1, [1, 20]]]),
        *poll(2, {1: [(0, 10), (1, 20)]})), {"G1c"}),
    "G0-realtime": (build(
        (3, "invoke", "txn", [["send", 2, 32], ["send", 1, 31]]),
        (1, "invoke", "txn", [["send", 1, 11]]),
        (1, "ok", "txn", [["send", 1, [1, 11]]]),
        (2, "invoke", "txn", [["send", 2, 22]]),
        (2, "ok", "txn", [["send", 2, [0, 22]]]),
        (3, "ok", "txn", [["send", 2, [1, 32]], ["send", 1, [0, 31]]]),
        *poll(4, {1: [(0, 31), (1, 11)], 2: [(0, 22), (1, 32)]})), {"G0-realtime"}),
    "G1c-realtime": (build(
        (0, "invoke", "send", [1, 10]),
        *poll(1, {1: [(1, 10)]}),
        (2, "invoke", "send", [1, 20]), (2, "ok", "send", [1, [0, 20]]),
        (0, "ok", "send", [1, [1, 10]]),
        *poll(3, {1: [(0, 20), (1, 10)]})), {"G1c-realtime"}),
}


def wr_only_pair() -> list[dict]:
    """Two concurrent transactions, each reading the other's write: a G1c of wr edges alone."""
    return build((0, "invoke", "txn", [["poll"], ["send", 1, 10]]),
                 (1, "invoke", "txn", [["poll"], ["send", 2, 20]]),
                 (0, "ok", "txn", [["poll", {"2": [[0, 20]]}], ["send", 1, [0, 10]]]),
                 (1, "ok", "txn", [["poll", {"1": [[0, 10]]}], ["send", 2, [0, 20]]]))


def future_read() -> list[dict]:
    """Op 1 completes before op 2 is invoked, yet reads op 2's value: a G1c-realtime of wr and rt edges."""
    return build((0, "invoke", "txn", [["poll"]]), (0, "ok", "txn", [["poll", {"1": [[0, 10]]}]]),
                 (1, "invoke", "send", [1, 10]), (1, "ok", "send", [1, [0, 10]]))
