"""GetReplicaLogInfo (93, KIP-966): a broker tells the active controller where its partition logs end.

The controller asks before a K7 unclean recovery of a leaderless partition (``server.unclean_recovery``).
Each answer is the log as this broker holds it now: the epoch of its last batch and its log end offset,
plus the leader epoch the broker last saw in the metadata. A log found on disk at start but not yet
claimed by the metadata (the broker is still catching up) is answered too, with current leader epoch -1:
after a crash that is exactly the replica the controller is waiting to hear from. A partition this broker
holds no log of gets UNKNOWN_TOPIC_OR_PARTITION. Only the first ``MAX_PARTITIONS`` are answered
(``Truncated``), as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.api_message import ApiMessage

from reference_impl.protocol.errors import Errors
from reference_impl.server.apis.common import topic_uuid
from reference_impl.server.wire import messages as m
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.codec import DecodedRequest
from reference_impl.server.wire.server import Handler

MAX_PARTITIONS = 1000


class ReplicaLogInfoApi:
    """The GetReplicaLogInfo handler over a broker's replica manager (module docstring)."""

    def __init__(self, manager: Any, topic_name: Callable[[str], str | None],
                 broker_epoch: Callable[[], int]) -> None:
        self.manager = manager
        self.topic_name = topic_name
        self.broker_epoch = broker_epoch

    def handlers(self) -> dict[int, Handler]:
        """Map api key -> async handler."""
        return {ApiKey.GET_REPLICA_LOG_INFO: self.handle}

    async def handle(self, request: DecodedRequest) -> ApiMessage:
        """One answer per asked partition, in the order asked, up to ``MAX_PARTITIONS``."""
        cls = m.GetReplicaLogInfoResponse
        answered = 0
        truncated = False
        topics_out = []
        for topic in request.body.topic_partitions or []:
            topic_id = str(topic.topic_id)
            name = self.topic_name(topic_id)
            parts_out = []
            for partition in topic.partitions:
                if answered >= MAX_PARTITIONS:
                    truncated = True
                    break
                answered += 1
                parts_out.append(self._log_info(cls.TopicPartitionLogInfo.PartitionLogInfo, name, partition))
            if parts_out:
                topics_out.append(cls.TopicPartitionLogInfo(topic_id=topic_uuid(topic_id),
                                                            partition_log_info=parts_out))
            if truncated:
                break
        return cls(throttle_time_ms=0, broker_epoch=self.broker_epoch(), truncated=truncated,
                   topic_partition_log_info_list=topics_out)

    def _log_info(self, pcls: Any, topic: str | None, partition: int) -> Any:
        hosted = None if topic is None else self.manager.lookup(topic, partition)
        if hosted is not None:
            seg_log, current = hosted.log, hosted.replica.leader_epoch
        else:
            seg_log = None if topic is None else self.manager.recovered_log(topic, partition)
            current = -1
        if seg_log is None:
            return pcls(partition=partition, last_written_leader_epoch=-1, current_leader_epoch=-1,
                        log_end_offset=-1, error_code=int(Errors.UNKNOWN_TOPIC_OR_PARTITION))
        return pcls(partition=partition, last_written_leader_epoch=seg_log.last_epoch,
                    current_leader_epoch=current, log_end_offset=seg_log.log_end_offset, error_code=0)
