"""The client-facing Kafka APIs of a node: decoded request in, response message out.

Theory of operation
===================
Each handler translates a kafka-python request object into calls on ``services.BrokerServices`` /
``services.AdminServices`` and the returned dataclasses into the response message at the request's
version. No handler holds state. Three modules, one job each:

- ``broker``: the data-plane (client) APIs a broker serves itself: Produce, Fetch, ListOffsets, Metadata,
  FindCoordinator, InitProducerId, OffsetForLeaderEpoch, DescribeCluster (``BrokerApis``);
- ``admin``: CreateTopics, DescribeConfigs, AlterConfigs / IncrementalAlterConfigs, ElectLeaders,
  AlterPartitionReassignments, ListPartitionReassignments (``AdminApis``): served with ``AdminServices``
  on the controller; on a broker relayed raw to the controller (as KRaft brokers forward them), except
  DescribeConfigs when the broker can answer it itself;
- ``groups``: the group coordinator's APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
  OffsetFetch, DescribeGroups, ListGroups) and FindCoordinator for groups (``GroupApis``), over a broker's
  ``group_shell.GroupShell``;
- ``error_responses``: the response Kafka sends for a request that fails as a whole, with the error code in
  every item (every partition, topic or resource the request named): for unserved versions
  (UNSUPPORTED_VERSION), handler failures (UNKNOWN_SERVER_ERROR), unreachable controllers (NOT_CONTROLLER,
  REQUEST_TIMED_OUT) and FindCoordinator where nothing coordinates the key (COORDINATOR_NOT_AVAILABLE).

``common`` holds what more than one of them needs (response classes by ``ApiKey``, topic ids as UUIDs,
grouping per topic, the Fetch response body). ``reference_impl.server.client_apis`` puts them together
into one node's handler table (``ClientApiHandlers``, with ApiVersions) and a ``WireServer``
(``build_server``). API keys are ``wire.api_keys.ApiKey`` names throughout.
"""
