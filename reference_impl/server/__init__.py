"""asyncio shell around the protocol core: broker and controller processes on the Kafka wire protocol.

Theory of operation. Every protocol decision lives in ``reference_impl.protocol`` (sans-IO); this package
gives it sockets, files, clocks and signals, and nothing else. Two kinds of process, one per node:

- ``controller`` (``python -m reference_impl.server.controller --config FILE``): the controller core
  behind a change lock. A change is computed as records, appended to the durable metadata log
  (``metadata_log``, fsynced, C1), replayed, and only then answered. It serves the inter-node APIs
  (BrokerRegistration 62, BrokerHeartbeat 63, AlterPartition 56, MetadataLogFetch 10000) and the admin APIs
  (``controller_core`` adapts the core to the wire layer's ``AdminServices``); timers fence expired sessions
  (C6), advance KIP-435 steps and run opt-in unclean elections. Dynamic configuration (``reassignment.mode``,
  KIP-435 parallelism, election and min-ISR keys) arrives by AlterConfigs / IncrementalAlterConfigs
  (``config_alter`` decides which keys on which resources) or SIGHUP, and is committed as ConfigRecords that
  brokers apply too, so DescribeConfigs on any node reports the dynamic value and its source.
- ``broker`` (``python -m reference_impl.server.broker --config FILE``): the lifecycle (B1-B5) from
  ``protocol.broker``, the metadata image from ``protocol.metadata_image`` fed by a long-polling pull of the
  controller's log (``controller_link``), one ``PartitionReplica`` per hosted partition over a file-backed
  ``storage.SegmentLog`` (``replica_manager``), follower fetchers per leader (``fetcher``), the ISR loop
  (AlterPartition), produce/fetch/list-offsets through the wire layer's ``BrokerServices``, controlled
  shutdown on SIGTERM and the clean-shutdown marker (K4).

Time: protocol timers use ``time.monotonic`` (the clock nemesis skews only the wall clock); trace events
(``trace``) carry raw ``monotonic_ns``. Configuration: ``config`` (the node-process contract; an invalid
file exits with code 2 naming the key; ``entry`` parses the ``--config FILE`` command line both
processes share). Deliberate rule breaks for checker self-tests: ``bugs`` (``inject.bug``).
``local_cluster`` starts a loopback cluster for tests and benchmarks.

What it does not do: a replicated controller quorum (one controller; its log is durable but not
replicated), transactions, compaction or retention, TLS/SASL. A background task that fails with an
exception halts the process (exit 3): a node that silently stopped following the protocol would be worse.
"""
