"""Guarantee profiles, check_run and the ``kraftcheck check`` command."""

import json
import subprocess
import sys

from checkers.analysis import check_run
from checkers.queue.profiles import apply_override, derive_profile
from kraftcheck.commands.check import main as check_main
from tests.checkers.fixtures import GOLDEN
from tests.support.synth import synth_history

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
    run = [sys.executable, "-m", "kraftcheck.cli", "check", "--no-linear", "--history"]
    assert subprocess.run(run + [ok], capture_output=True).returncode == 0
    assert subprocess.run(run + [unseen], capture_output=True).returncode == 2
    assert subprocess.run(run + [str(tmp_path / "missing.jsonl")], capture_output=True).returncode == 2


def test_a_raising_checker_is_unknown_not_a_crash(tmp_path, monkeypatch):
    import checkers.queue.checker as qc

    def boom(*a, **k):
        raise RuntimeError("broken")
    monkeypatch.setattr(qc, "anomalies_of", boom)
    res = check_run({}, write(tmp_path / "h.jsonl", GOLDEN["unseen"][0]), None, options={"linear": False})
    assert res["checkers"]["queue"]["valid"] == "unknown"
    assert "broken" in res["checkers"]["queue"]["error"]


def test_recovery_deadline_from_the_final_phase():
    from checkers.queue.checker import QueueChecker, recovery_deadline
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

    from tests.support.synth import mutate

    for name, ops in (("txn", synth_history(300, seed=5, p_txn=0.2, p_gap=0.1)),
                      ("plain", synth_history(300, seed=6, p_txn=0.0, p_gap=0.0))):
        res = check_run({}, write(tmp_path / f"{name}.jsonl", ops), None)
        assert res["valid"] is True, (name, res["checkers"]["linear"])
        assert res["checkers"]["linear"]["valid"] is True
        assert res["checkers"]["linear"]["model"] == ("kafka-log-gaps" if name == "txn" else "kafka-log")
        broken, _ = mutate(ops, "swap-offsets", random.Random(1))
        res = check_run({}, write(tmp_path / f"{name}-broken.jsonl", broken), None)
        assert res["checkers"]["linear"]["valid"] is False


# -- strict inputs: one line naming the flag, exit 2 -----------------------------------------------------

def check_error(capsys, argv):
    """Run ``kraftcheck check`` expecting an input error; return its one stderr line."""
    code = check_main(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and not captured.out, (code, captured)
    assert lines[0].startswith("kraftcheck check: error: ")
    return lines[0]


def test_a_missing_trace_is_an_error_not_a_run_without_trace(tmp_path, capsys):
    ok = write(tmp_path / "ok.jsonl", synth_history(50, seed=2))
    line = check_error(capsys, ["--history", ok, "--trace", str(tmp_path / "trace.jsonl"), "--no-linear"])
    assert "--trace" in line and "trace.jsonl: no such file" in line


def test_missing_or_unreadable_history_and_spec(tmp_path, capsys):
    ok = write(tmp_path / "ok.jsonl", synth_history(50, seed=2))
    assert "--history" in check_error(capsys, ["--history", str(tmp_path / "none.jsonl")])
    assert "is a directory" in check_error(capsys, ["--history", str(tmp_path)])
    line = check_error(capsys, ["--history", ok, "--spec", str(tmp_path / "spec.json")])
    assert "--spec" in line and "no such file" in line
    assert "is a directory" in check_error(capsys, ["--history", ok, "--trace", str(tmp_path)])


def test_a_malformed_spec_names_the_file(tmp_path, capsys):
    ok = write(tmp_path / "ok.jsonl", synth_history(50, seed=2))
    spec = tmp_path / "spec.json"
    cases = [("{torn", "not valid JSON"), ("[]", "must be a JSON object"),
             ('{"acks": "most"}', "acks"), ('{"min_isr": "2"}', "min_isr"), ('{"min-isr": 2}', "unknown spec key"),
             ('{"nemesis": "kill,meteor"}', "meteor"), ('{"flush_messages": NaN}', "NaN")]
    for text, needle in cases:
        spec.write_text(text)
        line = check_error(capsys, ["--history", ok, "--spec", str(spec), "--no-linear"])
        assert "--spec" in line and str(spec) in line and needle in line, line


def test_a_valid_partial_spec_is_used(tmp_path, capsys):
    lost = write(tmp_path / "lost.jsonl", GOLDEN["lost-write"][0])
    spec = tmp_path / "spec.json"
    spec.write_text('{"acks": 1}')
    assert check_main(["--history", lost, "--spec", str(spec), "--no-linear", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["profile"]["statuses"]["lost-write"] == "allowed"


def test_a_history_with_no_usable_line_is_an_error(tmp_path, capsys):
    for name, text in (("empty.jsonl", ""), ("blank.jsonl", "\n\n"), ("garbage.jsonl", "not json\n{}\n[1]\n"),
                       ("csv.jsonl", "index,time,type\n0,1,invoke\n")):
        (tmp_path / name).write_text(text)
        line = check_error(capsys, ["--history", str(tmp_path / name), "--no-linear"])
        assert "--history" in line and name in line and "no line of it is a history op" in line


def test_bad_profile_and_time_limit_are_usage_errors(tmp_path, capsys):
    ok = write(tmp_path / "ok.jsonl", synth_history(50, seed=2))
    assert "unknown status" in check_error(capsys, ["--history", ok, "--profile", "lost-write=fine"])
    assert "--linear-time-limit" in check_error(capsys, ["--history", ok, "--linear-time-limit", "nan"])


def test_thousands_of_malformed_lines_are_counted_not_listed(tmp_path, capsys):
    path = write(tmp_path / "h.jsonl", GOLDEN["lost-write"][0], ["{not json"] * 3000)
    assert check_main(["--history", path, "--no-linear"]) == 1
    captured = capsys.readouterr()
    assert len(captured.err.splitlines()) == 6 and "2995 more malformed lines (3000 in all)" in captured.err
    assert sum("malformed" in line for line in captured.out.splitlines()) == 6


S = 1_000_000_000


def lossy_op(f, nodes, start, end, index=200, partitions=("queue-0",)):
    """A lossy fault on ``nodes`` invoked at ``start`` s and completed at ``end`` s (with its evidence)."""
    value = {"nodes": nodes, "effective": True, "leo_before": {n: {p: 5 for p in partitions} for n in nodes}}
    return [{"index": index, "time": start * S, "type": "invoke", "process": "nemesis", "f": f, "value": {}},
            {"index": index + 1, "time": end * S, "type": "ok", "process": "nemesis", "f": f, "value": value}]


def heal(nodes, at, index=300):
    return [{"index": index, "time": at * S, "type": "invoke", "process": "nemesis", "f": "start", "value": {}},
            {"index": index + 1, "time": at * S, "type": "ok", "process": "nemesis", "f": "start",
             "value": {"nodes": nodes}}]


KIP = {"variant": "kip966", "min_isr": 2, "replica_lag_time_max_ms": 1000}


def test_sequential_power_losses_stay_forbidden():
    # three power losses, one node each, each healed (restart + 1 s lag window) before the next
    ops = lossy_op("power-loss", ["n1"], 10, 12) + lossy_op("power-loss", ["n2"], 20, 22, 210) + \
        lossy_op("power-loss", ["n3"], 30, 32, 220)
    prof = derive_profile(KIP, ops, has_final=True)
    assert prof["statuses"]["lost-write"] == "forbidden"
    assert "at most 1 replica(s)" in prof["reasons"]["lost-write"]


def test_overlapping_losses_of_min_isr_replicas_are_allowed():
    # n1 loses power; before its lag window after the restart is over, n2 loses power too
    ops = lossy_op("power-loss", ["n1"], 10, 12) + lossy_op("power-loss", ["n2"], 12.5, 14, 210)
    prof = derive_profile(KIP, ops, has_final=True)
    assert prof["statuses"]["lost-write"] == "allowed"
    assert "n1, n2" in prof["reasons"]["lost-write"] and "partition 0" in prof["reasons"]["lost-write"]
    # one op hitting two nodes at once (correlated power loss) is one window with both
    both = derive_profile(KIP, lossy_op("power-loss", ["n1", "n2"], 10, 12), has_final=True)
    assert both["statuses"]["lost-write"] == "allowed"


def test_losses_on_different_partitions_do_not_add_up():
    ops = lossy_op("power-loss", ["n1"], 10, 12, partitions=("queue-0",)) + \
        lossy_op("power-loss", ["n2"], 11, 13, 210, partitions=("queue-1",))
    assert derive_profile(KIP, ops, has_final=True)["statuses"]["lost-write"] == "forbidden"


def test_lose_unsynced_lasts_until_the_node_restarts():
    # n1 drops unsynced data but keeps running: the loss is in place until its restart
    ops = lossy_op("lose-unsynced", ["n1"], 10, 10.1) + lossy_op("power-loss", ["n2"], 40, 42, 210)
    assert derive_profile(KIP, ops, has_final=True)["statuses"]["lost-write"] == "allowed"
    healed = lossy_op("lose-unsynced", ["n1"], 10, 10.1) + heal(["n1"], 20) + \
        lossy_op("power-loss", ["n2"], 40, 42, 210)
    assert derive_profile(KIP, healed, has_final=True)["statuses"]["lost-write"] == "forbidden"


def test_crash_lossy_counts_as_a_lossy_fault_with_its_own_window():
    # two crash-lossy ops on replicas of one partition whose windows overlap: beyond KIP-966's tolerance
    ops = lossy_op("crash-lossy", ["b1"], 10, 12) + lossy_op("crash-lossy", ["b2"], 12.5, 14, 210)
    assert derive_profile(KIP, ops, has_final=True)["statuses"]["lost-write"] == "allowed"
    apart = lossy_op("crash-lossy", ["b1"], 10, 12) + lossy_op("crash-lossy", ["b2"], 30, 32, 210)
    assert derive_profile(KIP, apart, has_final=True)["statuses"]["lost-write"] == "forbidden"
    # v3.5: a lossy crash is what Last Replica Standing needs
    v35 = derive_profile({"variant": "v3.5", "min_isr": 2}, apart, has_final=True)
    assert v35["statuses"]["lost-write"] == "known-issue"


def test_a_lossy_crash_of_the_controller_or_with_nothing_dropped_opens_no_window():
    controller = lossy_op("crash-lossy", ["controller"], 10, 12, partitions=())
    nothing = lossy_op("crash-lossy", ["b2"], 12.5, 14, 210)
    nothing[1]["value"]["dropped_bytes"] = {"b2": 0}
    ops = controller + lossy_op("crash-lossy", ["b1"], 11, 13, 220) + nothing
    assert derive_profile(KIP, ops, has_final=True)["statuses"]["lost-write"] == "forbidden"
    nothing[1]["value"]["dropped_bytes"] = {"b2": 120}
    assert derive_profile(KIP, ops, has_final=True)["statuses"]["lost-write"] == "allowed"
