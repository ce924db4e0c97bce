"""A broker's session with the controller, without the IO: when to register, heartbeat and pull metadata,
which pulled metadata to apply, and how a stop ends (B1, B2, B4, C3, C5, C8, K4).

The lifecycle state machine (``broker.BrokerLifecycle``) says *what* to send; this module says *when* and
what to do with the answers, for the broker process and the deterministic simulator alike:

- registration: resent with the same incarnation every ``REGISTRATION_RETRY_MS`` until accepted (C3 refuses
  it while the previous session is still unfenced); once accepted the broker's storage is already
  recovered, so ``registered`` completes RECOVERY's storage step at once (B2, B5);
- heartbeats: every ``FAST_HEARTBEAT_MS`` while starting, fenced or shutting down (to be unfenced or let go
  quickly), else every ``broker.heartbeat.interval.ms`` (``heartbeat_delay_ms``);
- metadata: ``MetadataPull`` long-polls the controller's log from the image's offset, holding everything up
  to the broker's own registration until it can be applied as one batch (``InitialCatchUp``, B2);
- produce is accepted only while RUNNING, or while still leading during a controlled shutdown (L1);
- a stop begins with ``begin_stop`` (C8: a controlled shutdown, waited for until the controller allows it
  or a session timeout passes) and ends with ``stop_marker_epoch``: the clean-shutdown marker gets the
  epoch of the session it ends (K4), also when the controller never confirmed the shutdown in time:
  everything was flushed either way;
- logs found at start for partitions the broker no longer hosts (removed while it was away, T1) are
  ``stray_logs`` once the image has caught up to the broker's own registration (only then is it complete);
- which controller to talk to (Q15): ``ControllerDiscovery`` follows the active controller the quorum's
  answers name (NOT_CONTROLLER with a leader, a metadata answer's leader) and moves to the next voter when
  the one it tried does not answer, so registrations, heartbeats, AlterPartitions and metadata pulls sent
  to a deposed controller are retried on the new one.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from reference_impl.protocol.broker import (
    PENDING_CONTROLLED_SHUTDOWN,
    RECOVERY,
    RUNNING,
    STARTING,
    BrokerLifecycle,
)
from reference_impl.protocol.errors import KafkaError
from reference_impl.protocol.metadata_image import InitialCatchUp, MetadataImage

REGISTRATION_RETRY_MS = 500
NOT_CONTROLLER_RETRY_MS = 50  # a request refused by a non-active controller goes to the next one soon
FAST_HEARTBEAT_MS = 100
METADATA_MAX_WAIT_MS = 500
METADATA_RETRY_MS = 500
HWM_CHECKPOINT_INTERVAL_MS = 1000
PERIODIC_INTERVAL_MS = 100

Batch = Sequence[tuple[int, Any]]


def registered(lifecycle: BrokerLifecycle, err: KafkaError, broker_epoch: int) -> bool:
    """Apply a registration answer (C3/C4); on acceptance storage recovery is already done (B2). Returns
    whether it was accepted (if not, retry after ``REGISTRATION_RETRY_MS`` with the same request)."""
    lifecycle.handle_registration_response(err, broker_epoch)
    if not err.ok:
        return False
    lifecycle.recovery_complete()
    return True


def heartbeat_delay_ms(lifecycle: BrokerLifecycle, interval_ms: int) -> int:
    """How long to wait before the next heartbeat: fast until RUNNING and unfenced, then the interval."""
    return FAST_HEARTBEAT_MS if lifecycle.state != RUNNING or lifecycle.fenced else interval_ms


def accepts_produce(lifecycle: BrokerLifecycle) -> bool:
    """L1: a broker appends as leader only while RUNNING (or still leading in a controlled shutdown)."""
    return lifecycle.state in (RUNNING, PENDING_CONTROLLED_SHUTDOWN)


def begin_stop(lifecycle: BrokerLifecycle) -> None:
    """SIGTERM: ask for a controlled shutdown (C8) unless the broker is already stopping or stopped; the
    caller then waits for ``lifecycle.should_shutdown`` (C9) at most ``broker.session.timeout.ms``."""
    if lifecycle.state in (RUNNING, RECOVERY, STARTING):
        lifecycle.begin_controlled_shutdown()


def stray_logs(logs: Iterable[tuple[Hashable, str, int]], image: MetadataImage, broker_id: int,
               broker_epoch: int) -> list[Hashable]:
    """Of the ``(key, topic, partition)`` logs found at start and not yet claimed, those to delete (T1 while
    away); empty until the image has reached the broker's own registration (offset ``broker_epoch``)."""
    if broker_epoch < 0 or not image.caught_up_to(broker_epoch):
        return []
    out = []
    for key, topic, partition in logs:
        topic_id = image.topic_id(topic)
        state = image.partition(topic_id, partition) if topic_id is not None else None
        if state is None or broker_id not in state.replicas:
            out.append(key)
    return out


def stop_marker_epoch(lifecycle: BrokerLifecycle) -> int:
    """B4/K4: the epoch to write into the clean-shutdown marker once everything is flushed and closed."""
    if lifecycle.should_shutdown:
        return lifecycle.shutdown_complete()
    return lifecycle.broker_epoch


class MetadataPull:
    """The broker's pull of the controller's metadata log into its ``MetadataImage`` (B2, T*).

    ``next_offset`` is where the next pull starts; ``receive`` takes the pulled batches (lists of
    ``(offset, record)``) and returns the batches to apply now, in order. Until the image reaches the
    broker's own registration (offset = its broker epoch) nothing is returned: the batches are held and
    then returned as one, so a restarted broker never takes a role from an old state of the log.
    """

    def __init__(self, image: MetadataImage, broker_epoch: int) -> None:
        self.image = image
        self._catch_up = InitialCatchUp(broker_epoch, image.offset)

    @property
    def caught_up(self) -> bool:
        """True once the image has reached the broker's own registration."""
        return self._catch_up.done

    @property
    def next_offset(self) -> int:
        """The first offset the next pull asks for."""
        held = self._catch_up.next_offset_after
        return (held if held is not None else self.image.offset) + 1

    def receive(self, batches: Sequence[Batch]) -> list[list[tuple[int, Any]]]:
        """The batches to apply now (to ``image.apply_batch``, then the T-rules), possibly none."""
        return self._catch_up.add(batches)


class ControllerDiscovery:
    """The controller a broker sends its requests to (Q15).

    It starts with the first voter. An answer naming the active controller (a metadata pull's answer, or
    NOT_CONTROLLER with a known leader) moves it there; a voter that does not answer, or refuses without
    naming a leader, sends it to the next voter in turn. With one controller it always names that one.
    """

    def __init__(self, voters: Sequence[int]) -> None:
        if not voters:
            raise ValueError("no controller voters")
        self.voters = tuple(voters)
        self._index = 0
        self.leader: int | None = None

    def target(self) -> int:
        """Where the next request goes."""
        return self.leader if self.leader is not None else self.voters[self._index]

    def learned(self, leader: int | None) -> None:
        """An answer named the active controller (None, or an unknown id: nothing learned)."""
        if leader is not None and leader in self.voters:
            self.leader = leader
            self._index = self.voters.index(leader)

    def failed(self, voter: int) -> None:
        """``voter`` did not answer: try the next one (unless another target was learned meanwhile)."""
        if voter == self.target():
            self.leader = None
            self._index = (self.voters.index(voter) + 1) % len(self.voters) if voter in self.voters else 0

    def not_controller(self, voter: int, leader: int | None) -> None:
        """``voter`` refused with NOT_CONTROLLER, naming ``leader`` (or none)."""
        if leader is not None and leader in self.voters and leader != voter:
            self.learned(leader)
        else:
            self.failed(voter)
