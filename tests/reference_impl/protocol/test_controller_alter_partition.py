"""AlterPartition on the controller (C13-C15, C19, K2): Apache Kafka's order of checks and error codes;
docs/protocol-rules.md section 6 scenarios 9 (rejection and retry), 10 (stale broker epoch), 11 (fenced
member)."""

import pytest

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.records import BrokerRegistrationChangeRecord

from .controller_helpers import ap, cluster, current, epoch, state, with_partition


def base():
    return with_partition(cluster((1, 2, 3, 4), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))


def test_accepted_shrink_and_expand_c15():
    ctl = base()
    res = ap(ctl, [1, 2])
    assert res.response.error.ok and res.response.isr == (1, 2) and res.response.partition_epoch == 2
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [1, 2], 1, 1, 2)  # ISR-only change keeps the LE (C2)
    ctl.apply(ap(ctl, [1, 2, 3]))
    assert current(ctl) == state([1, 2, 3], [1, 2, 3], 1, 1, 3)


def test_unchanged_isr_writes_nothing():
    ctl = base()
    res = ap(ctl, [1, 2, 3])
    assert res.records == [] and res.response.error.ok and res.response.partition_epoch == 1


def test_scenario9_rejection_after_concurrent_fence_then_retry():
    ctl = base()
    stale = ap(ctl, [1, 2])           # computed at PE1 ...
    ctl.apply(ctl.fence_broker(2))    # ... but 2 is fenced meanwhile: ISR {1,3}, PE2
    assert current(ctl) == state([1, 2, 3], [1, 3], 1, 1, 2)
    late = ctl.alter_partition(1, epoch(ctl, 1), "t", 0, leader_epoch=1, partition_epoch=1,
                               new_isr=[(1, -1), (2, -1)])
    assert stale.response.partition_epoch == 2  # what it would have been
    assert late.records == [] and late.response.error.code == Errors.INVALID_UPDATE_VERSION  # C13
    assert current(ctl) == state([1, 2, 3], [1, 3], 1, 1, 2)  # nothing changed: the leader rolls back
    retry = ap(ctl, [1])  # with the new PE
    assert retry.response.error.ok
    ctl.apply(retry)
    assert current(ctl) == state([1, 2, 3], [1], 1, 1, 3)


def test_scenario10_stale_broker_epoch_of_added_member():
    ctl = with_partition(cluster((1, 2, 3), min_isr=2), state([1, 2, 3], [1, 2], 1, 1, 2))
    e3 = epoch(ctl, 3)
    ctl.apply(ctl.fence_broker(3))  # 3 crashes (lossy) ...
    reg = ctl.apply(ctl.register_broker(3, "after-crash"))  # ... and re-registers with E3'
    ctl.apply(ctl.heartbeat(3, reg.broker_epoch, want_fence=False, want_shutdown=False,
                            metadata_offset=ctl.next_offset, now_ms=0))
    before = current(ctl)
    res = ap(ctl, [1, 2, 3], epochs={3: e3})
    assert res.records == [] and res.response.error.code == Errors.INELIGIBLE_REPLICA  # C14
    assert current(ctl) == before
    res = ap(ctl, [1, 2, 3], epochs={3: reg.broker_epoch})  # after a full catch-up under E3'
    assert res.response.error.ok
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [1, 2, 3], 1, 1, before.partition_epoch + 1)


def test_scenario11_fenced_member_is_ineligible():
    ctl = with_partition(cluster((1, 2, 3), min_isr=2), state([1, 2, 3], [1, 2], 1, 1, 2))
    ctl.apply(ctl.fence_broker(3))
    res = ap(ctl, [1, 2, 3])
    assert res.response.error.code == Errors.INELIGIBLE_REPLICA and res.records == []


def _request(ctl, *, sender=1, sender_epoch=None, topic="t", partition=0, le=1, pe=1,
             isr=((1, -1), (2, -1), (3, -1)), recovery="RECOVERED"):
    return ctl.alter_partition(sender, epoch(ctl, sender) if sender_epoch is None else sender_epoch, topic,
                               partition, leader_epoch=le, partition_epoch=pe, new_isr=list(isr),
                               leader_recovery_state=recovery).response.error.code


@pytest.mark.parametrize("kwargs, prep, expected", [
    # Each request breaks the named rule and every later one: the first in Kafka's order must win.
    (dict(sender_epoch=999, le=0, pe=0, isr=((9, -1),)), None, Errors.STALE_BROKER_EPOCH),
    (dict(topic="nope", le=0), None, Errors.UNKNOWN_TOPIC_ID),                # v3 (KIP-841: by topic id)
    (dict(partition=7, le=0), None, Errors.UNKNOWN_TOPIC_OR_PARTITION),
    (dict(le=2, sender=2), None, Errors.NOT_CONTROLLER),
    (dict(pe=2, sender=2), None, Errors.NOT_CONTROLLER),
    (dict(le=0, sender=2, pe=0), None, Errors.FENCED_LEADER_EPOCH),
    (dict(sender=2, pe=0), None, Errors.INVALID_REQUEST),
    (dict(pe=0, isr=((1, -1), (5, -1))), None, Errors.INVALID_UPDATE_VERSION),
    (dict(isr=((1, -1), (5, -1))), None, Errors.INVALID_REQUEST),              # not within replicas
    (dict(isr=((1, -1), (1, -1))), None, Errors.INVALID_REQUEST),              # duplicate
    (dict(isr=((2, -1), (3, -1))), None, Errors.INVALID_REQUEST),              # without the leader
    (dict(isr=((1, -1), (2, -1)), recovery="RECOVERING"), None, Errors.INVALID_REQUEST),
    (dict(isr=((1, -1),), recovery="RECOVERING"), None, Errors.INVALID_REQUEST),  # RECOVERED -> RECOVERING
    (dict(isr=((1, -1), (2, -1), (3, 12345))), None, Errors.INELIGIBLE_REPLICA),  # epoch mismatch
    (dict(isr=((1, -1), (2, -1), (3, -1))), "fence3", Errors.INELIGIBLE_REPLICA),  # fenced member
    (dict(isr=((1, -1), (2, -1), (3, -1))), "shutdown3", Errors.INELIGIBLE_REPLICA),  # in controlled shutdown
    (dict(isr=((1, -1), (2, -1), (3, -1))), None, Errors.NONE),
])
def test_kafka_order_of_checks(kwargs, prep, expected):
    ctl = base()
    if prep == "fence3":
        # Put 3 back into the ISR record while fenced, as a leader with stale metadata would propose it.
        ctl.apply(ctl.fence_broker(3))
        kwargs = dict(kwargs, pe=2)
    if prep == "shutdown3":
        ctl.replay(BrokerRegistrationChangeRecord(3, epoch(ctl, 3), in_controlled_shutdown=True))
    assert _request(ctl, **kwargs) == expected


def test_recovering_leader_may_report_recovered_with_isr_of_one():
    ctl = with_partition(cluster((1, 2, 3), min_isr=1), state([1, 2, 3], [1], 1, 3, 5, recovery="RECOVERING"))
    res = ctl.alter_partition(1, epoch(ctl, 1), "t", 0, leader_epoch=3, partition_epoch=5, new_isr=[(1, -1)],
                              leader_recovery_state="RECOVERED")
    assert res.response.error.ok
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [1], 1, 3, 6)


def test_alter_partition_with_elr_keeps_elr_disjoint_k2_k12():
    ctl = with_partition(cluster((1, 2, 3), min_isr=3, elr_enabled=True), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    ctl.apply(ap(ctl, [1]))  # K2: shrink below MinISR: leavers go to the ELR
    assert current(ctl) == state([1, 2, 3], [1], 1, 1, 2, elr=[2, 3])
    ctl.apply(ap(ctl, [1, 2]))  # K12: 2 is back in the ISR, so out of the ELR (ISR still < MinISR)
    assert current(ctl) == state([1, 2, 3], [1, 2], 1, 1, 3, elr=[3], lkelr=[])
    ctl.apply(ap(ctl, [1, 2, 3]))  # K1: ISR >= MinISR empties both
    assert current(ctl) == state([1, 2, 3], [1, 2, 3], 1, 1, 4)
    assert ctl.invariant_violations() == []
