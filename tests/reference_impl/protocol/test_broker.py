"""Broker lifecycle B1-B5 (and K4's marker epoch) as a state machine."""

from __future__ import annotations

import random

import pytest

from reference_impl.protocol.broker import (
    OFFLINE,
    PENDING_CONTROLLED_SHUTDOWN,
    RECOVERY,
    RUNNING,
    STARTING,
    BrokerLifecycle,
)
from reference_impl.protocol.errors import OK, Errors, InvariantViolation, error


def registered(marker: int | None = None, epoch: int = 40) -> BrokerLifecycle:
    b = BrokerLifecycle(1)
    b.start(random.Random(7), marker)
    b.handle_registration_response(OK, epoch)
    return b


def test_b1_start_registers_with_a_fresh_incarnation_and_the_marker_epoch():
    b = BrokerLifecycle(1, "127.0.0.2", 9092)
    req = b.start(random.Random(7), 17)
    assert b.state == STARTING and req.previous_broker_epoch == 17 and req.host == "127.0.0.2"
    assert b.registration_request() == req  # C3: a retry keeps the incarnation
    other = BrokerLifecycle(1).start(random.Random(8), None)
    assert other.incarnation_id != req.incarnation_id and other.previous_broker_epoch == -1  # K4: unclean
    assert BrokerLifecycle(1).start(random.Random(7), None).incarnation_id == req.incarnation_id  # seeded


def test_registration_refused_stays_starting():
    b = BrokerLifecycle(1)
    b.start(random.Random(1), None)
    b.handle_registration_response(error(Errors.DUPLICATE_BROKER_REGISTRATION), -1)
    assert b.state == STARTING and b.build_heartbeat(0) is None


def test_b2_want_fence_until_recovered_and_caught_up_to_own_registration():
    b = registered(epoch=40)
    assert b.state == RECOVERY
    assert b.build_heartbeat(100).want_fence  # not recovered yet
    b.recovery_complete()
    assert b.build_heartbeat(39).want_fence  # metadata behind its own registration record
    hb = b.build_heartbeat(40)
    assert not hb.want_fence and not hb.want_shutdown and hb.broker_epoch == 40
    b.handle_heartbeat_response(OK, True, False)
    assert b.state == RECOVERY  # still fenced
    b.handle_heartbeat_response(OK, False, False)
    assert b.state == RUNNING and b.running and not b.fenced
    kinds = [e["kind"] for e in b.drain_events()]
    assert kinds[:1] == ["broker_state"] and "registered" in kinds and "unfenced" in kinds


def test_fence_unfence_cycle_keeps_state_and_epoch_c7():
    b = registered()
    b.recovery_complete()
    b.handle_heartbeat_response(OK, False, False)
    b.handle_heartbeat_response(OK, True, False)
    assert b.state == RUNNING and b.fenced and b.broker_epoch == 40
    b.handle_heartbeat_response(error(Errors.REQUEST_TIMED_OUT), False, False)
    assert b.fenced  # an error reply changes nothing
    b.handle_heartbeat_response(OK, False, False)
    assert not b.fenced and b.broker_epoch == 40


def test_controlled_shutdown_then_marker_b4_k4():
    b = registered()
    b.recovery_complete()
    b.handle_heartbeat_response(OK, False, False)
    b.begin_controlled_shutdown()
    assert b.state == PENDING_CONTROLLED_SHUTDOWN and b.build_heartbeat(50).want_shutdown
    with pytest.raises(InvariantViolation):
        b.shutdown_complete()  # C9: not before the controller says so
    b.handle_heartbeat_response(OK, False, True)
    assert b.shutdown_complete() == 40 and b.state == OFFLINE
    again = b.start(random.Random(3), 40)
    assert again.previous_broker_epoch == 40


def test_crash_and_illegal_events():
    b = registered()
    b.crash()
    assert b.state == OFFLINE and b.build_heartbeat(0) is None
    with pytest.raises(InvariantViolation):
        b.recovery_complete()
    with pytest.raises(InvariantViolation):
        BrokerLifecycle(2).handle_registration_response(OK, 1)


@pytest.mark.parametrize("code", [Errors.STALE_BROKER_EPOCH, Errors.BROKER_ID_NOT_REGISTERED])
def test_a_heartbeat_told_the_registration_is_gone_registers_again(code):
    b = registered(marker=17, epoch=40)
    b.recovery_complete()
    b.handle_heartbeat_response(OK, False, False)
    assert b.state == RUNNING
    incarnation = b.incarnation_id
    b.drain_events()
    b.handle_heartbeat_response(error(code), False, False)
    assert b.state == STARTING and b.fenced and b.build_heartbeat(100) is None
    req = b.registration_request()
    # the same process (incarnation), and no clean-shutdown claim: none happened since the marker was read
    assert req.incarnation_id == incarnation and req.previous_broker_epoch == -1
    assert [e["kind"] for e in b.drain_events()] == ["broker_state", "registration_lost"]
    b.handle_registration_response(OK, 55)
    b.recovery_complete()
    assert b.state == RECOVERY and b.broker_epoch == 55
    assert b.build_heartbeat(54).want_fence and not b.build_heartbeat(55).want_fence  # B2 again
    b.handle_heartbeat_response(OK, False, False)
    assert b.state == RUNNING and not b.fenced


def test_other_heartbeat_errors_and_a_stale_epoch_while_shutting_down_change_nothing():
    b = registered(epoch=40)
    b.recovery_complete()
    b.handle_heartbeat_response(OK, False, False)
    b.handle_heartbeat_response(error(Errors.NOT_CONTROLLER), True, False)
    assert b.state == RUNNING and not b.fenced
    b.begin_controlled_shutdown()
    b.handle_heartbeat_response(error(Errors.STALE_BROKER_EPOCH), False, False)
    assert b.state == PENDING_CONTROLLED_SHUTDOWN  # it is stopping: the session timeout bounds the wait
