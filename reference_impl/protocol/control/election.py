"""Replication control, elections side (Kafka's ReplicationControlManager): leader elections asked for by
an operator or a timer, and KIP-966's unclean recovery.

- ``elect_leaders`` (ElectLeaders: PREFERRED, C10; UNCLEAN, C12);
- ``maybe_unclean_elect``: the periodic C12 election for leaderless partitions of topics that opted in;
- K7 unclean recovery: ``unclean_recovery_candidates`` says whom to ask for their log ends under
  ``unclean.recovery.strategy`` (``unclean_recovery_queries``: the same for every partition, by broker), ``unclean_recovery`` / ``balanced_unclean_recovery`` elect from the
  answers (``elr.balanced_recovery_leader`` / ``elr.proactive_recovery_leader`` pick the replica, the
  builder's UNCLEAN election with ``set_unclean_leader`` makes the record);
- ``clear_elr`` (Kafka's ClearElrRecord, e.g. when the ELR feature is turned off).

Every record comes from ``PartitionChangeBuilder`` (``ReplicationControl.builder``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..elr import balanced_recovery_leader, proactive_recovery_leader
from ..errors import OK, Errors, KafkaError, error
from ..partition_change import Election
from ..records import NO_LEADER
from .result import ControllerResult, TopicPartition

if TYPE_CHECKING:
    from ..controller import Controller


class ElectionControl:
    """Operator and timer elections, and K7's unclean recovery (module docstring)."""

    def __init__(self, controller: Controller) -> None:
        self._ctl = controller

    def elect_leaders(self, election_type: Election | str,
                      partitions: Iterable[TopicPartition] | None = None) -> ControllerResult:
        """ElectLeaders (PREFERRED or UNCLEAN); response ``{tp: KafkaError}``: ELECTION_NOT_NEEDED (the
        preferred replica leads / a leader exists), PREFERRED_LEADER_NOT_AVAILABLE,
        ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION. With ``partitions`` None every partition
        is tried and the ELECTION_NOT_NEEDED ones are left out (as Kafka does)."""
        kind = Election(election_type) if isinstance(election_type, str) else election_type
        if kind is Election.ONLINE:
            raise ValueError("ElectLeaders takes PREFERRED or UNCLEAN")
        everything = partitions is None
        wanted = [tp for tp, _ in self._ctl.partitions()] if everything else list(partitions)
        records: list[Any] = []
        response: dict[TopicPartition, KafkaError] = {}
        for topic, pid in wanted:
            info = self._ctl.find_topic(topic)
            if info is None or pid not in info.partitions:
                response[(topic, pid)] = error(Errors.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            p = info.partitions[pid]
            if (kind is Election.PREFERRED and p.leader == p.replicas[0]) or \
                    (kind is Election.UNCLEAN and p.leader != NO_LEADER):
                if not everything:
                    response[(topic, pid)] = error(Errors.ELECTION_NOT_NEEDED)
                continue
            record = self._ctl.replication.builder((info.name, pid)).set_election(kind).build()
            if record is None:
                response[(topic, pid)] = error(Errors.PREFERRED_LEADER_NOT_AVAILABLE if kind is Election.PREFERRED
                                               else Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE)
                continue
            records.append(record)
            response[(topic, pid)] = OK
        return ControllerResult(records, response)

    def maybe_unclean_elect(self) -> ControllerResult:
        """Periodic C12: leaderless partitions of topics with unclean election enabled get any live
        replica as leader (declared unsafe). Response: the partitions elected."""
        records, elected = [], []
        for tp, p in self._ctl.partitions():
            if p.leader != NO_LEADER or not self._ctl.unclean_enabled(tp[0]):
                continue
            record = self._ctl.replication.builder(tp).set_election(Election.UNCLEAN).build()
            if record is not None:
                records.append(record)
                elected.append(tp)
        return ControllerResult(records, elected)

    def clear_elr(self, partitions: Iterable[TopicPartition] | None = None) -> ControllerResult:
        """Empty ELR and LKELR (Kafka's ClearElrRecord, e.g. when the ELR feature is turned off)."""
        wanted = None if partitions is None else set(partitions)
        records = []
        for tp, p in self._ctl.partitions():
            if (wanted is None or tp in wanted) and (p.elr or p.last_known_elr):
                record = self._ctl.replication.builder(tp).set_clear_elr().build()
                if record is not None:
                    records.append(record)
        return ControllerResult(records, OK)

    # -- K7 unclean recovery -------------------------------------------------------------------------------
    def balanced_unclean_recovery(self, tp: TopicPartition, replies: Mapping[int, tuple[int, int]]
                                  ) -> ControllerResult:
        """K7 ``balanced``: for a partition with ISR = ELR = ∅, elect the LKELR member with the highest
        ``(last epoch, end offset)`` once every LKELR member answered (``replies``, from GetReplicaLogInfo).
        The new leader is the ISR alone, RECOVERING, and ELR/LKELR are cleared (as after C12). Response:
        KafkaError (ELIGIBLE_LEADERS_NOT_AVAILABLE while answers are missing or nobody is live)."""
        info = self._ctl.find_topic(tp[0])
        if info is None or tp[1] not in info.partitions:
            return ControllerResult([], error(Errors.UNKNOWN_TOPIC_OR_PARTITION))
        p = info.partitions[tp[1]]
        if p.leader != NO_LEADER or p.isr or p.elr:
            return ControllerResult([], error(Errors.ELECTION_NOT_NEEDED, "ISR or ELR can still elect (K3)"))
        acceptable = self._ctl.replication.acceptor()
        leader = balanced_recovery_leader(p.last_known_elr, dict(replies),
                                          [r for r in p.replicas if acceptable(r)])
        if leader is None:
            return ControllerResult([], error(Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                              "waiting for every last-known-ELR member (K7)"))
        return self._recover((info.name, tp[1]), leader)

    def unclean_recovery_candidates(self, tp: TopicPartition) -> list[int]:
        """K7: the replicas to ask for their ``(last epoch, end offset)`` (GetReplicaLogInfo) before an
        unclean recovery of ``tp`` under the configured strategy; empty when no recovery is due.

        ``balanced``: only a leaderless partition with ISR = ELR = ∅; every LKELR member is asked (and all
        must answer). ``proactive``: also a leaderless partition whose ISR is empty and whose ELR members
        are all ineligible (fenced or shutting down: K3 cannot elect); every live replica is asked.
        ``manual``: never (the operator runs an unclean ElectLeaders). Without KIP-966: never (C12 applies).
        """
        info = self._ctl.find_topic(tp[0])
        if not self._ctl.config.elr_enabled or info is None or tp[1] not in info.partitions:
            return []
        p = info.partitions[tp[1]]
        if p.leader != NO_LEADER or p.isr:
            return []
        strategy = self._ctl.config.unclean_recovery_strategy
        acceptable = self._ctl.replication.acceptor()
        if strategy == "balanced":
            return [] if p.elr else list(p.last_known_elr)
        if strategy == "proactive":
            if any(acceptable(r) for r in p.elr):
                return []  # K3 elects an ELR member: nothing unclean about it
            return [r for r in p.replicas if acceptable(r)]
        return []  # manual

    def unclean_recovery_queries(self) -> dict[int, list[TopicPartition]]:
        """K7 for every partition at once: broker id -> the partitions (by topic name) whose log end it must
        report (one GetReplicaLogInfo per broker), from ``unclean_recovery_candidates``; empty when no
        recovery is due. A shell asks, then hands each partition's answers to ``unclean_recovery``."""
        queries: dict[int, list[TopicPartition]] = {}
        for tp, _state in self._ctl.partitions():
            for broker in self.unclean_recovery_candidates(tp):
                queries.setdefault(broker, []).append(tp)
        return queries

    def unclean_recovery(self, tp: TopicPartition, replies: Mapping[int, tuple[int, int]],
                         window_closed: bool = False) -> ControllerResult:
        """K7 under ``unclean.recovery.strategy``: elect from the answers of the replicas named by
        ``unclean_recovery_candidates``. ``balanced`` waits for every LKELR member
        (``balanced_unclean_recovery``); ``proactive`` takes the best live answer once every live replica
        answered or ``window_closed``; ``manual`` never elects here. The new leader is the ISR alone,
        RECOVERING, ELR/LKELR cleared; the election is always possible data loss. Response: KafkaError
        (ELIGIBLE_LEADERS_NOT_AVAILABLE while waiting or under ``manual``; ELECTION_NOT_NEEDED when the
        strategy has nothing to recover)."""
        strategy = self._ctl.config.unclean_recovery_strategy
        if strategy == "balanced":
            return self.balanced_unclean_recovery(tp, replies)
        info = self._ctl.find_topic(tp[0])
        if info is None or tp[1] not in info.partitions:
            return ControllerResult([], error(Errors.UNKNOWN_TOPIC_OR_PARTITION))
        if strategy == "manual":
            return ControllerResult([], error(Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                              "unclean.recovery.strategy=manual: waiting for an operator's "
                                              "unclean election (K7)"))
        asked = self.unclean_recovery_candidates(tp)
        if not asked and info.partitions[tp[1]].leader != NO_LEADER:
            return ControllerResult([], error(Errors.ELECTION_NOT_NEEDED, "the partition has a leader"))
        acceptable = self._ctl.replication.acceptor()
        p = info.partitions[tp[1]]
        if p.isr or any(acceptable(r) for r in p.elr):
            return ControllerResult([], error(Errors.ELECTION_NOT_NEEDED, "ISR or ELR can still elect (K3)"))
        leader = proactive_recovery_leader(asked, dict(replies), [r for r in p.replicas if acceptable(r)],
                                           window_closed)
        if leader is None:
            return ControllerResult([], error(Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                              "waiting for the live replicas' answers (K7 proactive)"))
        return self._recover((info.name, tp[1]), leader)

    def _recover(self, tp: TopicPartition, leader: int) -> ControllerResult:
        """K7: the recovered leader leads alone, RECOVERING, with ELR and LKELR cleared (a new LE): the
        builder's UNCLEAN election, told which replica the recovery chose."""
        record = (self._ctl.replication.builder(tp).set_election(Election.UNCLEAN)
                  .set_unclean_leader(leader).build())
        if record is None:  # the chosen replica is not a leader candidate (callers only offer live ones)
            return ControllerResult([], error(Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, f"replica {leader} is not live"))
        return ControllerResult([record], OK)
