"""The guarantee profile of transactional runs (spec ``txn``) per isolation level."""

from __future__ import annotations

from checkers.analysis import linear_wanted
from checkers.queue.checker import judge
from checkers.queue.profiles import derive_profile
from harness.checked_spec import CheckedSpec

TXN_OPS = [
    {"index": 0, "type": "invoke", "process": 0, "f": "txn", "value": [["send", 0, 1], ["poll"]]},
    {"index": 1, "type": "ok", "process": 0, "f": "txn", "value": [["send", 0, [0, 1]], ["poll", {}]]},
]
PLAIN_OPS = [
    {"index": 0, "type": "invoke", "process": 0, "f": "send", "value": [0, 1]},
    {"index": 1, "type": "ok", "process": 0, "f": "send", "value": [0, [0, 1]]},
]
WR_ONLY_CYCLE = {"cycle": [1, 3], "edges": [{"from": 1, "key": 0, "to": 3, "type": "wr", "value": 5},
                                            {"from": 3, "key": 1, "to": 1, "type": "wr", "value": 6}]}


def statuses(spec, ops):
    return derive_profile(spec, ops, has_final=True)["statuses"]


def test_read_committed_forbids_aborted_and_precommitted_reads():
    s = statuses({"txn": True, "isolation_level": "read_committed"}, TXN_OPS)
    assert (s["G1a"], s["precommitted-read"]) == ("forbidden", "forbidden")


def test_read_uncommitted_allows_aborted_and_precommitted_reads():
    s = statuses({"txn": True, "isolation_level": "read_uncommitted"}, TXN_OPS)
    assert (s["G1a"], s["precommitted-read"]) == ("allowed", "allowed")
    # the isolation level is a transactional run's: without txn nothing changes
    assert statuses({"isolation_level": "read_uncommitted"}, TXN_OPS)["G1a"] == "forbidden"


def test_realtime_cycles_are_allowed_with_transactions_only():
    s = statuses({"txn": True}, TXN_OPS)
    assert (s["G0-realtime"], s["G1c-realtime"]) == ("allowed", "allowed")
    plain = statuses({}, PLAIN_OPS)
    assert (plain["G0-realtime"], plain["G1c-realtime"]) == ("forbidden", "forbidden")


def test_wr_only_cycles_stay_forbidden_but_at_read_uncommitted():
    committed = derive_profile({"txn": True, "isolation_level": "read_committed"}, TXN_OPS, True)
    assert judge({"G1c": [WR_ONLY_CYCLE]}, committed)["anomalies"]["G1c"]["status"] == "forbidden"
    uncommitted = derive_profile({"txn": True, "isolation_level": "read_uncommitted"}, TXN_OPS, True)
    assert judge({"G1c": [WR_ONLY_CYCLE]}, uncommitted)["anomalies"]["G1c"]["status"] == "allowed"


def test_no_linearizability_engine_at_read_uncommitted():
    assert linear_wanted(CheckedSpec.of({"txn": True, "isolation_level": "read_committed"}), {})
    assert not linear_wanted(CheckedSpec.of({"txn": True, "isolation_level": "read_uncommitted"}), {})
