"""Who leads the controller quorum: Kafka's DescribeQuorum (API 55) asked of one controller.

A controller that leads answers with its id, epoch, high watermark and voters; any other voter answers
NOT_LEADER_OR_FOLLOWER, naming the leader it knows. One request on a short-lived socket, encoded and
decoded with kafka-python's message classes: the harness speaks the Kafka protocol to the system under
test and nothing else, so the same probe works against Apache Kafka's controllers.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from kafka.protocol.admin import DescribeQuorumRequest, DescribeQuorumResponse

METADATA_TOPIC = "__cluster_metadata"
VERSION = 0


def describe_quorum(address: str, timeout_s: float = 2.0) -> dict[str, Any] | None:
    """``{"error_code", "leader_id", "leader_epoch", "high_watermark", "voters": {id: end offset}}`` from the
    controller at ``host:port``, or None when it does not answer."""
    host, _, port = address.rpartition(":")
    request = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
        topic_name=METADATA_TOPIC, partitions=[DescribeQuorumRequest.TopicData.PartitionData(partition_index=0)])])
    request.with_header(correlation_id=1, client_id="kraftcheck-quorum-probe")
    frame = bytes(request.encode(version=VERSION, header=True, framed=True))
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            sock.sendall(frame)
            size = struct.unpack(">i", _read(sock, 4))[0]
            payload = _read(sock, size)
    except (OSError, ValueError, struct.error):
        return None
    try:
        # a flexible response header: correlation id, then an empty tagged-field section (one byte)
        response = DescribeQuorumResponse.decode(memoryview(payload)[5:], version=VERSION)
        part = response.topics[0].partitions[0]
    except Exception:
        return None
    return {"error_code": part.error_code, "leader_id": part.leader_id, "leader_epoch": part.leader_epoch,
            "high_watermark": part.high_watermark,
            "voters": {v.replica_id: v.log_end_offset for v in part.current_voters or []}}


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ValueError("connection closed")
        data += chunk
    return data
