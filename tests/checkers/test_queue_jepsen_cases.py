"""Cases from Jepsen's own Kafka checker tests (jepsen.tests.kafka-test), in Jepsen's micro-op encoding.

Keys :x/:y become 1/2 and values :a, :b, ... become 10, 11, ...; op indices are positions here. The facts
(which anomaly, which values) carry over; our result shapes are those of checkers/queue/anomalies.py.
"""

from checkers.queue import queue_anomalies


def h(*rows):
    return [{"index": i, "time": i, "process": p, "type": t, "f": f, "value": v, "node": None, "error": None}
            for i, (p, t, f, v) in enumerate(rows)]


def kinds(result):
    return {k for k, v in result.items() if v}


def test_g1a_failed_multi_key_send_observed():
    r = queue_anomalies(h((0, "invoke", "send", [["send", 1, 2], ["send", 2, 3]]),
                          (0, "fail", "send", [["send", 1, 2], ["send", 2, 3]]),
                          (1, "invoke", "poll", [["poll"]]),
                          (1, "ok", "poll", [["poll", {"1": [[0, 2]]}]])))
    assert r["G1a"] == [{"key": 1, "value": 2, "writer": 1, "reader": 3}]


def test_lost_write_consistent():
    r = queue_anomalies(h((0, "invoke", "send", [["send", 1, 10]]), (0, "ok", "send", [["send", 1, [0, 10]]]),
                          (0, "invoke", "send", [["send", 1, 11], ["send", 1, 13]]),
                          (0, "ok", "send", [["send", 1, [1, 11]], ["send", 1, [3, 13]]]),
                          (1, "invoke", "send", [["send", 1, 12]]), (1, "info", "send", [["send", 1, 12]]),
                          (0, "invoke", "poll", [["poll"]]), (0, "ok", "poll", [["poll", {"1": [[2, 12]]}]])))
    assert [(e["value"], e["index"], e["max_read_index"], e["writer"], e["max_read"]) for e in r["lost-write"]] \
        == [(10, 0, 2, 1, 7), (11, 1, 2, 3, 7)]


def test_lost_write_atomic_needs_proof_of_commit():
    base = [(0, "invoke", "send", [["send", 1, 10], ["send", 2, 11]]),
            (0, "info", "send", [["send", 1, 10], ["send", 2, [0, 11]]]),
            (1, "invoke", "send", [["send", 2, 12]]), (1, "info", "send", [["send", 2, 12]])]
    poll_c = [(3, "invoke", "poll", [["poll"]]), (3, "ok", "poll", [["poll", {"2": [[1, 12]]}]])]
    assert queue_anomalies(h(*base, *poll_c))["lost-write"] == []
    poll_a = [(2, "invoke", "poll", [["poll"]]), (2, "ok", "poll", [["poll", {"1": [[0, 10]]}]])]
    lost = queue_anomalies(h(*base, *poll_a, *poll_c))["lost-write"]
    assert [(e["key"], e["value"], e["index"], e["max_read_index"]) for e in lost] == [(2, 11, 0, 1)]


def test_poll_skip():
    rows = [(0, "invoke", "poll", [["poll"]]), (0, "ok", "poll", [["poll", {"1": [[1, 10], [2, 11]]}]]),
            (1, "invoke", "poll", [["poll"]]), (1, "ok", "poll", [["poll", {"1": [[3, 12]]}]]),
            (0, "invoke", "poll", [["poll"]]), (0, "ok", "poll", [["poll", {"1": [[4, 13]]}]]),
            (2, "invoke", "send", [["send", 1, 15]]), (2, "ok", "send", [["send", 1, [6, 15]]]),
            (0, "invoke", "poll", [["poll"]]), (0, "ok", "poll", [["poll", {"1": [[7, 16]]}]]),
            (3, "invoke", "send", [["send", 1, v] for v in (10, 11, 12, 13, 16)]),
            (3, "info", "send", [["send", 1, v] for v in (10, 11, 12, 13, 16)])]
    r = queue_anomalies(h(*rows))
    assert [(e["ops"], e["delta"], e["skipped"]) for e in r["poll-skip"]] == [([1, 5], 2, [12]), ([5, 9], 2, [15])]
    # an assign that drops the key resets the baseline: no skip is reported across it
    rows[4:4] = [(0, "invoke", "assign", [2]), (0, "ok", "assign", [2])]
    assert [e["ops"] for e in queue_anomalies(h(*rows))["poll-skip"]] == [[7, 11]]


def test_inconsistent_offsets_need_a_committed_writer():
    rows = [(0, "invoke", "send", [["send", 1, 1], ["send", 2, 1]]),
            (0, "info", "send", [["send", 1, [0, 1]], ["send", 2, 1]]),
            (1, "invoke", "send", [["send", 1, 2]]), (1, "ok", "send", [["send", 1, [0, 2]]])]
    assert queue_anomalies(h(*rows))["inconsistent-offsets"] == []
    rows += [(2, "invoke", "poll", [["poll"]]), (2, "ok", "poll", [["poll", {"2": [[5, 1]]}]])]
    got = queue_anomalies(h(*rows))["inconsistent-offsets"]
    assert [(e["key"], e["offset"], e["values"]) for e in got] == [(1, 0, [1, 2])]
