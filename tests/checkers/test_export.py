"""Exports: EDN and Jepsen JSON round-trip through independent readers and keep the checker's verdict."""

import json
import subprocess
import sys

import edn_format
import pytest

from checkers.history.export import jepsen_op, to_edn, to_jepsen_json
from checkers.linear.formats import read_edn
from harness.history import iter_history
from tests.checkers.fixtures import GOLDEN
from tests.support.synth import synth_history


def test_jepsen_encoding_of_single_ops():
    send = {"index": 1, "time": 2, "type": "ok", "process": 0, "f": "send", "value": [3, [0, 9]]}
    assert jepsen_op(send)["value"] == [["send", 3, [0, 9]]]
    poll = {"index": 3, "time": 4, "type": "ok", "process": 0, "f": "poll", "value": {"3": [[0, 9]]}}
    assert jepsen_op(poll)["value"] == [["poll", {3: [[0, 9]]}]]
    inv = {"index": 2, "time": 3, "type": "invoke", "process": 0, "f": "poll", "value": None}
    assert jepsen_op(inv)["value"] == [["poll"]]


def test_edn_is_read_by_edn_format_with_keywords():
    ops = GOLDEN["G1c"][0] + [{"index": 99, "time": 99, "type": "info", "process": "nemesis", "f": "kill",
                               "value": {"effective": True}, "node": "b1", "error": None, "final": True}]
    text = to_edn(ops)
    first = edn_format.loads(text.splitlines()[0])
    K = edn_format.Keyword
    assert first[K("type")] == K("invoke") and first[K("f")] == K("txn")
    assert list(first[K("value")][0]) == [K("poll")]
    last = edn_format.loads(text.splitlines()[-1])
    assert last[K("process")] == K("nemesis") and last[K("final")] is True
    # and our fast reader gives back the same ops as jepsen_op produced
    back = read_edn(text)
    assert back[2]["value"] == [["poll", {2: [[0, 21]]}], ["send", 1, [0, 10]]]


def test_json_export_is_valid_json_array():
    ops = synth_history(50, seed=1)
    arr = json.loads(to_jepsen_json(ops))
    assert len(arr) == len(ops)
    assert all(op["f"] != "send" or op["value"][0][0] == "send" for op in arr)


def test_export_cli(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(op) + "\n" for op in GOLDEN["unseen"][0]) + "{bad\n")
    proc = subprocess.run([sys.executable, "-m", "kraftcheck.cli", "export", "--history", str(path), "--format",
                           "edn"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout.count("\n") == 2 and ":f :send" in proc.stdout
    assert "malformed line" in proc.stderr and ":3:" in proc.stderr


def export(*argv):
    return subprocess.run([sys.executable, "-m", "kraftcheck.cli", "export", *argv], capture_output=True,
                          text=True)


def test_export_refuses_unusable_inputs_with_one_line(tmp_path):
    good = tmp_path / "h.jsonl"
    good.write_text("".join(json.dumps(op) + "\n" for op in GOLDEN["unseen"][0]))
    edn = tmp_path / "h.edn"
    edn.write_text(to_edn(GOLDEN["unseen"][0]))
    garbage = tmp_path / "g.jsonl"
    garbage.write_text("nothing here\n")
    cases = [(["--store", str(tmp_path)], "--store needs --format parquet"),
             (["--history", str(tmp_path / "none.jsonl")], "--history"),
             (["--history", str(tmp_path / "none.jsonl"), "--format", "parquet"], "no such file"),
             (["--history", str(edn), "--format", "parquet"], "EDN history"),
             (["--history", str(edn)], "EDN history"),
             (["--history", str(garbage)], "no line of it is a history op"),
             (["--history", str(garbage), "--format", "parquet"], "no line of it is a history op")]
    for argv, needle in cases:
        proc = export(*argv)
        last = proc.stderr.strip().splitlines()[-1]
        assert proc.returncode == 2 and needle in last and not proc.stdout, (argv, proc.stderr)
    assert not list(tmp_path.glob("*.parquet"))
    run = tmp_path / "store" / "queue" / "r1"
    run.mkdir(parents=True)
    (run / "history.jsonl").write_text("nothing here\n")
    proc = export("--store", str(tmp_path / "store"), "--format", "parquet")
    assert proc.returncode == 2 and "no line of it is a history op" in proc.stderr
    assert not (run / "history.parquet").exists()


def test_export_counts_malformed_lines(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(op) + "\n" for op in GOLDEN["unseen"][0]) + "{bad\n" * 500)
    proc = export("--history", str(path), "--format", "json")
    assert proc.returncode == 0 and len(json.loads(proc.stdout)) == len(GOLDEN["unseen"][0])
    assert len(proc.stderr.splitlines()) == 6 and "495 more malformed lines (500 in all)" in proc.stderr


def test_parquet_export_of_a_history_and_of_a_store(tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow comes with the optional 'spark' extra")
    from checkers.history.parquet import read_ops

    runs = []
    for n, stamp in enumerate(["20261122T100000.000Z", "20261122T100100.000Z"]):
        run = tmp_path / "store" / "queue" / stamp
        run.mkdir(parents=True)
        (run / "history.jsonl").write_text("".join(json.dumps(op) + "\n" for op in synth_history(40, seed=n))
                                           + "{bad\n")
        runs.append(run)
    (tmp_path / "store" / "latest").symlink_to(runs[-1])
    first = runs[0] / "history.jsonl"
    proc = export("--history", str(first), "--format", "parquet")
    assert proc.returncode == 0, proc.stderr
    assert "key rows" in proc.stdout and "malformed line" in proc.stderr
    assert read_ops(runs[0] / "history.parquet")[0] == list(iter_history(first))
    again = export("--history", str(first), "--format", "parquet")
    assert again.returncode == 2 and "--force" in again.stderr
    assert export("--history", str(first), "--format", "parquet", "--verify").returncode == 0

    proc = export("--store", str(tmp_path / "store"), "--format", "parquet")
    assert proc.returncode == 0, proc.stderr
    assert "2 runs: 1 written, 1 already current, 0 not written" in proc.stdout
    assert (runs[1] / "history.parquet" / "manifest.json").is_file()

    with open(first, "a") as fh:  # the history grew: the columnar form no longer matches
        fh.write(json.dumps({"index": 999, "time": 10**9, "type": "invoke", "process": 1, "f": "poll"}) + "\n")
    proc = export("--store", str(tmp_path / "store"), "--format", "parquet", "--verify")
    assert proc.returncode == 1 and "1 differ" in proc.stdout
    proc = export("--store", str(tmp_path / "store"), "--format", "parquet", "--force")
    assert proc.returncode == 0 and "2 written" in proc.stdout
    assert export("--history", str(first), "--format", "parquet", "--verify").returncode == 0


def test_parquet_export_refuses_values_that_are_not_integers(tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow comes with the optional 'spark' extra")
    path = tmp_path / "history.jsonl"
    path.write_text(json.dumps({"index": 0, "time": 1, "type": "invoke", "process": 0, "f": "send",
                                "value": ["k", 1]}) + "\n")
    proc = export("--history", str(path), "--format", "parquet")
    assert proc.returncode == 2 and "key 'k' is not a 64-bit integer" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.jsonl"]
