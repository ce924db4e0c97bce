"""What the API modules share: response classes by key, topic ids as UUIDs, per-topic grouping, and the
Fetch response body (built by the Fetch handler and by Fetch's error response alike)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from kafka.protocol.api_message import ApiMessage

from reference_impl.server import services as sv
from reference_impl.server.wire import codec
from reference_impl.server.wire.api_keys import ApiKey

ZERO_UUID = uuid.UUID(int=0)


def topic_uuid(topic_id: str | None) -> uuid.UUID:
    """Topic ids travel as UUIDs; the services layer uses their string form (None = unknown)."""
    if not topic_id:
        return ZERO_UUID
    try:
        return uuid.UUID(topic_id)
    except ValueError:
        return ZERO_UUID


def response_class(api_key: int) -> type[ApiMessage]:
    """kafka-python's response message class for ``api_key``."""
    return codec.ALL_APIS[api_key].response_class


def group_by_topic(pairs: Iterable[tuple[str, Any]]) -> dict[str, list]:
    """``{topic: [item, ...]}`` from ``(topic, item)`` pairs, topics in first-seen order."""
    out: dict[str, list] = {}
    for topic, item in pairs:
        out.setdefault(topic, []).append(item)
    return out


def fetch_response(version: int, result: sv.FetchResult) -> ApiMessage:
    """The Fetch response body for ``result`` at ``version``."""
    cls = response_class(ApiKey.FETCH)
    tcls = cls.FetchableTopicResponse
    pcls = tcls.PartitionData
    by_topic: dict[str, list] = {}
    for r in result.partitions:
        extra = {}
        # Tagged fields (v12+): only sent when meaningful, as Kafka does.
        if r.diverging_epoch is not None and version >= 12:
            extra["diverging_epoch"] = pcls.EpochEndOffset(epoch=r.diverging_epoch[0], end_offset=r.diverging_epoch[1])
        if r.current_leader is not None and version >= 12:
            extra["current_leader"] = pcls.LeaderIdAndEpoch(leader_id=r.current_leader[0], leader_epoch=r.current_leader[1])
        by_topic.setdefault(r.topic, []).append(pcls(
            partition_index=r.partition,
            error_code=int(r.error),
            high_watermark=r.high_watermark,
            last_stable_offset=r.last_stable_offset if r.last_stable_offset >= 0 else r.high_watermark,
            log_start_offset=r.log_start_offset,
            aborted_transactions=None if r.aborted_transactions is None else [
                pcls.AbortedTransaction(producer_id=pid, first_offset=first) for pid, first in r.aborted_transactions],
            preferred_read_replica=r.preferred_read_replica,
            records=r.records,
            **extra,
        ))
    return cls(
        version=version,
        throttle_time_ms=result.throttle_time_ms,
        error_code=int(result.error),
        session_id=0,
        responses=[tcls(topic=t, partitions=ps) for t, ps in by_topic.items()],
    )
