"""AlterPartition answers per request version, as Kafka's ReplicationControlManager gives them.

From Kafka's message definitions (AlterPartitionRequest/Response.json): v1 adds LeaderRecoveryState
(KIP-704); v2 names topics by id and may answer INELIGIBLE_REPLICA, NEW_LEADER_ELECTED and UNKNOWN_TOPIC_ID
(KIP-841); v3 carries each member's broker epoch (KIP-903). An older client cannot be sent an error it does
not know, so Kafka answers v0/v1 with OPERATION_NOT_ATTEMPTED for an ineligible replica, FENCED_LEADER_EPOCH
when the change completed a reassignment that moved the leadership (the change is committed all the same),
and UNKNOWN_TOPIC_OR_PARTITION for an unknown topic."""

import pytest

from reference_impl.protocol.control.replication import alter_partition_error_for_version
from reference_impl.protocol.errors import Errors, error

from .controller_helpers import cluster, current, epoch, state, with_partition

OLD = (0, 1)
NEW = (2, 3)


def base():
    return with_partition(cluster((1, 2, 3, 4), min_isr=2), state([1, 2, 3], [1, 2], 1, 1, 2))


def send(ctl, version, isr, *, topic="t", le=None, pe=None):
    p = ctl.partition("t", 0)
    return ctl.alter_partition(p.leader, epoch(ctl, p.leader), topic, 0,
                               leader_epoch=p.leader_epoch if le is None else le,
                               partition_epoch=p.partition_epoch if pe is None else pe,
                               new_isr=list(isr), request_version=version)


@pytest.mark.parametrize("version, code", [(v, Errors.OPERATION_NOT_ATTEMPTED) for v in OLD] +
                         [(v, Errors.INELIGIBLE_REPLICA) for v in NEW])
def test_fenced_member_is_refused_with_the_versions_error(version, code):
    ctl = base()
    ctl.apply(ctl.fence_broker(3))
    res = send(ctl, version, [(1, -1), (2, -1), (3, -1)])
    assert res.response.error.code == code and res.records == []


@pytest.mark.parametrize("version, code", [(v, Errors.UNKNOWN_TOPIC_OR_PARTITION) for v in OLD] +
                         [(v, Errors.UNKNOWN_TOPIC_ID) for v in NEW])
def test_unknown_topic_gets_the_versions_error(version, code):
    res = send(base(), version, [(1, -1), (2, -1)], topic="no-such-topic")
    assert res.response.error.code == code and res.records == []


@pytest.mark.parametrize("version, code", [(v, Errors.FENCED_LEADER_EPOCH) for v in OLD] +
                         [(v, Errors.NEW_LEADER_ELECTED) for v in NEW])
def test_completion_that_moves_the_leader_is_committed_under_every_version(version, code):
    ctl = with_partition(cluster((1, 2, 3, 4), min_isr=2), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    ctl.apply(ctl.alter_partition_reassignments({("t", 0): [2, 3, 4]}))
    res = send(ctl, version, [(1, -1), (2, -1), (3, -1), (4, epoch(ctl, 4))])
    assert res.response.error.code == code and len(res.records) == 1
    ctl.apply(res)
    assert current(ctl) == state([2, 3, 4], [2, 3, 4], 2, 2, 3)


@pytest.mark.parametrize("version, code", [(v, Errors.NONE) for v in (0, 1, 2)] + [(3, Errors.INELIGIBLE_REPLICA)])
def test_broker_epochs_are_checked_only_from_v3(version, code):
    """C14's epoch check needs KIP-903's NewIsrWithEpochs; before v3 every member counts as -1."""
    ctl = base()
    res = send(ctl, version, [(1, -1), (2, -1), (3, epoch(ctl, 3) + 1000)])
    assert res.response.error.code == code


@pytest.mark.parametrize("version", OLD + NEW)
def test_errors_other_than_kip_841_are_the_same_in_every_version(version):
    ctl = base()
    assert send(ctl, version, [(1, -1)], pe=1).response.error.code == Errors.INVALID_UPDATE_VERSION
    assert send(ctl, version, [(1, -1)], le=0).response.error.code == Errors.FENCED_LEADER_EPOCH
    assert send(ctl, version, [(2, -1)]).response.error.code == Errors.INVALID_REQUEST
    assert send(ctl, version, [(1, -1)]).response.error.ok


def test_versions_beyond_three_are_not_served():
    res = send(base(), 4, [(1, -1)])
    assert res.response.error.code == Errors.UNSUPPORTED_VERSION and res.records == []


def test_mapping_keeps_the_message():
    mapped = alter_partition_error_for_version(error(Errors.INELIGIBLE_REPLICA, "3: fenced"), 1)
    assert mapped == error(Errors.OPERATION_NOT_ATTEMPTED, "3: fenced")
    assert alter_partition_error_for_version(error(Errors.INELIGIBLE_REPLICA), 2).code == Errors.INELIGIBLE_REPLICA
