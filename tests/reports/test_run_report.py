"""Unit tests of reports.run_report on hand-built stores (no cluster)."""

import base64
import json
import re

from harness.history import HistoryWriter
from reports.run_report import anomalies, counts, latency_points, nemesis_intervals, render, write_report


def ops_fixture():
    return [
        {"index": 0, "time": 1_000_000_000, "type": "invoke", "process": 0, "f": "send", "value": [0, 1]},
        {"index": 1, "time": 1_005_000_000, "type": "ok", "process": 0, "f": "send", "value": [0, [0, 1]]},
        {"index": 2, "time": 2_000_000_000, "type": "invoke", "process": "nemesis", "f": "kill", "value": {}},
        {"index": 3, "time": 2_100_000_000, "type": "ok", "process": "nemesis", "f": "kill",
         "value": {"effective": True}},
        {"index": 4, "time": 2_500_000_000, "type": "invoke", "process": 1, "f": "send", "value": [0, 2]},
        {"index": 5, "time": 4_500_000_000, "type": "info", "process": 1, "f": "send", "value": [0, [None, 2]]},
        {"index": 6, "time": 5_000_000_000, "type": "invoke", "process": "nemesis", "f": "start", "value": {}},
        {"index": 7, "time": 5_200_000_000, "type": "ok", "process": "nemesis", "f": "start", "value": {}},
        {"index": 8, "time": 6_000_000_000, "type": "invoke", "process": 9, "f": "poll", "value": None,
         "final": True},
        {"index": 9, "time": 6_100_000_000, "type": "ok", "process": 9, "f": "poll", "value": {"0": [[0, 1]]},
         "final": True},
    ]


def test_nemesis_intervals_from_fault_to_heal():
    assert nemesis_intervals(ops_fixture()) == [(2_000_000_000, 5_200_000_000, "kill")]
    unhealed = ops_fixture()[:4]
    assert nemesis_intervals(unhealed, end_ns=9_000_000_000) == [(2_000_000_000, 9_000_000_000, "kill")]


def test_latency_points_and_counts():
    points = latency_points(ops_fixture())
    assert [(round(p[1]), p[2]) for p in points] == [(5, "ok"), (2000, "info"), (100, "ok")]
    c = counts(ops_fixture())
    assert c["send"]["ok"] == 1 and c["send"]["info"] == 1 and c["poll (final)"]["ok"] == 1
    assert c["nemesis:kill"]["ok"] == 1


def test_anomalies_found_in_either_shape():
    results = {"checkers": {
        "queue": {"valid": False, "anomalies": {"lost-write": [{"key": 0, "value": 2, "writer": 5}],
                                                "duplicate": []}},
        "invariants": {"valid": False, "invariants": {"I1": {"valid": False, "violations": [{"detail": "x"}]},
                                                      "I2": {"valid": True, "violations": []}}},
        "other": {"valid": False, "errors": [{"op": 1}], "profile": {"statuses": [{"a": 1}]}}}}
    found = anomalies(results)
    assert [(c, k, len(e)) for c, k, e in found] == [
        ("invariants", "invariants/I1", 1), ("other", "errors", 1), ("queue", "lost-write", 1)]


def test_report_is_self_contained_with_verdict_plot_and_ops(tmp_path):
    with HistoryWriter(tmp_path / "history.jsonl") as writer:
        for op in ops_fixture():
            writer.append({k: v for k, v in op.items() if k != "index"})
    (tmp_path / "spec.json").write_text(json.dumps({"test_name": "t", "seed": 5, "nemesis": ["kill"]}))
    (tmp_path / "results.json").write_text(json.dumps({
        "valid": False, "checkers": {"queue": {"valid": False, "anomalies": {
            "lost-write": [{"key": 0, "value": 2, "writer": 5}]}}},
        "coverage": {"kill": {"requested": True, "attempted": 1, "effective": 1, "failed": 0}}}))
    path = write_report(tmp_path)
    text = path.read_text()
    assert "<p class='verdict' style='color:#cf222e'>invalid</p>" in text
    assert "lost-write" in text and "Fault coverage" in text
    assert "http://" not in text and "https://" not in text  # no external assets
    png = text.split("data:image/png;base64,")[1].split("'")[0]
    assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"
    # the anomaly row shows the op it names (index 5, the info send)
    assert "#5 info p1 send <mark>[0, [null, 2]]</mark>" in text


def test_render_without_history_or_results():
    text = render({}, [], {})
    assert "<p class='verdict' style='color:#9a6700'>unknown</p>" in text and "No client ops" in text


# -- the sections added for readers (issue 15, section 4), on the synthetic store of store_fixture ---------


def _images(text):
    return {alt: base64.b64decode(data)[:8] for alt, data in
            re.findall(r"<img alt='([^']+)' class='plot' src='data:image/png;base64,([^']+)'", text)}


def test_report_sections_on_a_checked_run(tmp_path):
    from .store_fixture import INVALID_RUN, build_store

    root = build_store(tmp_path)
    run_dir = root / INVALID_RUN
    text = write_report(run_dir, tmp_path / "copy.html").read_text()
    assert not (run_dir / "report.html").exists()  # written where asked, the store untouched
    # plots: throughput, latency and the partition timeline, all embedded PNGs
    assert set(_images(text)) == {"throughput", "latency", "partition timeline"}
    assert all(head == b"\x89PNG\r\n\x1a\n" for head in _images(text).values())
    # run facts: date, duration, store path, links to the files that exist, the replay command
    assert "2026-11-22 10:00:00 UTC" in text and f"<code>{run_dir}</code>" in text
    links = re.findall(r"<a href='([^']+)'>", text)
    assert links == ["spec.json", "results.json", "history.jsonl", "trace.jsonl", "harness.log",
                     "nodes/b1/node.log"]
    assert all((run_dir / link).is_file() for link in links)
    assert f"kraftcheck run --replay {run_dir}/spec.json" in text
    # the guarantee profile says why, and counts what this run showed
    profile_rows = text.split("id='profile-table'>")[1].split("</table>")[0]
    assert "<td>int-poll-skip</td><td>forbidden</td>" in profile_rows and "<td>1</td>" in profile_rows
    # the fault, labelled with what was done to which node, with its effect on the clients
    faults_rows = text.split("id='faults-table'>")[1].split("</table>")[0]
    assert "start-partition majority-minority b1 | b2,b3" in faults_rows
    assert "Latency quantiles of ok ops" in text and "Client errors by Kafka error code" in text
    assert "kraftcheck-0: 3 committed states" in text


def test_scenario_block_comes_from_results_json(tmp_path):
    from .store_fixture import LRS_V35, build_store

    root = build_store(tmp_path)
    text = write_report(root / LRS_V35, tmp_path / "lrs.html").read_text()
    assert "<h2 id='scenario'>Scenario: last-replica-standing (v3.5)</h2>" in text
    assert "KNOWN ISSUE: Last Replica Standing" in text
    assert "kraftcheck scenario last-replica-standing --backend local --variant v3.5 --seed 11" in text
    assert "power-loss b1" in text  # the within-op fault, labelled


def test_linearizability_counterexample_rendered():
    ops = ops_fixture() + [
        {"index": 10, "time": 7_000_000_000, "type": "invoke", "process": 3, "f": "poll", "value": None},
        {"index": 11, "time": 7_100_000_000, "type": "ok", "process": 3, "f": "poll", "value": {"0": [[0, 9]]}}]
    results = {"valid": False, "checkers": {"linear": {"valid": False, "model": "kafka-log", "keys": {"0": {
        "valid": False, "ops": 3, "linearized": 1, "reason": "no linearization", "stuck_ops": [11, 11, 5],
        "last_states": [{"length": 1, "tail": [1]}]}}}}}
    text = render({}, ops, results)
    block = text.split("<h2 id='counterexample'>")[1].split("<h2")[0]
    assert "key 0: 1 of 3 ops linearized, then no order fits" in block
    assert "stuck: completed before any order could place it" in block and "#11 ok p3 poll" in block
    assert "still open there" in block and "#5 info p1 send" in block
    assert "{&quot;length&quot;: 1, &quot;tail&quot;: [1]}" in block


def test_anomalies_show_status_reason_and_other_checkers():
    results = {"valid": False, "checkers": {
        "queue": {"valid": False, "anomalies": {"lost-write": {
            "count": 3, "status": "forbidden", "reason": "acks=all: committed data must survive",
            "examples": [{"key": 0, "value": 2, "writer": 5}]}}},
        "other": {"valid": False, "errors": [{"op": 1, "why": "x"}]}}}
    text = render({}, ops_fixture(), results)
    section = text.split("<h2 id='anomalies'>")[1]
    assert "<h3>queue: lost-write (3, forbidden)</h3>" in section
    assert "acks=all: committed data must survive" in section
    assert "2 more not shown" in section
    assert "<h3>other: errors (1)</h3>" in section and "#1 ok p0 send" in section
