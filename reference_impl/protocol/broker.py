"""Broker lifecycle B1-B5 as a sans-IO state machine (docs/protocol-rules.md 1.3, 2.5; K4: the marker).

States: OFFLINE -> STARTING -> RECOVERY -> RUNNING -> PENDING_CONTROLLED_SHUTDOWN -> OFFLINE. The
transitions are the table ``TRANSITIONS`` (event -> allowed source states -> target), so the machine can
be read and drawn from data; an event in a state the table does not allow raises ``InvariantViolation``
(the server's own sequencing is broken).

The server drives it:

1. ``start(rng, marker_epoch)`` (B1): a fresh incarnation id from the caller's rng and the registration
   request to send, carrying the epoch read from the clean-shutdown marker (K4; -1 when there was none,
   which marks the previous shutdown unclean). A retry after a lost reply reuses ``registration_request()``
   (same incarnation, C3).
2. ``handle_registration_response`` -> RECOVERY with the broker epoch; ``recovery_complete()`` once the
   local storage check is done (B2, B5: no epoch-based truncation happens at boot).
3. ``build_heartbeat(metadata_offset)`` every heartbeat interval: ``want_fence`` stays true until recovery
   is done and the applied metadata reaches the broker's own registration record (B2);
   ``handle_heartbeat_response`` moves RECOVERY -> RUNNING once the controller unfences it (C5) and keeps
   ``fenced`` up to date afterwards (C6/C7: a fence/unfence cycle keeps the epoch).
   A heartbeat answered STALE_BROKER_EPOCH (or BROKER_ID_NOT_REGISTERED) says the controller no longer
   holds the registration the broker heartbeats with: a later registration of the same incarnation
   replaced it (a registration that timed out at the broker can still reach the controller after the
   retry was accepted, when a cut network heals and TCP delivers the stale copy). Heartbeats with that
   epoch can never succeed, so the broker goes back to STARTING and registers again (same incarnation,
   no clean-shutdown claim: the controller has already taken it out of every ISR as unclean, K4) instead
   of staying fenced until it restarts.
4. ``begin_controlled_shutdown()`` (C8) -> heartbeats carry ``want_shutdown``; a reply with
   ``should_shutdown`` (C9) says it may stop; ``shutdown_complete()`` then returns the epoch to write into
   the clean-shutdown marker (B4, K4). ``crash()`` models an unclean stop (no marker written).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.errors import Errors, InvariantViolation, KafkaError

if TYPE_CHECKING:  # the caller owns randomness; the core only takes a generator
    import random

OFFLINE = "OFFLINE"
STARTING = "STARTING"
RECOVERY = "RECOVERY"
RUNNING = "RUNNING"
PENDING_CONTROLLED_SHUTDOWN = "PENDING_CONTROLLED_SHUTDOWN"

# heartbeat errors that say the controller holds no registration with the broker's epoch
REGISTRATION_GONE = frozenset({Errors.STALE_BROKER_EPOCH, Errors.BROKER_ID_NOT_REGISTERED})

# event -> (allowed source states, target state); None as target = stay
TRANSITIONS: dict[str, tuple[frozenset[str], str | None]] = {
    "start": (frozenset({OFFLINE}), STARTING),
    "registered": (frozenset({STARTING}), RECOVERY),
    "registration_failed": (frozenset({STARTING}), None),
    "registration_lost": (frozenset({RECOVERY, RUNNING}), STARTING),
    "recovery_complete": (frozenset({RECOVERY}), None),
    "unfenced": (frozenset({RECOVERY}), RUNNING),
    "begin_controlled_shutdown": (frozenset({RUNNING, RECOVERY, STARTING}), PENDING_CONTROLLED_SHUTDOWN),
    "shutdown_complete": (frozenset({PENDING_CONTROLLED_SHUTDOWN}), OFFLINE),
    "crash": (frozenset({OFFLINE, STARTING, RECOVERY, RUNNING, PENDING_CONTROLLED_SHUTDOWN}), OFFLINE),
}


@dataclass(frozen=True)
class BrokerRegistrationRequest:
    """B1: what a starting broker sends to the controller (C3, K4)."""

    broker_id: int
    incarnation_id: str
    host: str = ""
    port: int = 0
    previous_broker_epoch: int = -1  # K4: from the clean-shutdown marker; -1 = missing (unclean)


@dataclass(frozen=True)
class BrokerHeartbeatRequest:
    """B2/C5/C8: the periodic heartbeat."""

    broker_id: int
    broker_epoch: int
    metadata_offset: int
    want_fence: bool
    want_shutdown: bool


@dataclass(frozen=True)
class HeartbeatReply:
    """C5/C8/C9: a BrokerHeartbeat answer as both ends see it (the controller builds it, the broker's link
    decodes it); ``is_caught_up`` is whether the broker's metadata offset reached its registration (B2)."""

    error: Errors
    is_caught_up: bool
    is_fenced: bool
    should_shutdown: bool


class BrokerLifecycle:
    """The lifecycle of one broker process (see the module docstring for the calling sequence)."""

    def __init__(self, broker_id: int, host: str = "", port: int = 0) -> None:
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.state = OFFLINE
        self.incarnation_id: str | None = None
        self.broker_epoch = -1
        self.fenced = True
        self.recovered = False
        self.should_shutdown = False
        self._marker_epoch = -1
        self._events: list[dict[str, Any]] = []

    def _fire(self, event: str) -> None:
        sources, target = TRANSITIONS[event]
        if self.state not in sources:
            raise InvariantViolation(f"broker {self.broker_id}: {event} in state {self.state}")
        if target is not None and target != self.state:
            self.state = target
            self._emit("broker_state", state=target)

    def _emit(self, kind: str, **attrs: Any) -> None:
        self._events.append({"kind": kind, "broker": self.broker_id, **attrs})

    def drain_events(self) -> list[dict[str, Any]]:
        """Trace events since the last drain (``registered``, ``unfenced``, ``fenced``, ``shutdown``...)."""
        out, self._events = self._events, []
        return out

    @property
    def running(self) -> bool:
        """True in RUNNING: only then may its replicas accept produce as leaders (L1)."""
        return self.state == RUNNING

    def start(self, rng: random.Random, marker_epoch: int | None) -> BrokerRegistrationRequest:
        """B1: new incarnation id (from ``rng``), and the registration carrying the marker epoch (K4).

        ``marker_epoch`` is the epoch read from the clean-shutdown marker, None when the file is missing;
        the server deletes the marker once it has read it (K4 [D]: it must reflect only the latest shutdown).
        """
        self._fire("start")
        self.incarnation_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self._marker_epoch = -1 if marker_epoch is None else marker_epoch
        self.broker_epoch = -1
        self.fenced = True
        self.recovered = False
        self.should_shutdown = False
        return self.registration_request()

    def registration_request(self) -> BrokerRegistrationRequest:
        """The registration to (re)send while STARTING; a retry keeps the incarnation id (C3)."""
        if self.incarnation_id is None:
            raise InvariantViolation("registration before start")
        return BrokerRegistrationRequest(self.broker_id, self.incarnation_id, self.host, self.port,
                                         self._marker_epoch)

    def handle_registration_response(self, err: KafkaError, broker_epoch: int) -> None:
        """Accepted: RECOVERY with the new broker epoch (C4). Refused: stay STARTING and retry later."""
        if not err.ok:
            self._fire("registration_failed")
            self._emit("registration_failed", error=err.name)
            return
        self._fire("registered")
        self.broker_epoch = broker_epoch
        self._emit("registered", broker_epoch=broker_epoch, incarnation_id=self.incarnation_id,
                   previous_broker_epoch=self._marker_epoch)

    def recovery_complete(self) -> None:
        """B2: the local storage check is done (logs opened, producer state rebuilt)."""
        self._fire("recovery_complete")
        self.recovered = True
        self._emit("recovered")

    def build_heartbeat(self, metadata_offset: int) -> BrokerHeartbeatRequest | None:
        """The next heartbeat, or None when not registered. B2: want_fence until caught up to itself."""
        if self.state not in (RECOVERY, RUNNING, PENDING_CONTROLLED_SHUTDOWN):
            return None
        caught_up = self.recovered and metadata_offset >= self.broker_epoch
        return BrokerHeartbeatRequest(self.broker_id, self.broker_epoch, metadata_offset,
                                      want_fence=not caught_up,
                                      want_shutdown=self.state == PENDING_CONTROLLED_SHUTDOWN)

    def handle_heartbeat_response(self, err: KafkaError, is_fenced: bool, should_shutdown: bool) -> None:
        """Track the controller's view: unfenced in RECOVERY -> RUNNING (B2); fenced later (C6) keeps the
        state (the epoch survives, C7); ``should_shutdown`` during a controlled shutdown allows the stop (C9).
        STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED in RECOVERY or RUNNING: the registration is gone,
        back to STARTING to register again (see the module docstring). Any other error changes nothing (the
        next heartbeat retries)."""
        if err.code in REGISTRATION_GONE and self.state in TRANSITIONS["registration_lost"][0]:
            self._fire("registration_lost")
            self._emit("registration_lost", broker_epoch=self.broker_epoch, error=err.name)
            self.fenced = True
            self._marker_epoch = -1  # nothing was written by a clean shutdown since: no clean claim (K4)
            return
        if not err.ok or self.state not in (RECOVERY, RUNNING, PENDING_CONTROLLED_SHUTDOWN):
            return
        if is_fenced != self.fenced:
            self.fenced = is_fenced
            self._emit("fenced" if is_fenced else "unfenced", broker_epoch=self.broker_epoch)
        if self.state == RECOVERY and not is_fenced and self.recovered:
            self._fire("unfenced")
        if self.state == PENDING_CONTROLLED_SHUTDOWN and should_shutdown:
            self.should_shutdown = True

    def begin_controlled_shutdown(self) -> None:
        """C8: ask the controller to move leaderships away before stopping."""
        self._fire("begin_controlled_shutdown")

    def shutdown_complete(self) -> int:
        """B4: the broker has flushed everything and stops; returns the epoch to write to the marker (K4)."""
        if not self.should_shutdown:
            raise InvariantViolation(f"broker {self.broker_id} stopping before the controller allowed it (C9)")
        self._fire("shutdown_complete")
        self._emit("shutdown", clean=True, broker_epoch=self.broker_epoch)
        return self.broker_epoch

    def crash(self) -> None:
        """An unclean stop: no marker is written, so the next registration carries -1 (K4)."""
        self._fire("crash")
        self._emit("shutdown", clean=False, broker_epoch=self.broker_epoch)


__all__ = ["BrokerLifecycle", "BrokerRegistrationRequest", "BrokerHeartbeatRequest", "HeartbeatReply",
           "TRANSITIONS",
           "OFFLINE", "STARTING", "RECOVERY", "RUNNING", "PENDING_CONTROLLED_SHUTDOWN"]
