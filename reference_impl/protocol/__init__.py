"""Sans-IO core of the Kafka KRaft replication protocol (v3.5 baseline + KIP-966 as a switch).

Theory of operation
===================
Everything that *decides* lives here, as pure deterministic Python using only the standard library: no
sockets, no asyncio, no clocks (time is a ``now_ms`` argument), no global randomness (an ``rng`` argument).
The asyncio servers (``reference_impl.server``), the tests and a later simulator all drive this same code,
so a behaviour proved in a unit test is the behaviour of the running cluster.

The controller side follows Apache Kafka's QuorumController design:

- ``records`` are the metadata log's vocabulary. ``controller.Controller`` handlers (``register_broker``,
  ``heartbeat``, ``alter_partition``, ``alter_partition_reassignments``, ``elect_leaders``, ...) *compute*
  ``ControllerResult(records, response)`` without touching state; ``Controller.replay(record, offset)`` is the
  only mutator, used both live (after the server made the records durable: C1) and on recovery. Each
  handler delegates to the control manager owning its concern (``control``, after Kafka's managers):
  ``control.cluster`` (ClusterControlManager: registration, heartbeats, fencing, session timeouts),
  ``control.replication`` (ReplicationControlManager: the builder factory, partition changes of broker
  events, topic creation, AlterPartition), ``control.election`` (ElectLeaders, unclean elections, K7
  recovery), ``control.reassignment`` (C16-C21, KIP-435, KIP-860) and ``control.configuration``
  (ConfigurationControlManager: set_config and the lookups).
- ``partition_change.PartitionChangeBuilder`` is the single place where a partition's next state is decided
  (every manager's partition changes, K7's unclean recovery included, are its records):
  targets default to "unchanged", ``build()`` runs completion (C17-C19), ELR upkeep (K2), election
  (C10-C12, K3) and epoch rules (C2), and returns one record or ``None``.
- ``reassignment`` holds the state-free rules (C16 validation, KIP-860 guard, grow/revert sets, the KIP-435
  planner and batch collector); ``elr`` the KIP-966 list upkeep.

The replica side (``replica``, ``log``, ``divergence``, ``producer_state``, ``broker``, ``metadata_image``) turns
fetches, produce requests and materialized metadata into log, HWM and ISR decisions (L*, F*, T*, B*).

The controller quorum (``raft``: Raft as KRaft does it, KIP-595 with KIP-996's pre-vote) replicates the
metadata log between the controllers; ``quorum_controller.QuorumController`` puts the ``Controller`` on top
of it: every voter replays committed records only, and the leader is the active controller once its
epoch-start record is committed (Q1-Q15).

The work a node does around these objects is here too, so the asyncio servers and the deterministic
simulator (``simulator``) run the same code: ``controller_loop`` (commit = replay + trace events, timer
rounds), ``broker_session`` (registration, heartbeat cadence, the metadata pull with B2's initial
catch-up, L1's produce gate, the clean-shutdown marker epoch), ``follower_fetch`` (per-leader fetch
rounds, F1/F2 for lost fetches), ``isr_loop`` (the ISR timer and lost AlterPartitions) and
``trace_events`` (the events nodes report besides the replicas' own).

Designs Apache Kafka replaced because they lost or diverged data are switches of this core, off by default
(``historical_bugs``: ``ReplicaConfig.historical_bug`` / ``ControllerConfig.historical_bug``), each one small
branch named after the design, so the servers (``inject.bug``) and the simulator (``--inject-bug``) run them
alike; docs/historical-bugs.md tells each story.

What it does not see: the network, disks and time. Durability (C1's commit, B4's flush) and delivery are the
server's job; this core states what must be durable before which answer.

Where the sources (docs/protocol-rules.md section 7) and Apache Kafka disagree, the choice is in the
implementing docstring: completion rule 5.8(i) (``partition_change.CompletionRule``, seed's MinISR rule by
default), replica order during a reassignment (``reassignment`` module docstring, Kafka's order), LKELR
contents (``elr.next_elr``), re-targeting a reassignment in progress (allowed, as in Kafka; C16's "one at a
time" holds because the new one replaces the old atomically), and the seed 000 example 2 leader
(``tests/.../test_reassignment_seed000.py``). ``docs/kafka-differences.md`` lists every place where the
seeds' behaviour is kept over Kafka's.

Rule map: rule of docs/protocol-rules.md -> implementing function
===================================================
Controller side

====  =======================================================================================================
C1    ``Controller`` contract: handlers never mutate, ``Controller.replay`` applies committed records only;
      ``ClusterControl.check_session_timeouts`` fences one broker per result
C2    ``PartitionChangeBuilder.build`` (LE bump decision) + ``records.PartitionState.apply_change`` (PE+1)
C3    ``ClusterControl.register_broker`` (DUPLICATE_BROKER_REGISTRATION unless fenced / same incarnation)
C4    ``ClusterControl.register_broker`` (epoch = offset of the RegisterBrokerRecord, starts fenced)
C5    ``ClusterControl.heartbeat`` / ``ClusterControl.unfence_broker`` -> ``ClusterControl.unfence_records``
      (+ ``ReplicationControl.elect_leaderless``)
C6    ``ClusterControl.fence_broker``, ``ClusterControl.check_session_timeouts`` ->
      ``ReplicationControl.remove_broker``; v3.5 non-empty ISR in ``PartitionChangeBuilder.build``
C7    ``Controller.replay`` (Fence/Unfence records keep the registration's epoch)
C8    ``ClusterControl.heartbeat`` (want_shutdown: CONTROLLED_SHUTDOWN or SHUTDOWN_NOW)
C9    ``ClusterControl._may_shut_down``
C10   ``ReplicationControl.remove_broker``, ``ReplicationControl.elect_leaderless``,
      ``PartitionChangeBuilder.build`` (completion dropping the leader), ``ElectionControl.elect_leaders``
C11   ``PartitionChangeBuilder._elect`` (keep a valid leader, else ISR ∩ acceptable in replica order)
C12   ``PartitionChangeBuilder._elect`` (Election.UNCLEAN), ``ElectionControl.maybe_unclean_elect``,
      ``ElectionControl.elect_leaders``
C13   ``ReplicationControl.alter_partition`` + ``ReplicationControl._validate_alter_partition`` (Kafka's order
      and codes, in the form each AlterPartition version 0-3 knows: ``alter_partition_error_for_version``)
C14   ``ReplicationControl._validate_alter_partition`` (INELIGIBLE_REPLICA)
C15   ``ReplicationControl.alter_partition`` (ISR <- proposal via the builder)
C16   ``reassignment.validate_target``, ``ReassignmentControl._validate``
C17   ``partition_change.reassignment_completion`` (``CompletionRule``)
C18   ``ReassignmentControl._reassign`` + ``reassignment.merged_assignment`` + the builder's completion step
C19   ``PartitionChangeBuilder.build`` (completion re-checked on every AlterPartition)
C20   ``reassignment.merged_assignment`` / ``ReassignmentControl._reassign`` never touch the ISR
C21   ``ReassignmentControl._cancel`` + ``reassignment.revert_assignment``
K1    ``elr.next_elr``; checked by ``elr.elr_invariant_violations`` / ``Controller.invariant_violations``
K2    ``elr.next_elr`` called from ``PartitionChangeBuilder.build``
K3    ``PartitionChangeBuilder._elect`` (ISR, then unfenced ELR member moved to the ISR)
K4    ``ClusterControl.register_broker`` (marker epoch != previous epoch) ->
      ``PartitionChangeBuilder.set_unclean_shutdown_replicas``
K5    ``elr.next_elr`` (LKELR upkeep and clearing)
K6    ``partition_change.reassignment_completion`` (MinISR); HWM/acks gating is L4/L1 on the replica side
K7    ``ElectionControl.unclean_recovery_candidates`` (whom to ask, per strategy) +
      ``ElectionControl.unclean_recovery`` (``ControllerConfig.unclean_recovery_strategy``): ``balanced`` ->
      ``balanced_unclean_recovery`` / ``elr.balanced_recovery_leader``; ``proactive`` ->
      ``elr.proactive_recovery_leader``; ``manual`` never elects by itself (the operator's unclean
      ``elect_leaders``). The record is the builder's UNCLEAN election of the chosen replica
      (``PartitionChangeBuilder.set_unclean_leader``). ``unclean_recovery_queries`` groups the questions
      by broker; the controller process asks them with GetReplicaLogInfo (``server.unclean_recovery``)
K8    a consequence of ``elr.next_elr``; tested (scenario 22), checked as I8 by the checkers
K9    explanatory (no code): why K1-K5 together fix 5.1
K10   explanatory (no code): the availability cost; visible as a leaderless partition in the model
K11   explanatory (no code): the leader's Maximal ISR may miss ELR members (replica side ignores the ELR)
K12   ``elr.next_elr`` (ELR minus the new ISR)
====  =======================================================================================================

Controller quorum (``raft``, ``quorum_controller``; tests in ``tests/reference_impl/protocol/raft/``)

====  =======================================================================================================
Q1    ``raft.node.RaftNode._persist`` before every vote, candidacy, follow and lead (``raft.election_state``)
Q2    ``RaftNode._handle_vote`` / ``RaftNode._can_grant`` (last epoch, then end offset; one vote per epoch)
Q3    ``RaftNode._to_candidate``, ``RaftNode._maybe_win``, ``RaftNode._back_off``, ``RaftNode._vote_answered``
Q4    ``RaftNode._start_election`` (prospective), ``RaftNode._can_grant`` (pre-vote refused while heard)
Q5    ``RaftNode._to_leader`` (epoch start, ``LeaderChangeRecord`` via ``quorum_controller.leader_change_record``)
Q6    ``RaftNode._handle_begin_epoch``, ``RaftNode._handle_end_epoch``, ``RaftNode._maybe_transition``
Q7    ``RaftNode._handle_fetch`` (+ ``divergence.diverging_epoch``)
Q8    ``raft.leader_state.LeaderState._maybe_advance`` (majority index, ``commit_point``, never lower)
Q9    ``RaftNode._fetched`` (``divergence.truncation_offset``, flush before the next fetch, HWM capped)
Q10   ``RaftNode.poll`` (follower fetch deadline, unattached election timeout)
Q11   ``LeaderState.record_follower_contact`` / ``RaftNode.poll`` (resign on check-quorum expiry)
Q12   ``RaftNode._to_resigned``, ``RaftNode._successor_backoff``
Q13   ``RaftNode.handle_response`` -> ``RaftNode._maybe_transition``
Q14   ``quorum_controller.QuorumController`` (``apply_committed``, ``active``, ``submit``/``outcome``,
      ``ClusterControl.activate``)
Q15   ``QuorumController.serve_metadata``, ``broker_session.ControllerDiscovery``
====  =======================================================================================================

Replica side

Tests are in ``tests/reference_impl/protocol/`` (``test_replica_scenarios`` = docs/protocol-rules.md 6 scenarios, ``test_replica_isr`` = L12-L16 with each
L14/L15 condition failing alone, ``test_divergence`` = 6.6 cases A-H, ``test_replica_property`` = hypothesis
interleavings, plus ``test_log``, ``test_producer_state``, ``test_metadata_image``, ``test_broker``).

====  =======================================================================================================
L1    ``replica.PartitionReplica.append_as_leader`` (committed ISR size, as Kafka; TLA+ uses Maximal ISR)
L2    ``replica.PartitionReplica.append_as_leader`` (LogBatch.epoch = current LE)
L3    ``replica.PartitionReplica._maybe_advance_hwm`` (over the Maximal ISR; a member without a fetch in this
      LE blocks; never lowered)
L4    ``replica.PartitionReplica._maybe_advance_hwm`` (``variant="kip966"``: committed ISR >= MinISR)
L5    ``replica.PartitionReplica._complete_acks`` / ``_verdict`` / ``_renounce_leadership``;
      verdicts via ``drain_completed_acks``
L6    no code: a nacked write stays in the log and may commit (scenario 3 test)
L7    ``replica.PartitionReplica.append_as_leader`` (acks 0/1 answered after the local append)
L8    ``replica.PartitionReplica._epoch_error`` (UNKNOWN / FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER)
L9    ``divergence.diverging_epoch`` called by ``PartitionReplica.handle_follower_fetch`` (no state update)
L10   ``replica.FollowerState.record_fetch`` from ``handle_follower_fetch``
L11   ``divergence.end_offset_for_epoch`` (``Log.end_offset_for_epoch``)
L12   ``replica.PartitionReplica.maybe_change_isr`` (one in flight; only real changes;
      ``pending_alter_partition`` for resending)
L13   ``replica.PartitionReplica.maybe_change_isr`` (Maximal ISR = ISR + proposed at once)
L14   ``replica.PartitionReplica._lagging`` (no fetch, or not caught up, within replica_lag_time_max_ms)
L15   ``replica.PartitionReplica._may_join_isr`` (a)-(d); fenced/shutting-down brokers excluded via the
      ``ineligible`` argument (``MetadataImage.ineligible_brokers``)
L16   ``replica.PartitionReplica.handle_alter_partition_response`` (ignore foreign/stale, rollback on error;
      a reply with another LE keeps the change in flight until the metadata arrives, as Kafka)
L17   ``replica.PartitionReplica.apply_metadata`` (PE must increase; clears the pending AP)
L18   ``replica.PartitionReplica.list_offsets`` (OFFSET_NOT_AVAILABLE while HWM < LESO)
F1    ``replica.PartitionReplica.build_fetch`` (+ ``abandon_fetch`` for a fetch lost without reply)
F2    ``replica.PartitionReplica.handle_fetch_response`` (drops; error -> backoff)
F3    ``divergence.truncation_offset``, ``replica.PartitionReplica._truncate_diverged`` (producer state rebuilt;
      the HWM is lowered to the cut as Kafka does, where the TLA+ leaves it)
F4    ``replica.PartitionReplica.handle_fetch_response`` (HWM = min(leader HWM, LEO); may decrease)
F5    ``replica.PartitionReplica`` (only the leader path computes a HWM)
T1    ``replica.PartitionReplica.apply_metadata`` -> ``StopFetching``, ``DeleteLog``; nacks pending writes
T2    ``replica.PartitionReplica.apply_metadata`` (HWM/acks recomputed; followers synced to ``replicas``)
T3    ``replica.PartitionReplica._become_leader`` (LESO, follower reset: all if new, non-ISR if re-elected)
T4    ``replica.PartitionReplica.apply_metadata`` (no-op)
T5    ``replica.PartitionReplica.apply_metadata`` -> ``StartFetching(leader, LE)``; renounces leadership
T6    ``replica.PartitionReplica.apply_metadata`` (role none, ``StopFetching``)
T7    ``replica.PartitionReplica._epoch_error`` on the leader + F2 on the follower
T*    materialization and classification: ``metadata_image.MetadataImage.apply_batch``,
      ``MetadataDelta.transitions_for``, ``metadata_image.classify`` (scenario 25)
B1    ``broker.BrokerLifecycle.start`` (incarnation from the caller's rng, K4 marker epoch)
B2    ``broker.BrokerLifecycle.recovery_complete`` / ``build_heartbeat`` (want_fence until caught up to its
      own registration) / ``handle_heartbeat_response`` (RECOVERY -> RUNNING on unfence);
      ``metadata_image.InitialCatchUp`` (no role taken before the image reaches the registration)
B3    consequence of C3 + T-rules: a restarted replica is a follower outside the ISR until L15 (replica tests)
B4    ``broker.BrokerLifecycle.shutdown_complete`` (marker epoch), ``PartitionReplica.shutdown`` (flush,
      HWM checkpoint, nacks); ``crash`` for unclean stops; page-cache loss is the server's/FUSE's business
B5    ``replica.PartitionReplica.__init__`` (no truncation at boot; HWM from the checkpoint)
====  =======================================================================================================
"""

from .controller import Controller, ControllerConfig, ControllerResult
from .partition_change import CompletionRule, Election, PartitionChangeBuilder

__all__ = [
    "CompletionRule",
    "Controller",
    "ControllerConfig",
    "ControllerResult",
    "Election",
    "PartitionChangeBuilder",
]
