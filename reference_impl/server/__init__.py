"""asyncio shell around the protocol core: broker and controller processes on the Kafka wire protocol.

Theory of operation. Every protocol decision lives in ``reference_impl.protocol`` (sans-IO); this package
gives it sockets, files, clocks and signals, and nothing else. Two kinds of process, one per node:

- ``controller`` (``python -m reference_impl.server.controller --config FILE``): one voter of the
  controller quorum (``controller.quorum.voters``; a quorum of one without it). ``quorum`` gives the sans-IO
  ``QuorumController`` its timers and connections (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch on the
  controller listener, ``raft_wire``; DescribeQuorum for operators), ``metadata_log`` is the quorum's log
  and ``election_store`` its durable election state. On the active controller a change is computed as
  records behind a change lock, replicated by the quorum, replayed once committed (C1, Q14), and only
  then answered; other voters answer NOT_CONTROLLER. It serves the inter-node APIs
  (BrokerRegistration 62, BrokerHeartbeat 63, AlterPartition 56, MetadataLogFetch 10000) and the admin APIs
  (``controller_core`` adapts the core to the wire layer's ``AdminServices``); timers fence expired sessions
  (C6), advance KIP-435 steps and run opt-in unclean elections, and ``unclean_recovery`` asks brokers for
  their log ends (GetReplicaLogInfo 93) to run K7 on partitions with an empty ISR and ELR. Dynamic configuration (``reassignment.mode``,
  KIP-435 parallelism, election and min-ISR keys) arrives by AlterConfigs / IncrementalAlterConfigs
  (``config_alter`` decides which keys on which resources) or SIGHUP, and is committed as ConfigRecords that
  brokers apply too, so DescribeConfigs on any node reports the dynamic value and its source.
- ``broker`` (``python -m reference_impl.server.broker --config FILE``): the lifecycle (B1-B5) from
  ``protocol.broker``, the metadata image from ``protocol.metadata_image`` fed by a long-polling pull of the
  controller's log (``controller_link``), one ``PartitionReplica`` per hosted partition over a file-backed
  ``storage.SegmentLog`` (``replica_manager``), follower fetchers per leader (``fetcher``), the ISR loop
  (AlterPartition), produce/fetch/list-offsets through the wire layer's ``BrokerServices``, the group and
  transaction coordinators (``group_shell``, ``txn_coordinator``), the answer to GetReplicaLogInfo
  (``apis.replica_log_info``), controlled shutdown on SIGTERM and the clean-shutdown marker (K4).

Time: protocol timers use ``time.monotonic`` (the clock nemesis skews only the wall clock); trace events
(``trace``) carry raw ``monotonic_ns``. Configuration: ``config`` (the node-process contract; an invalid
file exits with code 2 naming the key; ``entry`` parses the ``--config FILE`` command line both
processes share). Deliberate rule breaks for checker self-tests: ``bugs`` (``inject.bug``).
``local_cluster`` starts a loopback cluster for tests and benchmarks.

What it does not do: snapshots of the metadata log, dynamic quorum membership (KIP-853), compaction or
retention, TLS/SASL. A background task that fails with an
exception halts the process (exit 3): a node that silently stopped following the protocol would be worse.
"""
