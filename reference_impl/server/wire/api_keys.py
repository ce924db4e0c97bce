"""Kafka's API keys by name, numbered as Kafka numbers them (``ApiKeys.java``), plus kraftcheck's own.

An ``IntEnum``, so a key equals its number: tables keyed by ``ApiKey`` answer lookups by the raw key a
request header carries, and the numbers go on the wire unchanged. Keys at or above ``PRIVATE_KEYS_START``
are kraftcheck's own (Kafka never uses them); ApiVersions leaves them out.
"""

from __future__ import annotations

import enum


class ApiKey(enum.IntEnum):
    """The APIs a kraftcheck node serves or calls."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    DESCRIBE_CLUSTER = 60
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    GET_REPLICA_LOG_INFO = 93
    METADATA_LOG_FETCH = 10000  # kraftcheck's: the controller's committed metadata records as JSON


PRIVATE_KEYS_START = 10000
