"""Golden histories for Jepsen's queue semantics (jepsen.tests.kafka), written from its definitions.

1. assign/subscribe (ok, and info: a crashed assign is taken as applied) replace the keys a process
   tracks: poll-skip, nonmonotonic-poll and nonmonotonic-send do not compare across a key the process
   dropped and acquired again; keys it kept still compare; a failed assign changes nothing.
2. int-send-skip: another value between two sends of one transaction; allowed in every default profile.
3. Transactions judged as transactions: G0 and G1c through a ww edge are allowed (unisolated writes
   interleave), a G1c or G1c-realtime of wr edges alone is never allowed; the reasons name the rule.
4. A history that gives the checks nothing to look at is unknown, never valid.

Each test has a control history that differs only in the point under test, so it fails without it.
"""

import json

import pytest

from checkers.analysis import check_run
from checkers.queue import queue_anomalies
from checkers.queue.checker import QueueChecker
from checkers.queue.cycles import without_ww
from checkers.queue.profiles import WR_ONLY_RULE, apply_override, derive_profile
from tests.checkers.fixtures import GOLDEN, build, future_read, poll, send, wr_only_pair


def kinds(ops):
    return {k for k, rows in queue_anomalies(ops).items() if rows}


def sub(p, f, keys, type_="ok"):
    """Invoke + completion of an assign or subscribe."""
    return [(p, "invoke", f, keys), (p, type_, f, keys)]


# ------------------------------------------------------------------------------------------- point 1
def _reread(between):
    """Process 3 reads key 1 up to index 2, does ``between``, then reads key 1 from the start again."""
    return build(*send(0, 1, 10, 0), *send(0, 1, 11, 1), *send(0, 1, 12, 2),
                 *poll(3, {1: [(0, 10), (1, 11), (2, 12)]}), *between, *poll(3, {1: [(0, 10)]}))


@pytest.mark.parametrize("f", ["assign", "subscribe"])
@pytest.mark.parametrize("type_", ["ok", "info"])
def test_a_key_dropped_and_acquired_again_is_not_compared(f, type_):
    assert "nonmonotonic-poll" in kinds(_reread([]))  # control: same process, no reassignment
    assert kinds(_reread([*sub(3, f, [2], type_), *sub(3, f, [1, 2])])) == set()


@pytest.mark.parametrize("f", ["assign", "subscribe"])
def test_a_failed_assign_changes_nothing(f):
    got = queue_anomalies(_reread([*sub(3, f, [2], "fail"), *sub(3, f, [1, 2], "fail")]))
    assert [e["values"] for e in got["nonmonotonic-poll"]] == [[12, 10]]


@pytest.mark.parametrize("f", ["assign", "subscribe"])
def test_a_kept_key_is_still_compared(f):
    ops = build(*send(0, 1, 10, 0), *send(0, 1, 11, 1), *send(0, 1, 12, 2),
                *poll(3, {1: [(0, 10)]}), *sub(3, f, [1, 2]), *poll(3, {1: [(2, 12)]}),
                *poll(4, {1: [(1, 11)]}))
    got = queue_anomalies(ops)
    assert [(e["ops"], e["skipped"]) for e in got["poll-skip"]] == [([7, 11], [11])]


def _send_back(between):
    """Process 0's first send lands at offset 1 and ends info, its second (after ``between``) at offset 0:
    a backward step of its sends to key 1 (the info send has no realtime order)."""
    return build((0, "invoke", "send", [1, 10]), (0, "info", "send", [1, [1, 10]]), *between,
                 (0, "invoke", "send", [1, 11]), (0, "ok", "send", [1, [0, 11]]),
                 *poll(1, {1: [(0, 11), (1, 10)]}))


@pytest.mark.parametrize("f", ["assign", "subscribe"])
@pytest.mark.parametrize("type_", ["ok", "info"])
def test_nonmonotonic_send_forgets_keys_the_process_dropped(f, type_):
    got = queue_anomalies(_send_back([]))
    assert [e["values"] for e in got["nonmonotonic-send"]] == [[10, 11]]
    assert kinds(_send_back([*sub(0, f, [2], type_)])) == set()
    # keeping the key, or an assign that failed, keeps the comparison
    assert kinds(_send_back([*sub(0, f, [1, 2])])) == {"nonmonotonic-send"}
    assert kinds(_send_back([*sub(0, f, [2], "fail")])) == {"nonmonotonic-send"}


def test_a_final_reader_polls_several_times():
    """Jepsen's final reader (a fresh process, assign with seek, then polls until caught up) continues
    from poll to poll; each final poll is not a new read from the beginning."""
    final = {"final": True}
    rows = [*send(0, 1, 10, 0), *send(0, 1, 11, 1), *send(0, 1, 12, 2),
            (5, "invoke", "assign", [1], {"seek_to_beginning": True, **final}),
            (5, "ok", "assign", [1], {"seek_to_beginning": True, **final}),
            *poll(5, {1: [(0, 10), (1, 11)]}, extra=final), *poll(5, {1: [(2, 12)]}, extra=final)]
    assert kinds(build(*rows)) == set()
    rows[-2:] = poll(5, {1: [(1, 11), (2, 12)]}, extra=final)  # the second poll reads index 1 again
    got = queue_anomalies(build(*rows))
    assert [(e["ops"], e["values"]) for e in got["nonmonotonic-poll"]] == [([9, 11], [11, 11])]
    # a new final assign starts the reader over: reading from the beginning again is no step back
    rows[-2:0] = [(5, "invoke", "assign", [1], final), (5, "ok", "assign", [1], final)]
    rows[-2:] = poll(5, {1: [(0, 10), (1, 11), (2, 12)]}, extra=final)
    assert kinds(build(*rows)) == set()


def test_rebalanced_keys_are_not_checked_inside_the_op():
    ops = build(*send(0, 1, 10, 0), *send(0, 1, 11, 1), *send(0, 1, 12, 2), *poll(3, {1: [(0, 10), (1, 11)]}),
                *poll(2, {1: [(2, 12), (0, 10)]}))
    assert kinds(ops) == {"int-nonmonotonic-poll"}
    ops[-1]["rebalance_log"] = [{"keys": [1]}]
    assert kinds(ops) == set()


# ------------------------------------------------------------------------------------------- point 2
def test_int_send_skip_is_allowed_in_every_default_profile():
    ops = GOLDEN["int-send-skip"][0]
    for spec in ({}, {"acks": 1}, {"variant": "v3.5"}, {"unclean_leader_election": True},
                 {"idempotence": True}, {"variant": "kip966", "min_isr": 2}):
        prof = derive_profile(spec, ops, has_final=True)
        assert prof["statuses"]["int-send-skip"] == "allowed", spec
        assert "Jepsen allows" in prof["reasons"]["int-send-skip"]
    assert apply_override(derive_profile({}, ops, True), "strict")["statuses"]["int-send-skip"] == "forbidden"
    res = QueueChecker().check({}, ops, [])
    assert res["valid"] is True and res["allowed"] == ["int-send-skip", "G0"]


def test_int_send_skip_needs_a_value_between_the_sends():
    ops = build((0, "invoke", "txn", [["send", 1, 10], ["send", 1, 12]]),
                (0, "ok", "txn", [["send", 1, [0, 10]], ["send", 1, [1, 12]]]),
                *poll(2, {1: [(0, 10), (1, 12)]}))
    assert kinds(ops) == set()


# ------------------------------------------------------------------------------------------- point 3
def test_a_g1c_of_wr_edges_alone_is_never_allowed():
    ops = wr_only_pair()
    got = queue_anomalies(ops)
    assert got["G1c"] == [{"cycle": [2, 3], "edges": [
        {"from": 2, "to": 3, "type": "wr", "key": 1, "value": 10},
        {"from": 3, "to": 2, "type": "wr", "key": 2, "value": 20}]}]
    for override in (None, "G1c=allowed"):
        res = QueueChecker(profile=override).check({"acks": 1}, ops, [])
        entry = res["anomalies"]["G1c"]
        assert res["valid"] is False and entry["status"] == "forbidden", override
        assert entry["reason"] == WR_ONLY_RULE and entry["without_ww"] == 1


def test_a_g1c_through_a_ww_edge_is_allowed_for_transactions():
    ops = GOLDEN["G1c"][0]
    res = QueueChecker().check({}, ops, [])
    assert res["valid"] is True and res["allowed"] == ["G1c"]
    assert not without_ww(res["anomalies"]["G1c"]["examples"][0])
    assert res["anomalies"]["G1c"]["reason"].startswith("transactions: a cycle through a ww edge")


def test_a_wr_only_cycle_is_found_beside_a_shorter_one_with_a_ww_edge():
    """Ops 4..7: A -ww-> B -wr-> A is the shortest cycle through A, and A -wr-> C -wr-> D -wr-> A shares its
    component; both are reported, and the second makes the history invalid."""
    ops = build((0, "invoke", "txn", [["poll"], ["send", 1, 10], ["send", 3, 30]]),
                (1, "invoke", "txn", [["send", 1, 11], ["send", 2, 21]]),
                (2, "invoke", "txn", [["poll"], ["send", 4, 40]]),
                (3, "invoke", "txn", [["poll"], ["send", 5, 50]]),
                (0, "ok", "txn", [["poll", {"2": [[0, 21]], "5": [[0, 50]]}], ["send", 1, [0, 10]],
                                  ["send", 3, [0, 30]]]),
                (1, "ok", "txn", [["send", 1, [1, 11]], ["send", 2, [0, 21]]]),
                (2, "ok", "txn", [["poll", {"3": [[0, 30]]}], ["send", 4, [0, 40]]]),
                (3, "ok", "txn", [["poll", {"4": [[0, 40]]}], ["send", 5, [0, 50]]]),
                *poll(4, {1: [(0, 10), (1, 11)]}))
    rows = queue_anomalies(ops)["G1c"]
    assert sorted((r["cycle"], without_ww(r)) for r in rows) == [([4, 5], False), ([4, 6, 7], True)]
    res = QueueChecker().check({}, ops, [])
    assert res["violations"] == ["G1c"] and res["anomalies"]["G1c"]["examples"][0]["cycle"] == [4, 6, 7]


def test_a_g1c_realtime_of_wr_and_rt_edges_is_never_allowed():
    """Op 1 completed before op 2 was invoked, yet read op 2's value: reading the future."""
    ops = future_read()
    got = queue_anomalies(ops)
    assert [(r["cycle"], [e["type"] for e in r["edges"]]) for r in got["G1c-realtime"]] == [
        ([1, 3], ["rt", "wr"])]
    res = QueueChecker().check({"acks": 1}, ops, [])  # loss allowed: realtime kinds would be allowed
    assert res["anomalies"]["G1c-realtime"]["status"] == "forbidden" and res["valid"] is False
    # control: a G1c-realtime with a ww edge is judged by the profile (allowed with acks=1)
    res = QueueChecker().check({"acks": 1}, GOLDEN["G1c-realtime"][0], [])
    assert res["anomalies"]["G1c-realtime"]["status"] == "allowed"


def test_the_reasons_say_which_rule_applied():
    txn = derive_profile({}, GOLDEN["G1c"][0], True)
    plain = derive_profile({}, GOLDEN["lost-write"][0][:2], True)
    assert txn["inputs"]["transactions"] is True and plain["inputs"]["transactions"] is False
    assert txn["reasons"]["G0"].startswith("transactions:")
    assert not plain["reasons"]["G0"].startswith("transactions")
    assert "never allowed" in txn["reasons"]["G1c"] and "never allowed" in plain["reasons"]["G1c"]
    assert txn["reasons"]["G1c"] != plain["reasons"]["G1c"]
    # Jepsen's send with several micro-ops is a (producer) transaction too
    jepsen = build((0, "invoke", "send", [["send", 1, 1], ["send", 2, 2]]),
                   (0, "ok", "send", [["send", 1, [0, 1]], ["send", 2, [0, 2]]]))
    assert derive_profile({}, jepsen, True)["inputs"]["transactions"] is True


def test_subscribe_allows_position_jumps_as_jepsen_does():
    ops = build(*sub(3, "subscribe", [1]), *send(0, 1, 10, 0), *send(0, 1, 11, 1), *send(0, 1, 12, 2),
                *poll(3, {1: [(0, 10)]}), *poll(3, {1: [(2, 12)]}), *poll(4, {1: [(1, 11)]}))
    res = QueueChecker().check({}, ops, [])
    assert res["anomaly_types"] == ["poll-skip"] and res["valid"] is True
    assert "subscribe" in res["anomalies"]["poll-skip"]["reason"]
    ops[0]["f"] = ops[1]["f"] = "assign"  # control: with assign a skip is a violation
    assert QueueChecker().check({}, ops, [])["violations"] == ["poll-skip"]


def test_jepsen_profile_is_jepsens_allowed_error_types():
    prof = apply_override(derive_profile({}, [], True), "jepsen")
    allowed = {k for k, s in prof["statuses"].items() if s == "allowed"}
    assert allowed == {"int-send-skip", "G0", "G0-realtime", "G1c", "G1c-realtime",
                       "acked-unreadable", "realtime-order", "hwm-regression"}
    assert prof["statuses"]["duplicate"] == "forbidden" and prof["statuses"]["unseen"] == "forbidden"
    subscribed = derive_profile({}, build(*sub(0, "subscribe", [1])), True)
    assert apply_override(subscribed, "jepsen")["statuses"]["poll-skip"] == "allowed"


# ------------------------------------------------------------------------------------------- point 4
@pytest.mark.parametrize("rows", [
    [],
    [*sub(0, "assign", [1]), ("nemesis", "invoke", "kill", None), ("nemesis", "info", "kill", None)],
    [(0, "invoke", "send", [1, 10]), (0, "info", "send", [1, 10]), (1, "invoke", "poll", None),
     (1, "fail", "poll", None)],
    [(1, "invoke", "poll", None), (1, "ok", "poll", {"1": []})],
])
def test_nothing_to_check_is_unknown(rows):
    res = QueueChecker().check({}, build(*rows), [])
    assert res["valid"] == "unknown" and res["checked"] is False
    # only a history without any send, poll or txn op leaves the queue checker out of a run's verdict
    queue_ops = any(r[2] in ("send", "poll") for r in rows)
    assert res.get("counted", True) is queue_ops


def test_something_to_check_is_valid():
    res = QueueChecker().check({}, build(*send(0, 1, 10, 0), *poll(1, {1: [(0, 10)]})), [])
    assert res["valid"] is True and "checked" not in res


def _write(path, ops):
    path.write_text("".join(json.dumps(op) + "\n" for op in ops))
    return str(path)


def test_check_run_with_nothing_to_check_is_unknown(tmp_path):
    only_faults = _write(tmp_path / "faults.jsonl", build(("nemesis", "invoke", "kill", None),
                                                          ("nemesis", "info", "kill", None)))
    res = check_run({}, only_faults, None)  # the engine runs too, and finds no operation either
    assert res["valid"] == "unknown"
    assert res["checkers"]["linear"]["checked"] is False
    assert any("no checker anything to look at" in s for s in res["not_checked"])
    unacked = _write(tmp_path / "unacked.jsonl",
                     build((0, "invoke", "send", [1, 10]), (0, "info", "send", [1, 10])))
    assert check_run({}, unacked, None, options={"linear": False})["valid"] == "unknown"


def test_a_register_history_is_the_engines_alone(tmp_path):
    reg = _write(tmp_path / "reg.jsonl", build((0, "invoke", "write", 1), (0, "ok", "write", 1),
                                               (1, "invoke", "read", None), (1, "ok", "read", 1)))
    res = check_run({}, reg, None)
    assert res["checkers"]["queue"]["counted"] is False
    assert res["checkers"]["linear"]["valid"] is True and res["valid"] is True
    assert check_run({}, reg, None, options={"linear": False})["valid"] == "unknown"
