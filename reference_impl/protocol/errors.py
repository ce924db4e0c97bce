"""Kafka error codes as values (the ``Errors`` enum of org.apache.kafka.common.protocol).

At every protocol boundary an outcome is a ``KafkaError`` (code + name + optional message), never an
exception; exceptions are reserved for broken invariants (``InvariantViolation``). Codes and names are
Apache Kafka's, so they can go on the wire unchanged and be compared with what real clients report.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Errors(enum.IntEnum):
    """Kafka's error codes (the subset this protocol can produce or must understand)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    OFFSET_METADATA_TOO_LARGE = 12
    STALE_CONTROLLER_EPOCH = 11
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    OPERATION_NOT_ATTEMPTED = 55
    CLUSTER_AUTHORIZATION_FAILED = 31
    TOPIC_AUTHORIZATION_FAILED = 29
    KAFKA_STORAGE_ERROR = 56
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    INCONSISTENT_CLUSTER_ID = 104
    FENCED_INSTANCE_ID = 82
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INVALID_UPDATE_VERSION = 108
    FEATURE_UPDATE_FAILED = 96
    UNKNOWN_TOPIC_ID = 100
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    NEW_LEADER_ELECTED = 106
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    INELIGIBLE_REPLICA = 107


@dataclass(frozen=True)
class KafkaError:
    """An error as a value: a Kafka error code plus a human message (``ok`` when code is NONE)."""

    code: Errors = Errors.NONE
    message: str | None = None

    @property
    def ok(self) -> bool:
        """True when this is ``Errors.NONE``."""
        return self.code == Errors.NONE

    @property
    def name(self) -> str | None:
        """Kafka's name of the error (``INVALID_REPLICATION_FACTOR``), or None for success."""
        return None if self.code == Errors.NONE else self.code.name

    def __str__(self) -> str:
        return "NONE" if self.ok else f"{self.code.name}: {self.message or ''}".rstrip(": ")


OK = KafkaError()


def error(code: Errors, message: str | None = None) -> KafkaError:
    """Shorthand for ``KafkaError(code, message)``."""
    return KafkaError(code, message)


class InvariantViolation(AssertionError):
    """A state that the protocol says cannot happen; raised, never returned."""
