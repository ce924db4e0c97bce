"""Property tests (hypothesis): random sequences of controller operations (register, fence, unfence,
controlled shutdown, session timeouts, AlterPartition, reassign, cancel, elections) never break I9 / K1,
and every committed change obeys I11 (PE+1 per change, LE monotone and bumped on every leader change,
broker epochs strictly increasing)."""

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_impl.protocol.controller import Controller, ControllerConfig
from reference_impl.protocol.partition_change import CompletionRule, Election
from reference_impl.protocol.records import NO_LEADER, PartitionChangeRecord, RegisterBrokerRecord

BROKERS = (1, 2, 3, 4, 5)
OPS = ("fence", "unfence", "register", "ap", "reassign", "cancel", "elect", "shutdown", "timeout", "advance")


def _apply_checked(ctl: Controller, result, seen_epochs: list[int]) -> None:
    """Replay a result record by record, checking I11 on each; then I9/K1 on the whole state."""
    for record in result.records:
        if isinstance(record, PartitionChangeRecord):
            name = ctl.topic_names[record.topic_id]
            before = ctl.partition(name, record.partition_id).copy()
            ctl.replay(record)
            after = ctl.partition(name, record.partition_id)
            assert after.partition_epoch == before.partition_epoch + 1, "I11: PE+1 per change"
            assert after.leader_epoch >= before.leader_epoch, "I11: LE monotone"
            if after.leader != before.leader:
                assert after.leader_epoch == before.leader_epoch + 1, "C2: LE+1 on leader change"
        else:
            if isinstance(record, RegisterBrokerRecord):
                assert not seen_epochs or record.broker_epoch > max(seen_epochs), "I11: broker epochs grow"
                seen_epochs.append(record.broker_epoch)
            ctl.replay(record)
    assert ctl.invariant_violations() == []


def _run(ops, elr_enabled, unclean, min_isr, rule, incremental=False):
    ctl = Controller(ControllerConfig(min_isr=min_isr, elr_enabled=elr_enabled, unclean_election=unclean,
                                      completion_rule=rule, session_timeout_ms=50,
                                      incremental_reassignment=incremental, parallel_replica_count=1,
                                      parallel_partition_count=2, parallel_leader_movements=1))
    seen: list[int] = []
    for b in BROKERS:
        _apply_checked(ctl, ctl.register_broker(b, f"i{b}"), seen)
        _apply_checked(ctl, ctl.heartbeat(b, ctl.brokers[b].epoch, want_fence=False, want_shutdown=False,
                                          metadata_offset=ctl.next_offset, now_ms=0), seen)
    for name in ("a", "b"):
        _apply_checked(ctl, ctl.create_topic(name, partitions=2, replication_factor=3, rng=random.Random(name)),
                       seen)
    tps = [tp for tp, _ in ctl.partitions()]
    now = 0
    for op, x, y, z in ops:
        b = BROKERS[x % len(BROKERS)]
        reg = ctl.brokers[b]
        tp = tps[y % len(tps)]
        p = ctl.partition(*tp)
        rng = random.Random(x * 1_000_003 + y * 1009 + z)
        now += 10
        if op == "fence":
            result = ctl.fence_broker(b)
        elif op == "unfence":
            result = ctl.heartbeat(b, reg.epoch, want_fence=False, want_shutdown=False,
                                   metadata_offset=ctl.next_offset, now_ms=now)
        elif op == "register":
            if not reg.fenced:
                continue
            marker = reg.epoch if z % 2 else -1
            result = ctl.register_broker(b, f"i{b}-{now}", previous_broker_epoch=marker)
        elif op == "ap":
            if p.leader == NO_LEADER:
                continue
            members = [p.leader] + [r for r in p.replicas if r != p.leader and rng.random() < 0.6]
            new_isr = [(m, -1 if m in p.isr else ctl.brokers[m].epoch) for m in members]
            result = ctl.alter_partition(p.leader, ctl.brokers[p.leader].epoch, *tp, leader_epoch=p.leader_epoch,
                                         partition_epoch=p.partition_epoch, new_isr=new_isr)
        elif op == "reassign":
            target = rng.sample(BROKERS, rng.randint(1, 4))
            result = ctl.alter_partition_reassignments({tp: target}, allow_rf_change=bool(z % 2))
        elif op == "cancel":
            result = ctl.alter_partition_reassignments({tp: None})
        elif op == "elect":
            result = ctl.elect_leaders(Election.PREFERRED if z % 2 else Election.UNCLEAN, [tp])
        elif op == "advance":
            result = ctl.advance_incremental_reassignments()
        elif op == "shutdown":
            result = ctl.heartbeat(b, reg.epoch, want_fence=False, want_shutdown=True,
                                   metadata_offset=ctl.next_offset, now_ms=now)
        else:
            for other in BROKERS:
                if other != b and not ctl.brokers[other].fenced:
                    ctl.heartbeat(other, ctl.brokers[other].epoch, want_fence=False, want_shutdown=False,
                                  metadata_offset=ctl.next_offset, now_ms=now)
            result = ctl.check_session_timeouts(now + 100)
        _apply_checked(ctl, result, seen)


op_lists = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 10_000), st.integers(0, 10_000),
                              st.integers(0, 10_000)), max_size=60)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=op_lists, unclean=st.booleans(), min_isr=st.integers(1, 3),
       rule=st.sampled_from(list(CompletionRule)))
def test_v35_random_operations_keep_i9_i11(ops, unclean, min_isr, rule):
    _run(ops, False, unclean, min_isr, rule)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=op_lists, unclean=st.booleans(), min_isr=st.integers(1, 3))
def test_kip966_random_operations_keep_k1_i11(ops, unclean, min_isr):
    _run(ops, True, unclean, min_isr, CompletionRule.MIN_ISR)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=op_lists, elr=st.booleans(), min_isr=st.integers(1, 3))
def test_incremental_reassignment_random_operations_keep_invariants(ops, elr, min_isr):
    _run(ops, elr, False, min_isr, CompletionRule.MIN_ISR, incremental=True)
