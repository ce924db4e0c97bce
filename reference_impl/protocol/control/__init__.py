"""The controller's control managers, after Apache Kafka's QuorumController.

Theory of operation
===================
Kafka's QuorumController keeps no decision logic of its own: each concern is a *control manager* that
reads the current state and returns records (plus the answer to send), and the controller replays the
records once they are committed. Here the same split holds; ``protocol.controller.Controller`` keeps the
replicated state, ``replay`` (its only mutator), the self-checks and one delegating method per handler,
and the managers compute:

==================  ============================  ==============================================================
module              Kafka                         concern
==================  ============================  ==============================================================
``cluster``         ClusterControlManager (+      registration (C3, C4, K4), heartbeats (C5, C8, C9), fencing
                    BrokerHeartbeatManager)       and unfencing (C5, C6), session timeouts (C6); soft state
``replication``     ReplicationControlManager     the ``PartitionChangeBuilder`` factory, partition changes of
                                                  broker events (C6, C10, K3, K4), topic creation,
                                                  AlterPartition (C13-C15, C19)
``election``        ReplicationControlManager     ElectLeaders (C10, C12), periodic unclean elections (C12),
                                                  KIP-966 unclean recovery (K7), ClearElr
``reassignment``    ReplicationControlManager     KIP-435 all-at-once and incremental reassignment (C16-C21),
                    (reassignments)               KIP-860's guard, cancel, list
``configuration``   ConfigurationControlManager   set_config and the lookups (min.insync.replicas, unclean
                                                  election, reassignment mode and parallelism)
==================  ============================  ==============================================================

``result`` holds ``ControllerResult``; ``state`` the replicated state's shapes (broker registration,
topic).

Rules the managers follow:

- **compute, never mutate**: a handler reads ``Controller`` state and returns a ``ControllerResult``; only
  ``Controller.replay`` changes replicated state (C1). Cluster control's heartbeat bookkeeping is soft
  state, as in Kafka, and not replicated;
- **one builder**: every partition change, whoever asks for it, is a ``PartitionChangeBuilder`` record
  (``ReplicationControl.builder``); no manager writes a ``PartitionChangeRecord`` by hand;
- **wiring through the controller**: a manager reaches the state and its peers as attributes of the
  ``Controller`` it was built with (``controller.cluster``, ``.replication``, ``.elections``,
  ``.reassignments``, ``.configuration``), so the modules never import one another's classes, and the
  Controller's public methods stay the one entry point servers, the simulator and tests call (and patch).
"""
