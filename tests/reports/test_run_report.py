"""Unit tests of reports.run_report on hand-built stores (no cluster)."""

import base64
import json

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
    assert nemesis_intervals(unhealed, end_ns=9) == [(2_000_000_000, 9, "kill")]


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
    assert "INVALID" in text and "lost-write" in text and "Fault coverage" in text
    assert "http://" not in text and "https://" not in text  # no external assets
    png = text.split("data:image/png;base64,")[1].split("'")[0]
    assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"
    # the anomaly row shows the op it names (index 5, the info send)
    assert "&quot;index&quot;: 5" in text


def test_render_without_history_or_results():
    text = render({}, [], {})
    assert "UNKNOWN" in text and "No client ops" in text
