"""The controller quorum: KRaft's Raft (KIP-595, with KIP-996 pre-vote as a setting), sans-IO.

Theory of operation
===================
Apache Kafka's controllers replicate the metadata log with their own Raft dialect: voters elect a leader
for an **epoch** with Vote requests (a vote goes only to a candidate whose log is at least as up to date,
once per epoch); the leader announces itself with BeginQuorumEpoch and, on a graceful exit,
EndQuorumEpoch; followers **pull** the log with Fetch requests (the leader never pushes), and the leader
answers a fetch whose log diverged from its own with the epoch and end offset to truncate to (the same
EndOffsetForEpoch rule as partition replication, L11); the leader's **high watermark** is the end offset a
majority of voters have, but only once a record of its own epoch is among them (the epoch-start record),
and every voter learns it from the fetch answers. Only records below the high watermark are committed.

This package holds that protocol and nothing else: records are opaque values, time is an argument, and a
node's log (``log.RaftLog``) and election state (``election_state.ElectionStateStore``) are injected, so
the same code runs in the controller process (a file log, a fsynced quorum-state file), in the simulator
(in-memory disks that survive simulated crashes) and in unit tests.

- ``messages``: the RPCs and the log's batches;
- ``log``: the replicated log's interface and an in-memory implementation;
- ``election_state``: the durable epoch / vote / leader (Q1);
- ``leader_state``: a leader's view of its voters: end offsets and the HWM (Q8), acknowledgements (Q5),
  check-quorum (Q11);
- ``node``: ``RaftNode``, one voter's state machine (Q1-Q13; the module docstring states them).

The controller state machine on top (``reference_impl.protocol.quorum_controller``) applies committed
records only, acts as the active controller only once its epoch-start record is committed, and answers a
change only after it committed (Q14); brokers read only committed metadata from the active controller
(Q15).

What it leaves out (docs/kafka-differences.md): snapshots and FetchSnapshot, observers fetching through
the Raft Fetch (brokers pull committed metadata with kraftcheck's MetadataLogFetch), dynamic voter sets
(KIP-853), directory ids and cluster ids.
"""

from reference_impl.protocol.raft.election_state import (
    ElectionState,
    ElectionStateStore,
    InMemoryElectionStore,
)
from reference_impl.protocol.raft.log import InMemoryRaftLog, RaftLog
from reference_impl.protocol.raft.messages import RaftBatch
from reference_impl.protocol.raft.node import (
    CANDIDATE,
    FOLLOWER,
    LEADER,
    PROSPECTIVE,
    RESIGNED,
    UNATTACHED,
    RaftConfig,
    RaftNode,
)

__all__ = ["CANDIDATE", "FOLLOWER", "LEADER", "PROSPECTIVE", "RESIGNED", "UNATTACHED", "ElectionState",
           "ElectionStateStore", "InMemoryElectionStore", "InMemoryRaftLog", "RaftBatch", "RaftConfig", "RaftLog",
           "RaftNode"]
