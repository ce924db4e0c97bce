"""Guarantee profiles, check_run and the ``kraftcheck check`` command."""

import json
import subprocess
import sys

from checkers.analysis import check_run
from checkers.cli import main as check_main
from checkers.profiles import apply_override, derive_profile
from checkers.synth import synth_history
from tests.checkers.fixtures import GOLDEN

LOSSY = [{"index": 100, "time": 1, "type": "invoke", "process": "nemesis", "f": "power-loss", "value": None},
         {"index": 101, "time": 2, "type": "ok", "process": "nemesis", "f": "power-loss",
          "value": {"effective": True}}]


def write(path, ops, extra_lines=()):
    with open(path, "w") as fh:
        for op in ops:
            fh.write(json.dumps(op) + "\n")
        for line in extra_lines:
            fh.write(line + "\n")
    return str(path)


def test_default_profile_forbids_loss():
    prof = derive_profile({}, [], has_final=True)
    assert prof["statuses"]["lost-write"] == "forbidden"
    assert prof["statuses"]["unseen"] == "forbidden"
    assert prof["statuses"]["G0"] == "allowed"


def test_lrs_is_known_issue_under_v35_and_violation_under_kip966():
    v35 = derive_profile({"variant": "v3.5", "min_isr": 2}, LOSSY, has_final=True)
    assert v35["statuses"]["acked-unreadable"] == "known-issue"
    repro = derive_profile({"variant": "v3.5", "test_name": "last-replica-standing"}, LOSSY, True)
    assert repro["statuses"]["lost-write"] == "expected"
    kip = derive_profile({"variant": "kip966", "min_isr": 2}, LOSSY, has_final=True)
    assert kip["statuses"]["acked-unreadable"] == "forbidden"
    flushed = derive_profile({"variant": "v3.5", "flush_messages": 1}, LOSSY, True)
    assert flushed["statuses"]["acked-unreadable"] == "forbidden"


def test_acks_one_and_unclean_election_allow_loss():
    assert derive_profile({"acks": 1}, [], True)["statuses"]["lost-write"] == "allowed"
    assert derive_profile({"unclean_leader_election": True}, [], True)["statuses"]["lost-write"] == "allowed"
    assert derive_profile({"acks": 1}, [], True)["statuses"]["G1a"] == "forbidden"


def test_unseen_is_unknown_without_final_phase():
    assert derive_profile({}, [], has_final=False)["statuses"]["unseen"] == "unknown"


def test_override():
    prof = derive_profile({"acks": 1}, [], True)
    assert apply_override(prof, "strict")["statuses"]["lost-write"] == "forbidden"
    assert apply_override(prof, "duplicate=forbidden")["statuses"]["duplicate"] == "forbidden"


def test_check_run_verdicts(tmp_path):
    ok = write(tmp_path / "ok.jsonl", synth_history(200, seed=1))
    res = check_run({}, ok, None, options={"linear": False})
    assert res["valid"] is True and res["checkers"]["queue"]["valid"] is True
    lost = write(tmp_path / "lost.jsonl", GOLDEN["lost-write"][0])
    res = check_run({}, lost, None, options={"linear": False})
    assert res["valid"] is False
    assert res["checkers"]["queue"]["violations"] == ["lost-write"]
    # the same loss is the known LRS issue under v3.5 with power loss
    res = check_run({"variant": "v3.5"}, write(tmp_path / "lrs.jsonl", GOLDEN["lost-write"][0] + LOSSY),
                    None, options={"linear": False})
    assert res["checkers"]["queue"]["valid"] is True
    assert res["checkers"]["queue"]["known_issues"] == ["lost-write"]
    unseen = write(tmp_path / "unseen.jsonl", GOLDEN["unseen"][0])
    assert check_run({}, unseen, None, options={"linear": False})["valid"] == "unknown"


def test_malformed_lines_reported_rest_checked(tmp_path, capsys):
    path = write(tmp_path / "h.jsonl", GOLDEN["lost-write"][0], ["{not json", '{"type": "bogus"}'])
    code = check_main(["--history", path, "--json", "--no-linear"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [m["line"] for m in out["malformed"]] == [len(GOLDEN["lost-write"][0]) + 1, len(GOLDEN["lost-write"][0]) + 2]
    assert out["checkers"]["queue"]["violations"] == ["lost-write"]


def test_exit_codes_via_dispatcher(tmp_path):
    ok = write(tmp_path / "ok.jsonl", synth_history(50, seed=2))
    unseen = write(tmp_path / "unseen.jsonl", GOLDEN["unseen"][0])
    run = [sys.executable, "-m", "harness.cli", "check", "--no-linear", "--history"]
    assert subprocess.run(run + [ok], capture_output=True).returncode == 0
    assert subprocess.run(run + [unseen], capture_output=True).returncode == 2
    assert subprocess.run(run + [str(tmp_path / "missing.jsonl")], capture_output=True).returncode == 255


def test_a_raising_checker_is_unknown_not_a_crash(tmp_path, monkeypatch):
    import checkers.queue_checker as qc

    def boom(*a, **k):
        raise RuntimeError("broken")
    monkeypatch.setattr(qc, "anomalies_of", boom)
    res = check_run({}, write(tmp_path / "h.jsonl", GOLDEN["unseen"][0]), None, options={"linear": False})
    assert res["checkers"]["queue"]["valid"] == "unknown"
    assert "broken" in res["checkers"]["queue"]["error"]


def test_recovery_deadline_from_the_final_phase():
    from checkers.queue_checker import QueueChecker, recovery_deadline
    from tests.checkers.fixtures import build, poll, send
    rows = [*send(0, 1, 1, 0), *poll(1, {1: [(0, 1)]}, extra={"final": True})]
    ops = build(*rows)  # the final poll is invoked at t=20 and completes at t=30 (ns)
    assert recovery_deadline({"final_read_timeout_s": 1}, ops) == 20 + 10**9
    assert QueueChecker().check({"final_read_timeout_s": 1}, ops, [])["valid"] is True
    # a final read that completes after the deadline does not count: the value is unseen -> invalid
    late = QueueChecker().check({"final_read_timeout_s": 5e-9}, ops, [])
    assert late["valid"] is False and late["violations"] == ["unseen"]


def test_check_with_trace_counts_invariants(tmp_path, capsys):
    from tests.checkers.fixtures import build, poll, send
    from tests.checkers.test_invariants import healthy, lrs
    # key 5 has no partition in the trace, so only the trace-only invariants decide
    hist = write(tmp_path / "h.jsonl", build(*send(0, 5, 1, 0), *poll(1, {5: [(0, 1)]})))
    # the small healthy trace leaves some invariants without data (unknown, exit 2); LRS violates (exit 1)
    for name, trace, expected in (("ok", healthy(), 2), ("lrs", lrs(), 1)):
        tpath = tmp_path / f"{name}.trace.jsonl"
        tpath.write_text("".join(json.dumps({k: v for k, v in e.items() if k != "_line"}) + "\n" for e in trace)
                         + "not json\n")
        code = check_main(["--history", hist, "--trace", str(tpath), "--json", "--no-linear"])
        out = json.loads(capsys.readouterr().out)
        assert code == expected, out["checkers"]["invariants"]["violated"]
        assert out["malformed"][-1]["line"] == len(trace) + 1  # the trace's bad line, by number
        assert out["checkers"]["invariants"].get("counted", True) is True


def test_whole_check_with_linearizability_on_valid_and_broken_histories(tmp_path):
    # Every checker, the linearizability subprocess included: valid synthetic histories (with txn ops and
    # the offset gaps their markers leave, and without txn) pass; swapped acknowledged offsets do not.
    import random

    from checkers.synth import mutate

    for name, ops in (("txn", synth_history(300, seed=5, p_txn=0.2, p_gap=0.1)),
                      ("plain", synth_history(300, seed=6, p_txn=0.0, p_gap=0.0))):
        res = check_run({}, write(tmp_path / f"{name}.jsonl", ops), None)
        assert res["valid"] is True, (name, res["checkers"]["linear"])
        assert res["checkers"]["linear"]["valid"] is True
        assert res["checkers"]["linear"]["model"] == ("kafka-log-gaps" if name == "txn" else "kafka-log")
        broken, _ = mutate(ops, "swap-offsets", random.Random(1))
        res = check_run({}, write(tmp_path / f"{name}-broken.jsonl", broken), None)
        assert res["checkers"]["linear"]["valid"] is False
