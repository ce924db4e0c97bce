"""The classic consumer-group coordinator, sans-IO: groups, generations, rebalances, committed offsets.

Theory of operation
===================
A consumer group is a set of members that share the partitions of the topics they subscribe to. Its
coordinator (one broker per group) runs the classic rebalance protocol: members JoinGroup, the
coordinator waits until every known member has rejoined (or the rebalance timeout ends), starts a new
*generation*, names a leader and hands the leader every member's subscription; the leader computes the
assignment and sends it with SyncGroup; the coordinator hands each member its share. Members keep their
session with Heartbeats; a membership change (a join, a leave, a session that expired) starts the next
rebalance, which members learn of through REBALANCE_IN_PROGRESS. Committed offsets (OffsetCommit) are
accepted only from a member of the current generation, so a member that was replaced cannot move the
group's position (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID).

Everything the coordinator must not forget is a record of the internal topic ``__consumer_offsets``
(``records``): the group's partition of that topic (``partitioning``, Kafka's hash) is written through the
same replication as any produce, with acks=all, and the broker that leads the partition is the group's
coordinator. Gaining the leadership loads the partition's records, losing it unloads the groups; so kills,
pauses, partitions, elections and reassignments all move the coordinator, and what it acknowledged
survives because the replication keeps committed records.

Modules: ``state`` (the states and the transition table), ``group`` (one group's state),
``coordinator`` (the request handlers, timers, load and unload), ``records`` (what goes to the offsets
topic), ``messages`` (requests, answers, and the outputs the shell executes), ``partitioning``.

What it does not see: sockets, the log, time. The shell (``reference_impl.server.group_shell``) turns
wire requests into calls here, executes ``Append`` outputs through the replica manager and calls
``tick`` on a timer. Where Kafka is simplified: docs/kafka-differences.md (groups section).
"""

from reference_impl.protocol.groups.coordinator import GroupConfig, GroupCoordinator, append_error
from reference_impl.protocol.groups.partitioning import OFFSETS_TOPIC, partition_for
from reference_impl.protocol.groups.state import GroupState

__all__ = ["OFFSETS_TOPIC", "GroupConfig", "GroupCoordinator", "GroupState", "append_error", "partition_for"]
