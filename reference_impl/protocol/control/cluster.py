"""Cluster control (Kafka's ClusterControlManager with its BrokerHeartbeatManager): the brokers' lifecycle.

Registration (C3, C4, K4), heartbeats (C5 unfence, C6 fence on request, C8/C9 controlled shutdown),
operator fencing and unfencing, and session timeouts (C6). Which partitions a fence, an unclean
registration or a shutdown changes is replication control's business (``ReplicationControl.remove_broker``
and ``elect_leaderless``); this module puts those records before its own broker record, so one result
commits the whole change (C1).

Soft state (not replicated, as in Kafka's BrokerHeartbeatManager): the time of each broker's last heartbeat
and the metadata offset it reported. A new controller starts it afresh; ``check_session_timeouts`` gives a
broker it has never heard from a full session from its first call, and a new registration starts a new
session (``reset_session``, called from ``Controller.replay``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import OK, Errors, KafkaError, error
from ..records import (
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
)
from .result import ControllerResult

if TYPE_CHECKING:
    from ..controller import Controller


@dataclass(frozen=True)
class RegisterBrokerResponse:
    """Answer to a registration (C3, C4)."""

    error: KafkaError
    broker_epoch: int = -1


@dataclass(frozen=True)
class HeartbeatResponse:
    """Answer to a heartbeat (C5-C9)."""

    error: KafkaError
    is_fenced: bool = True
    in_controlled_shutdown: bool = False
    should_shutdown: bool = False


class ClusterControl:
    """Broker registrations, heartbeats, fencing and session timeouts (module docstring)."""

    def __init__(self, controller: Controller) -> None:
        self._ctl = controller
        self.last_contact_ms: dict[int, int] = {}
        self.metadata_offsets: dict[int, int] = {}

    def activate(self) -> None:
        """This controller just became the active one (Q14): every broker's session starts afresh, as Kafka
        rebuilds its BrokerHeartbeatManager on claiming leadership. Contacts remembered from an earlier
        term would fence every broker at the first timeout check."""
        self.last_contact_ms.clear()
        self.metadata_offsets.clear()

    def reset_session(self, broker_id: int) -> None:
        """A new registration of ``broker_id`` was replayed: its session starts at the next timeout check."""
        self.last_contact_ms.pop(broker_id, None)

    def check_broker_epoch(self, broker_id: int, broker_epoch: int) -> KafkaError:
        """STALE_BROKER_EPOCH unless ``broker_epoch`` is the broker's registered epoch (Kafka's
        ClusterControlManager.checkBrokerEpoch: a whole AlterPartition request fails on it, C13)."""
        reg = self._ctl.brokers.get(broker_id)
        if reg is None or reg.epoch != broker_epoch:
            return error(Errors.STALE_BROKER_EPOCH, f"broker {broker_id} epoch {broker_epoch} is not registered")
        return OK

    # -- registration (C3, C4, K4) ------------------------------------------------------------------------
    def register_broker(self, broker_id: int, incarnation_id: str, *, host: str = "", port: int = 0,
                        previous_broker_epoch: int = -1) -> ControllerResult:
        """C3/C4 (+K4): accept unless another live incarnation holds the id; the new epoch is the offset of
        the registration record and the broker starts fenced. ``previous_broker_epoch`` is the epoch read
        from the clean-shutdown marker (-1: none). With ELR, a registration whose marker does not match the
        previous registration's epoch is an unclean shutdown: the broker leaves every ISR, ELR (to the
        LKELR) and leadership (K4)."""
        existing = self._ctl.brokers.get(broker_id)
        if existing is not None and not existing.fenced and existing.incarnation_id != incarnation_id:
            # C3: a new epoch needs the old session fenced first.
            return ControllerResult([], RegisterBrokerResponse(
                error(Errors.DUPLICATE_BROKER_REGISTRATION, f"broker {broker_id} is registered and unfenced")))
        records: list[Any] = []
        if existing is not None:
            unclean = self._ctl.config.elr_enabled and previous_broker_epoch != existing.epoch
            # The new registration is fenced (C4), so a retry from an unfenced incarnation leaves the ISRs
            # the way a fence does (C6); an unclean one is also purged from the ELR (K4).
            records += self._ctl.replication.remove_broker(broker_id, unclean=unclean, include_elr=unclean)
        epoch = self._ctl.next_offset + len(records)
        records.append(RegisterBrokerRecord(broker_id, incarnation_id, epoch, host, port, fenced=True,
                                            previous_broker_epoch=previous_broker_epoch))
        return ControllerResult(records, RegisterBrokerResponse(OK, epoch))

    # -- heartbeats (C5-C9) --------------------------------------------------------------------------------
    def heartbeat(self, broker_id: int, broker_epoch: int, *, want_fence: bool, want_shutdown: bool,
                  metadata_offset: int, now_ms: int) -> ControllerResult:
        """A broker heartbeat: unfence (C5), fence on request (C6), controlled shutdown (C8, C9)."""
        reg = self._ctl.brokers.get(broker_id)
        if reg is None:
            return ControllerResult([], HeartbeatResponse(error(Errors.BROKER_ID_NOT_REGISTERED)))
        if reg.epoch != broker_epoch:
            return ControllerResult([], HeartbeatResponse(error(Errors.STALE_BROKER_EPOCH),
                                                          reg.fenced, reg.in_controlled_shutdown))
        self.last_contact_ms[broker_id] = now_ms
        self.metadata_offsets[broker_id] = metadata_offset
        if want_shutdown:
            if reg.fenced:
                return ControllerResult([], HeartbeatResponse(OK, True, False, True))
            if reg.in_controlled_shutdown:
                if self._may_shut_down(broker_id):
                    return ControllerResult(self.fence_records(broker_id), HeartbeatResponse(OK, True, False, True))
                return ControllerResult([], HeartbeatResponse(OK, False, True, False))
            if self._ctl.leads_any(broker_id):
                # C8: CONTROLLED_SHUTDOWN: move its leaderships (Kafka also takes it out of every ISR), then
                # the registration change last, so its offset is the one others must reach (C9).
                records: list[Any] = self._ctl.replication.remove_broker(broker_id, overrides={broker_id: False})
                records.append(BrokerRegistrationChangeRecord(broker_id, reg.epoch, in_controlled_shutdown=True))
                return ControllerResult(records, HeartbeatResponse(OK, False, True, False))
            # C8: leads nothing: SHUTDOWN_NOW.
            return ControllerResult(self.fence_records(broker_id), HeartbeatResponse(OK, True, False, True))
        if reg.fenced:
            if not want_fence and metadata_offset >= reg.epoch:
                # C5: caught up to its own registration record.
                return ControllerResult(self.unfence_records(broker_id), HeartbeatResponse(OK, False))
            return ControllerResult([], HeartbeatResponse(OK, True))
        if want_fence:
            return ControllerResult(self.fence_records(broker_id), HeartbeatResponse(OK, True))
        return ControllerResult([], HeartbeatResponse(OK, False, reg.in_controlled_shutdown))

    def _may_shut_down(self, broker_id: int) -> bool:
        """C9: CONTROLLED_SHUTDOWN -> SHUTDOWN_NOW once it leads nothing and every other unfenced, not
        shutting-down broker has reached its controlled-shutdown offset."""
        if self._ctl.leads_any(broker_id):
            return False
        target = self._ctl.brokers[broker_id].controlled_shutdown_offset or 0
        return all(self.metadata_offsets.get(b, -1) >= target for b, r in self._ctl.brokers.items()
                   if b != broker_id and not r.fenced and not r.in_controlled_shutdown)

    # -- fencing (C5, C6) ----------------------------------------------------------------------------------
    def fence_broker(self, broker_id: int) -> ControllerResult:
        """Fence a broker now (session timeout, operator); response: a KafkaError (C6)."""
        reg = self._ctl.brokers.get(broker_id)
        if reg is None:
            return ControllerResult([], error(Errors.BROKER_ID_NOT_REGISTERED))
        if reg.fenced:
            return ControllerResult([], OK)
        return ControllerResult(self.fence_records(broker_id), OK)

    def unfence_broker(self, broker_id: int) -> ControllerResult:
        """Unfence a broker without a heartbeat's catch-up check (C5); response: a KafkaError."""
        reg = self._ctl.brokers.get(broker_id)
        if reg is None:
            return ControllerResult([], error(Errors.BROKER_ID_NOT_REGISTERED))
        if not reg.fenced:
            return ControllerResult([], OK)
        return ControllerResult(self.unfence_records(broker_id), OK)

    def check_session_timeouts(self, now_ms: int) -> ControllerResult:
        """C6: fence the first unfenced broker (by id) whose session expired; response: its id or None.
        One broker per result (C1): call again after replaying until it returns no records."""
        for broker_id in sorted(self._ctl.brokers):
            reg = self._ctl.brokers[broker_id]
            if reg.fenced:
                continue
            last = self.last_contact_ms.setdefault(broker_id, now_ms)
            if now_ms - last > self._ctl.config.session_timeout_ms:
                return ControllerResult(self.fence_records(broker_id), broker_id)
        return ControllerResult([], None)

    def fence_records(self, broker_id: int) -> list[Any]:
        """C6: the broker leaves its ISRs and leaderships (replication control), then the fence itself."""
        reg = self._ctl.brokers[broker_id]
        records: list[Any] = self._ctl.replication.remove_broker(broker_id, overrides={broker_id: False})
        records.append(FenceBrokerRecord(broker_id, reg.epoch))
        return records

    def unfence_records(self, broker_id: int) -> list[Any]:
        """C5: the unfence, then elections of leaderless partitions the broker can now lead."""
        reg = self._ctl.brokers[broker_id]
        # C5: no ISR change; C10/K3: leaderless partitions may now elect this broker.
        return [UnfenceBrokerRecord(broker_id, reg.epoch), *self._ctl.replication.elect_leaderless({broker_id: True})]
