"""The consumer group on the run report: every assignment, a transaction's included, and a group anomaly
next to the transaction it names, its micro-ops shown with the offending offsets marked."""

import json
import re

from checkers.analysis import check_run
from reports.group_timeline import group_section
from reports.run_report import render
from tests.support.groups import base, txn_poll

SPEC = {"variant": "kip966", "acks": "all", "nemesis": []}


def _text(parts):
    return re.sub(r"<[^>]+>", " ", "".join(parts))


def test_assignments_made_during_a_transaction_are_listed_like_a_polls():
    h = base()  # a gets key 0 in generation 1 and gives it up in generation 2 (two polls)
    txn_poll(h, 2, 2, "b", {0: [5, 6]}, assigned=[0])  # b gets it during a transaction
    txn_poll(h, 3, 3, "c", {0: [7]}, typ="fail", assigned=[1])  # an aborted one still went through it
    text = _text(group_section(h.ops, []))
    assert "4 assignments in 3 generations; 1 commits acknowledged" in text
    assert re.search(r"\b2\s+2\s+b\s+\[0\]", text) and re.search(r"\b3\s+3\s+c\s+\[1\]", text)


def test_a_history_without_group_ops_has_no_group_section():
    h = base()
    assert group_section([op for op in h.ops if op["f"] == "send"], []) == []


def test_a_group_anomaly_shows_the_transaction_it_names_with_its_micro_ops(tmp_path):
    h = base()
    txn_poll(h, 2, 2, "b", {0: [3, 4, 5]}, assigned=[0])
    h.op(3, "txn", [["send", 1, 100], ["poll"]], [["send", 1, [0, 100]], ["poll", {"0": [[6, 6]]}]])
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(op) + "\n" for op in h.ops))
    results = check_run(SPEC, path, options={"linear": False})
    (anomaly,) = results["checkers"]["groups"]["anomalies"]["poll-below-commit"]
    html = render(SPEC, h.ops, results)
    section = html[html.index("groups: poll-below-commit"):]
    line = re.search(rf"#{anomaly['op']} ok p2 txn (.*?)</code>", section).group(1)
    # The transaction's poll micro-op, the offsets below the commit marked and the one above not.
    assert "[poll {0: [<mark>[3, 3]</mark>, <mark>[4, 4]</mark>, [5, 5]]}]" in line
    # A transaction that sent and read (named by the queue checker: nothing read its write back) shows both
    # micro-ops in their order, the send it names marked.
    assert set(re.findall(r"ok p3 txn (.*?)</code>", html)) == {
        "[<mark>[&quot;send&quot;, 1, [0, 100]]</mark>, [poll {0: [[6, 6]]}]]"}
