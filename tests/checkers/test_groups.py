"""The consumer-group checks on synthetic histories: each bad history names its anomaly (and would pass
without the check), each good twin stays valid, including the race Kafka allows; judged key by key (as
both engines do) they find what the checks find over the whole history."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from checkers.analysis import check_run
from checkers.groups import GroupChecker, has_group_ops
from checkers.groups.checks import CHECKS, find_anomalies
from checkers.groups.extract import GroupFacts, Tally, by_key, decode_part, encode_part, extract, parts
from tests.support.groups import History, base, random_group_history, txn_poll

SPEC = {"variant": "kip966", "acks": "all", "nemesis": ["kill"]}


def judge(h: History) -> dict:
    return GroupChecker().check(SPEC, h.ops, [])


def test_a_clean_handover_is_valid():
    h = base()
    h.poll(2, 2, "b", assigned=[0], reads={0: [5, 6]})
    h.commit(2, 2, "b", {0: 7})
    r = judge(h)
    assert r["valid"] is True and r["anomaly_types"] == [] and r["counts"]["commits"] == 2


def test_poll_below_commit():
    h = base()
    h.poll(2, 2, "b", assigned=[0], reads={0: [3, 4, 5]})
    r = judge(h)
    assert r["valid"] is False and "poll-below-commit" in r["forbidden_found"]
    (a,) = r["anomalies"]["poll-below-commit"]
    assert (a["key"], a["offsets"], a["committed"], a["generation"]) == (0, [3, 4], 5, 2)


def test_re_reading_what_was_not_committed_is_at_least_once():
    h = base()
    h.poll(2, 2, "b", assigned=[0], reads={0: [5]})
    h.poll(1, 3, "a", assigned=[0], reads={0: [5, 6]})  # b committed nothing: a reads 5 again
    assert judge(h)["valid"] is True


def test_a_commit_acknowledged_after_the_rebalance_began_is_not_held_against_it():
    h = base()
    # a's second commit is invoked, then b joins and reads from 5, then the commit is acknowledged
    h._add(1, "commit", "invoke", None)
    h.poll(2, 2, "b", assigned=[0], reads={0: [5, 6]})
    h._add(1, "commit", "ok", {"0": 8}, group="g", generation=1, member="a")
    h.commit(2, 2, "b", {0: 7})  # lower than 8, but b's start position predates that commit
    assert judge(h)["valid"] is True


def test_commit_regression_from_a_stale_generation():
    h = base()
    h.poll(2, 2, "b", assigned=[0], reads={0: [5, 6, 7]})
    h.commit(2, 2, "b", {0: 8})
    h.commit(1, 1, "a", {0: 5})  # the zombie of generation 1, accepted after generation 2 committed 8
    r = judge(h)
    assert r["valid"] is False and r["anomaly_types"] == ["commit-regression"]
    (a,) = r["anomalies"]["commit-regression"]
    assert (a["offset"], a["generation"], a["earlier_offset"], a["earlier_generation"]) == (5, 1, 8, 2)


def test_commit_regression_of_a_new_owner_that_started_below_the_commit():
    h = base()
    h.poll(2, 2, "b", assigned=[0], reads={0: []})
    h.commit(2, 2, "b", {0: 2})
    r = judge(h)
    assert "commit-regression" in r["forbidden_found"]


def test_a_refused_stale_commit_is_no_regression():
    h = base()
    h.poll(2, 2, "b", assigned=[0], reads={0: [5, 6, 7]})
    h.commit(2, 2, "b", {0: 8})
    h.commit(1, 1, "a", {0: 5}, typ="fail")
    assert judge(h)["valid"] is True


def test_double_assignment_in_one_generation():
    h = base()
    h.poll(2, 2, "b", assigned=[0, 1])
    h.poll(3, 2, "c", assigned=[1])
    r = judge(h)
    assert r["forbidden_found"] == ["double-assignment"]
    (a,) = r["anomalies"]["double-assignment"]
    assert (a["generation"], a["key"], a["members"]) == (2, 1, ["b", "c"])


def test_the_same_key_in_different_generations_is_fine():
    h = base()
    h.poll(2, 2, "b", assigned=[1])
    h.poll(3, 3, "c", assigned=[1])
    assert judge(h)["valid"] is True


def test_losses_the_configuration_allows_make_the_group_kinds_allowed():
    h = base()
    h.poll(2, 2, "b", assigned=[0], reads={0: [3, 4, 5]})
    r = GroupChecker().check({**SPEC, "unclean_leader_election": True}, h.ops, [])
    assert r["valid"] is True and r["statuses"]["poll-below-commit"] == "allowed"
    assert r["anomaly_counts"]["poll-below-commit"] == 1


def test_events_without_a_generation_are_not_judged():
    h = History()
    h.op(1, "poll", None, {"0": [[0, 0]]}, rebalance_log=[{"keys": [0]}])
    h.op(1, "commit", None, {"0": 5}, group="g")
    h.op(2, "poll", None, {"0": [[1, 1]]}, rebalance_log=[{"keys": [0]}])
    r = judge(h)
    assert r["valid"] == "unknown" and r["checked"] is False


@pytest.mark.parametrize("bad", [False, True])
def test_check_run_adds_the_group_checker_only_for_group_histories(tmp_path, bad):
    import json
    h = base()
    h.poll(2, 2, "b", assigned=[0], reads={0: [3, 4, 5] if bad else [5]})
    h.op(5, "poll", None, {"0": [[o, o] for o in range(10)]}, final=True)
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(op) + "\n" for op in h.ops))
    result = check_run(SPEC, path, options={"linear": False})
    assert result["checkers"]["groups"]["valid"] is (not bad)
    assert has_group_ops(h.ops) and not has_group_ops([op for op in h.ops if op["f"] == "send"])


def test_a_committed_transaction_reading_below_the_groups_commit_is_poll_below_commit():
    h = base()
    txn_poll(h, 2, 2, "b", {0: [3, 4, 5]}, assigned=[0])
    r = judge(h)
    assert r["valid"] is False and "poll-below-commit" in r["forbidden_found"]


def test_an_aborted_transaction_read_nothing_so_it_is_not_held_against_the_group():
    h = base()
    txn_poll(h, 2, 2, "b", {0: [3, 4, 5]}, typ="fail", assigned=[0])
    txn_poll(h, 2, 2, "b", {0: [5, 6]})
    assert judge(h)["valid"] is True
def test_sometimes_counts_coordinator_moves_and_how_zombie_commits_ended():
    h = base()
    h.op(3, "commit", None, {"0": 1}, typ="fail", stall_ms=8000, error="CommitFailedError: UnknownMemberIdError")
    h.op(4, "commit", None, {"0": 9}, stall_ms=8000, group="g", generation=1, member="z")
    traces = [{"time": 1, "node": "b1", "kind": "group_coordinator", "action": "load", "offsets_partition": 0},
              {"time": 2, "node": "b1", "kind": "group_coordinator", "action": "unload", "offsets_partition": 0},
              {"time": 3, "node": "b2", "kind": "group_coordinator", "action": "load", "offsets_partition": 0}]
    counts = GroupChecker().check(SPEC, h.ops, traces)["counts"]
    assert (counts["coordinator_loads"], counts["zombie_commits"], counts["zombie_commits_refused"],
            counts["zombie_commits_acknowledged"]) == (2, 2, 1, 1)


def _whole(steps) -> GroupFacts:
    """The facts of the whole history, unsplit (the checks are written for any facts)."""
    facts = GroupFacts()
    for commits, poll in steps:
        facts.commits.extend(commits)
        if poll is not None:
            facts.polls.append(poll)
            facts.assignments.extend(a for kind, a in poll.events if kind == "assigned")
    return facts


def _multiset(rows):
    return Counter(json.dumps(r, sort_keys=True) for r in rows)


@pytest.mark.parametrize("seed", range(40))
def test_judging_key_by_key_finds_what_judging_the_whole_history_finds(seed):
    ops = random_group_history(seed, groups=("g", "h") if seed % 3 == 0 else ("g",))
    steps, _ = extract(ops)
    per_key = find_anomalies(by_key(steps))
    whole = {kind: check(_whole(steps)) for kind, check in CHECKS.items()}
    assert {k: _multiset(v) for k, v in per_key.items()} == {k: _multiset(v) for k, v in whole.items()}


def test_the_random_histories_reach_every_kind_and_valid_runs():
    seen = Counter()
    for seed in range(40):
        r = GroupChecker().check(SPEC, random_group_history(seed), [])
        seen.update(r["anomaly_types"])
        seen["valid"] += r["valid"] is True
    assert all(seen[k] >= 3 for k in (*CHECKS, "valid")), seen


@pytest.mark.parametrize("seed", range(5))
def test_parts_survive_their_text_form_and_tallies_add_up_over_processes(seed):
    ops = random_group_history(seed)
    steps, tally = extract(ops)
    for commits, poll in steps:
        for _, kind, fact in parts(commits, poll):
            assert decode_part(kind, encode_part(kind, fact)) == fact
    # Split by process, as the Spark job splits a history.
    first = extract([op for op in ops if op["process"] % 2])[1]
    first.merge(Tally.from_json(extract([op for op in ops if not op["process"] % 2])[1].to_json()))
    assert first.counts() == tally.counts() and first.checked == tally.checked
