"""Jepsen EDN histories: reading them (checkers/history/edn.py), the round trip with ``export --format edn``,
``kraftcheck check --history FILE.edn`` end to end, and clear errors for EDN that is not a Jepsen history."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import checkers.history.edn as history_edn
from checkers.analysis import check_run
from checkers.history.edn import mark_final_phase, read_edn_history, sniff_format
from checkers.history.export import to_edn
from checkers.history.jsonl import read_ops
from checkers.queue import queue_anomalies
from kraftcheck.commands.check import main as check_main
from tests.checkers.fixtures import GOLDEN
from tests.support.synth import synth_history

EXAMPLE = Path(__file__).parent / "data" / "jepsen_kafka_anomalies.edn"


def _jsonl(path, ops):
    path.write_text("".join(json.dumps(op) + "\n" for op in ops))
    return path


def _round_trip(tmp_path, ops):
    """ops -> history.jsonl -> (read) -> EDN -> (read): both reads, and the EDN reader's malformed list."""
    ref = read_ops(_jsonl(tmp_path / "h.jsonl", ops))
    edn = tmp_path / "h.edn"
    edn.write_text(to_edn(ref))
    bad: list = []
    return ref, read_edn_history(edn, bad), bad


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_export_then_read_gives_the_same_ops(tmp_path, name):
    ref, back, bad = _round_trip(tmp_path, GOLDEN[name][0])
    assert back == ref and bad == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10**6), st.sampled_from([0.0, 0.5]), st.sampled_from([0.0, 0.2]), st.booleans())
def test_round_trip_of_synthetic_histories(tmp_path, seed, p_txn, p_reassign, final):
    ops = synth_history(120, seed=seed, keys=3, p_txn=p_txn, p_reassign=p_reassign, final=final)
    ref, back, bad = _round_trip(tmp_path, ops)
    assert back == ref and bad == []
    assert queue_anomalies(back) == queue_anomalies(ref)


def test_the_fast_reader_and_edn_format_read_the_same(tmp_path, monkeypatch):
    """The fast EDN reader (checkers/history/edn_fast.py) against edn_format, the reference path."""
    ops = synth_history(150, seed=3, p_txn=0.5, p_reassign=0.2)
    text = to_edn(read_ops(_jsonl(tmp_path / "h.jsonl", ops)))
    text += EXAMPLE.read_text()
    (tmp_path / "both.edn").write_text(text)
    fast = read_edn_history(tmp_path / "both.edn")

    def refuse(text):
        raise ValueError("fast reader switched off")
    monkeypatch.setattr(history_edn, "loads_all", refuse)
    assert _sets_sorted(read_edn_history(tmp_path / "both.edn")) == _sets_sorted(fast)


def _sets_sorted(x):
    """EDN sets read as lists, in file order (fast reader) or hash order (edn_format): compare them sorted."""
    if isinstance(x, dict):
        return {k: _sets_sorted(v) for k, v in x.items()}
    if isinstance(x, list):
        items = [_sets_sorted(v) for v in x]
        return sorted(items) if all(isinstance(v, str) for v in items) else items
    return x


def test_jepsen_op_maps(tmp_path):
    """Keywords as keys and values, :nemesis, records, multi-line maps, several micro-ops, no :time."""
    path = tmp_path / "jepsen.edn"
    path.write_text(
        "{:type :invoke, :f :send, :value [[:send :x :a]], :time 10, :process 0, :index 0}\n"
        "#jepsen.history.Op{:type :ok, :f :send, :value [[:send :x [0 :a]]], :time 20, :process 0,\n"
        " :index 1}\n"
        "{:type :info, :f :start, :value #{\"n1\" \"n2\"}, :process :nemesis, :time 25, :index 2}\n"
        "{:type :invoke, :f :poll, :value [[:poll] [:poll]],\n :time 30, :process 1, :index 3}\n"
        "{:type :ok, :f :poll, :value [[:poll {:x [[0 :a]]}] [:poll {}]], :process 1, :index 4,\n"
        " :rebalance-log [{:keys [:x]}], :error [:timeout 3]}\n"
        "{:type :invoke, :f :assign, :value [:x], :process 1, :seek-to-beginning? true}\n")
    ops = read_edn_history(path)
    assert ops[0] == {"type": "invoke", "f": "send", "value": ["x", "a"], "time": 10, "process": 0,
                      "index": 0, "node": None, "error": None}
    assert ops[1]["value"] == ["x", [0, "a"]]
    assert ops[2]["process"] == "nemesis" and sorted(ops[2]["value"]) == ["n1", "n2"]
    assert ops[3]["value"] == [["poll"], ["poll"]]
    assert ops[4]["value"] == [["poll", {"x": [[0, "a"]]}], ["poll", {}]] and ops[4]["time"] == 30
    assert ops[4]["rebalance_log"] == [{"keys": ["x"]}] and ops[4]["error"] == '["timeout", 3]'
    assert ops[5]["seek_to_beginning"] is True and ops[5]["index"] == 5 and ops[5]["time"] == 30
    got = queue_anomalies(ops)
    assert not any(got[k] for k in got if k != "unseen") and got["unseen"] == []  # :a was read


def test_a_vector_of_op_maps(tmp_path):
    path = tmp_path / "vector.edn"
    path.write_text("[{:type :invoke, :f :send, :value [[:send 1 5]], :time 1, :process 0}\n"
                    " {:type :ok, :f :send, :value [[:send 1 [0 5]]], :time 2, :process 0}]\n")
    assert [op["value"] for op in read_edn_history(path)] == [[1, 5], [1, [0, 5]]]


def test_bad_entries_are_listed_and_the_rest_is_read(tmp_path):
    path = tmp_path / "torn.edn"
    path.write_text("{:type :invoke, :f :send, :value [[:send 1 5]], :time 1, :process 0}\n"
                    "{:valid? true}\n"
                    "{:type :bogus, :f :send, :time 3, :process 0}\n"
                    "{:type :ok, :f :send, :value [[:send 1 [0 5]]], :time 2, :process 0}\n"
                    "{:type :ok, :f :poll, :value [[:poll {1 [[0")
    bad: list = []
    ops = read_edn_history(path, bad)
    assert [op["type"] for op in ops] == ["invoke", "ok"]
    assert [(m.line, m.reason.split(" (")[0]) for m in bad] == [
        (2, "not a Jepsen op map"), (3, "bad :type 'bogus'"), (5, "not EDN")]


@pytest.mark.parametrize("text, says", [
    ("{:valid? true, :anomaly-types [:G1c]}\n", "not a Jepsen history: not a Jepsen op map"),
    ('{"type": "ok", "process": 0, "f": "poll", "time": 1}\n', "not a Jepsen history: JSON, not EDN"),
    ("[1 2 3]\n", "not a Jepsen history: not a Jepsen op map"),
    ("[{:type :ok", "not EDN"),
])
def test_edn_that_is_not_a_jepsen_history_is_a_clear_error(tmp_path, capsys, text, says):
    path = tmp_path / "results.edn"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"results.edn: {says}"):
        read_edn_history(path)
    assert check_main(["--history", str(path), "--no-linear"]) == 255
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"kraftcheck check: {path}: ")


def test_format_by_extension_or_content(tmp_path):
    edn = tmp_path / "history.txt"
    edn.write_text("\n  {:type :invoke, :f :poll}\n")
    rec = tmp_path / "history"
    rec.write_text("#jepsen.history.Op{:type :invoke}\n")
    vec = tmp_path / "h"
    vec.write_text("[\n{:index 0}]")
    js = tmp_path / "h.jsonl"
    js.write_text('{"type": "invoke"}\n')
    arr = tmp_path / "h.json"
    arr.write_text('[\n{"type": "invoke"}]\n')
    named = tmp_path / "x.edn"
    named.write_text('{"type": "invoke"}\n')
    got = [sniff_format(p) for p in (edn, rec, vec, js, arr, named)]
    assert got == ["edn", "edn", "edn", "jsonl", "jsonl", "edn"]


def test_jepsen_final_phase_is_recognised():
    ops = read_edn_history(EXAMPLE)
    finals = [op["index"] for op in ops if op.get("final")]
    assert finals == list(range(52, 60))  # process 4's assign with seek and its polls
    # a history that marks its final ops itself is left alone, and so is one without Jepsen's final generator
    marked = [dict(op) for op in ops]
    assert mark_final_phase(marked) == 0
    plain = [{k: v for k, v in op.items() if k != "final"} for op in ops
             if op["f"] != "debug-topic-partitions"]
    assert mark_final_phase(plain) == 0


def test_check_of_a_jepsen_history_reports_what_jepsens_checker_reports():
    """The example (tests/checkers/data/jepsen_kafka_anomalies.edn) is written from jepsen.tests.kafka's
    definitions. Jepsen's checker, by those definitions, gives :error-types G1a, G1c (ops 42/43 read each
    other's write), int-poll-skip (the final read of key 1 skips value 2), int-send-skip (value 21 between
    the sends of op 39), lost-write (key 1, value 2), poll-skip (process 1, key 1) and unseen (values 2
    and 70); G0 (ops 38/39) only with :ww-deps. The test ran with subscribe (:sub-via), so poll-skip is
    allowed and :valid? is false for G1a, G1c, int-poll-skip, lost-write and unseen. Process 3's second
    read of key 3 after subscribe [2] then [2 3] is no nonmonotonic-poll (the v2 checker reported one)."""
    res = check_run({}, str(EXAMPLE), None)
    queue = res["checkers"]["queue"]
    assert res["valid"] is False and res["malformed"] == []
    assert set(queue["anomaly_types"]) == {"G1a", "G1c", "int-poll-skip", "int-send-skip", "lost-write",
                                           "poll-skip", "unseen", "G0", "acked-unreadable"}
    assert set(queue["violations"]) == {"G1a", "G1c", "int-poll-skip", "lost-write", "unseen",
                                        "acked-unreadable"}
    unseen = queue["anomalies"]["unseen"]["examples"]
    assert [(u["key"], u["value"]) for u in unseen] == [(1, 2), (7, 70)]
    assert res["checkers"]["linear"]["valid"] is False  # the engine ran on the converted ops
    jepsen = check_run({}, str(EXAMPLE), None, profile="jepsen", options={"linear": False})
    jepsen = jepsen["checkers"]["queue"]
    assert set(jepsen["violations"]) == {"G1a", "G1c", "int-poll-skip", "lost-write", "unseen"}


def test_check_cli_on_edn_and_on_its_export(tmp_path):
    """``kraftcheck check --history F.edn`` through the dispatcher; the same history as JSONL, exported back
    to EDN, gives the same verdict and anomalies."""
    run = [sys.executable, "-m", "kraftcheck.cli", "check", "--no-linear", "--json", "--history"]
    proc = subprocess.run(run + [str(EXAMPLE)], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    direct = json.loads(proc.stdout)["checkers"]["queue"]
    ops = read_edn_history(EXAMPLE)
    again = tmp_path / "again.edn"
    again.write_text(to_edn(read_ops(_jsonl(tmp_path / "h.jsonl", ops))))
    proc = subprocess.run(run + [str(again)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["checkers"]["queue"]["anomalies"] == direct["anomalies"]
