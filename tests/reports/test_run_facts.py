"""The run report's computations on hand-built histories and traces (pure functions)."""

from reports.ops_html import Focus, focus_of, op_html
from reports.run_facts import (
    client_errors,
    client_pairs,
    error_code,
    fault_impact,
    fault_label,
    labelled_faults,
    latency_quantiles,
    shorten_records,
    throughput,
)
from reports.trace_timeline import changes, partition_timelines

S = 1_000_000_000


def op(i, t, type_, process, f, value=None, **extra):
    return {"index": i, "time": int(t * S), "type": type_, "process": process, "f": f, "value": value, **extra}


def history():
    """Sends every 0.5 s from process 0; a kill of b2 from 2.0 s, healed at 4.0 s; one failed send with a
    Kafka error code during the fault, one info send with a client-side timeout; a final read."""
    ops = []
    i = 0
    t = 0.1
    while t < 6:
        if 2.0 <= t < 4.0:  # unavailable: the sends do not complete ok
            ops += [op(i, t, "invoke", 1, "send", [0, i]),
                    op(i + 1, t + 0.3, "fail", 1, "send", [0, [None, i]],
                       error="NotEnoughReplicasError: [Error 19] NotEnoughReplicasError")]
        else:
            ops += [op(i, t, "invoke", 0, "send", [0, i]), op(i + 1, t + 0.01, "ok", 0, "send", [0, [i, i]])]
        i += 2
        t += 0.5
    ops += [op(i, 2.0, "invoke", "nemesis", "kill", {"target": "one"}),
            op(i + 1, 2.05, "ok", "nemesis", "kill", {"target": "one", "nodes": ["b2"], "killed": {"b2": 17},
                                                     "effective": True}),
            op(i + 2, 4.0, "invoke", "nemesis", "start", {}),
            op(i + 3, 4.02, "ok", "nemesis", "start", {"nodes": ["b2"], "effective": True}),
            op(i + 4, 5.0, "invoke", 2, "poll", None),
            op(i + 5, 5.9, "info", 2, "poll", None, error="KafkaTimeoutError: took too long"),
            op(i + 6, 6.5, "invoke", 9, "poll", None, final=True),
            op(i + 7, 6.6, "ok", 9, "poll", {"0": [[0, 0]]}, final=True)]
    return sorted(ops, key=lambda o: o["time"])


def test_throughput_counts_completions_per_second_by_f_and_outcome():
    times, series = throughput(client_pairs(history()))
    assert times[:3] == [0.0, 1.0, 2.0]
    ok = series[("send", "ok")]
    assert ok[0] == 2 and ok[1] == 2 and ok[2] == 0 and ok[3] == 0 and ok[4] == 2
    assert series[("send", "fail")][2] == 2 and series[("poll", "info")][5] == 1
    assert ("poll", "ok") not in series  # the final read is not main-phase throughput


def test_latency_quantiles_of_ok_ops():
    rows = {r["f"]: r for r in latency_quantiles(client_pairs(history()))}
    assert rows["send"]["fail"] == 4 and rows["send"]["ok"] == 8
    assert round(rows["send"]["p50"]) == 10 and round(rows["send"]["max"]) == 10
    assert rows["poll"]["p50"] is None and rows["poll"]["info"] == 1


def test_fault_bands_are_labelled_with_what_was_done_to_which_node():
    faults = labelled_faults(history())
    assert [(f.f, f.label, f.start, f.end, f.healed) for f in faults] == [
        ("kill", "kill b2", 2 * S, int(4.02 * S), True)]
    cut = fault_label("start-partition", {"topology": "majority-minority",
                                          "grudge": {"b1": ["b2", "b3"], "b2": ["b1"], "b3": ["b1"]}})
    assert cut == "start-partition majority-minority b1 | b2,b3"
    assert fault_label("bump-clock", {"nodes": ["b3"], "requested_s": {"b3": -2.5}}) == "bump-clock b3 (b3 -2.5s)"
    assert fault_label("heal", None) == "heal"
    group = {"target": "group-coordinator", "topic": "__consumer_offsets", "partition": 0, "leader": 2, "node": "b2"}
    assert fault_label("kill", {"target": "group-coordinator", "nodes": ["b2"], "coordinator": group}) == \
        "kill b2 (group-coordinator __consumer_offsets-0 on b2)"
    assert fault_label("reassign", {"kind": "coordinator", "target": "group-coordinator", "coordinator": group,
                                    "node_after": "b3"}) == "reassign (group-coordinator __consumer_offsets-0 on b2) -> b3"
    fallback = {"target": "txn-coordinator", "topic": "__transaction_state", "fallback": "...", "node": "b1"}
    assert fault_label("pause", {"nodes": ["b1"], "coordinator": fallback}) == \
        "pause b1 (txn-coordinator no state topic yet fallback b1)"


def test_unavailability_and_recovery_per_fault():
    ops = history()
    (impact,) = fault_impact(labelled_faults(ops), client_pairs(ops, final=True))
    assert impact.ok_during == 0  # no ok completion between 2.0 and 4.02
    assert round(impact.unavailable_s, 2) == 2.02
    # the first ok op invoked after the heal at 4.02 s: the send invoked at 4.1, done at 4.11
    assert round(impact.recovery_s, 2) == 0.09


def test_client_errors_grouped_by_kafka_error_code():
    groups = client_errors(history())
    assert [(g["code"], g["name"], g["count"]) for g in groups] == [
        ("19", "NotEnoughReplicasError", 4), ("-", "KafkaTimeoutError", 1)]
    assert dict(groups[0]["by"]) == {"send fail": 4}
    assert error_code("KafkaError{code=NOT_LEADER_OR_FOLLOWER,val=6,str=\"x\"}") == ("6", "NOT_LEADER_OR_FOLLOWER")


def test_long_poll_results_are_shortened_around_the_offending_values():
    records = [[o, 100 + o] for o in range(40)]
    shown = shorten_records(records, {120}, set())
    kinds = [k for k, _ in shown]
    assert ("hit", [20, 120]) in shown and kinds.count("gap") == 2
    assert len([k for k in kinds if k != "gap"]) == 7  # both ends + the hit and two neighbours each side
    poll = op(5, 1.0, "ok", 3, "poll", {"0": records, "1": [[0, 7]]})
    text = op_html(poll, focus_of({"key": 0, "value": 120, "offset": 20}))
    assert "<mark>[20, 120]</mark>" in text and "... 17 more ..." in text and "[0, 7]" in text
    assert "<mark>" not in op_html(poll, Focus())


def test_partition_timeline_from_controller_states_and_leader_hwm():
    events = [
        {"time": 1 * S, "node": "0", "kind": "metadata_applied", "source": "controller", "topic": "t", "partition": 0,
         "replicas": [3, 1, 2], "isr": [1, 2, 3], "elr": [], "last_known_elr": [], "leader": 1, "leader_epoch": 0,
         "partition_epoch": 0},
        {"time": 2 * S, "node": "1", "kind": "hwm", "topic": "t", "partition": 0, "replica": 1, "role": "leader",
         "hwm": 5},
        {"time": 2 * S, "node": "2", "kind": "hwm", "topic": "t", "partition": 0, "replica": 2, "role": "follower",
         "hwm": 4},
        {"time": 3 * S, "node": "0", "kind": "metadata_applied", "source": "controller", "topic": "t", "partition": 0,
         "replicas": [1, 2, 3], "isr": [1], "elr": [2], "last_known_elr": [], "leader": 1, "leader_epoch": 0,
         "partition_epoch": 1},
        {"time": 3 * S, "node": "2", "kind": "metadata_applied", "topic": "t", "partition": 0, "isr": [9]},
        {"time": 3 * S + 1, "node": "2", "kind": "leader_epoch_start", "topic": "t", "partition": 0, "replica": 2,
         "leader_epoch": 1, "leso": 0, "leo": 0, "hwm": 0},
        {"time": 4 * S, "node": "0", "kind": "metadata_applied", "source": "controller", "topic": "other",
         "partition": 0, "replicas": [1], "isr": [1], "leader": 1, "leader_epoch": 0, "partition_epoch": 0},
    ]
    (tl,) = partition_timelines(events, "t")
    assert tl.brokers == [1, 2, 3] and tl.hwm == [(2 * S, 1, 5), (3 * S + 1, 2, 0)]  # a new leader's start
    rows = changes(tl)
    assert [(r["isr"], r["elr"], r["hwm"]) for r in rows] == [([1, 2, 3], [], 0), ([1], [2], 5)]
    assert len(partition_timelines(events)) == 2
