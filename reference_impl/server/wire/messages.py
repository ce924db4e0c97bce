"""Message classes for the inter-node APIs, built by kafka-python's own schema machinery.

kafka-python 3.x turns a Kafka JSON message schema into an ``ApiMessage`` class when a class of the same
name is declared; ``load_json=<module>`` points it at kraftcheck's ``wire/schemas`` directory instead of
its bundled resources. ``FetchRequest`` here is kafka-python's schema with one kraftcheck extension: the
``ReplicaState`` tagged field (tag 1; Kafka has it from v15) is also allowed in v12, so a follower on
Fetch v12 can carry its broker epoch (L15 needs it for AlterPartition). Real clients never send it, and a
tagged field unknown to a peer is skipped, so the wire format stays Kafka's.
"""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from reference_impl.server.wire import schemas as _schemas


class BrokerRegistrationRequest(ApiMessage, load_json=_schemas):
    """BrokerRegistration (62) request: a broker registers its incarnation (C3, C4; K4 in v3)."""


class BrokerRegistrationResponse(ApiMessage, load_json=_schemas):
    """BrokerRegistration (62) response: error and the new broker epoch."""


class BrokerHeartbeatRequest(ApiMessage, load_json=_schemas):
    """BrokerHeartbeat (63) request: liveness, metadata offset, want-fence / want-shutdown (C5, C8)."""


class BrokerHeartbeatResponse(ApiMessage, load_json=_schemas):
    """BrokerHeartbeat (63) response: caught up / fenced / should shut down."""


class AlterPartitionRequest(ApiMessage, load_json=_schemas):
    """AlterPartition (56) request: a leader proposes a new ISR (C13-C15, L12-L16)."""


class AlterPartitionResponse(ApiMessage, load_json=_schemas):
    """AlterPartition (56) response: the committed partition state, or an error per partition."""


class MetadataLogFetchRequest(ApiMessage, load_json=_schemas):
    """kraftcheck MetadataLogFetch (10000) request: pull committed metadata records from an offset."""


class MetadataLogFetchResponse(ApiMessage, load_json=_schemas):
    """kraftcheck MetadataLogFetch (10000) response: committed records as JSON text, plus the HWM."""


class VoteRequest(ApiMessage, load_json=_schemas):
    """Vote (52) request: a candidate (or, with PreVote, a prospective) asks a voter (Q2, Q4)."""


class VoteResponse(ApiMessage, load_json=_schemas):
    """Vote (52) response."""


class BeginQuorumEpochRequest(ApiMessage, load_json=_schemas):
    """BeginQuorumEpoch (53) request: a new quorum leader announces itself (Q5, Q6)."""


class BeginQuorumEpochResponse(ApiMessage, load_json=_schemas):
    """BeginQuorumEpoch (53) response."""


class EndQuorumEpochRequest(ApiMessage, load_json=_schemas):
    """EndQuorumEpoch (54) request: a resigning leader names its successors (Q12)."""


class EndQuorumEpochResponse(ApiMessage, load_json=_schemas):
    """EndQuorumEpoch (54) response."""


class GetReplicaLogInfoRequest(ApiMessage, load_json=_schemas):
    """GetReplicaLogInfo (93) request: the active controller asks a broker for its partitions' log ends (K7)."""


class GetReplicaLogInfoResponse(ApiMessage, load_json=_schemas):
    """GetReplicaLogInfo (93) response: last written leader epoch and log end offset per partition."""


class FetchRequest(ApiMessage):
    """Fetch (1) request with ``ReplicaState`` (replica id + broker epoch) allowed as a tagged field in v12+."""

    @classmethod
    def json_patch(cls, json):
        """Widen ReplicaState's versions from 15+ to 12+ (tagged, so wire-compatible with Kafka)."""
        for fld in json["fields"]:
            if fld["name"] == "ReplicaState":
                fld["versions"] = fld["taggedVersions"] = "12+"
                for sub in fld["fields"]:
                    sub["versions"] = "12+"
        return json
