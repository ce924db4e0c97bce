"""The transaction APIs of a broker (KIP-98): AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, WriteTxnMarkers,
and the transaction half of FindCoordinator (key type 1). TxnOffsetCommit goes to the group's coordinator
(``apis.groups``).

Each handler turns the request into calls on the broker's ``TxnCoordinatorShell`` (or, for
WriteTxnMarkers, its replica manager) and the answers back into the response at the request's version.
InitProducerId with a transactional id goes through ``BrokerServices.init_producer_id`` like the
idempotent one.

Versions: AddPartitionsToTxn 0-4 (0-3 are the clients'; v4 is the broker-to-broker batch that carries
KIP-890's VerifyOnly, which clients never send), AddOffsetsToTxn 0-3, EndTxn 0-3 (v4+ adds KIP-890 part 2's
TRANSACTION_ABORTABLE and epoch bump per transaction), WriteTxnMarkers 0-1; clients negotiate down to
these, as they do with a Kafka 3.6 broker.
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.api_message import ApiMessage

from reference_impl.protocol.errors import Errors
from reference_impl.server.apis.common import response_class
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.codec import DecodedRequest
from reference_impl.server.wire.server import Handler

TRANSACTION_KEY_TYPE = 1
MARKER_TIMEOUT_MS = 5_000


def find_transaction_coordinator(shell: Any, request: DecodedRequest) -> ApiMessage:
    """FindCoordinator for key type 1: the leader of the id's ``__transaction_state`` partition."""
    body, version = request.body, request.api_version
    cls = response_class(ApiKey.FIND_COORDINATOR)
    if version >= 4:
        coordinators = []
        for key in body.coordinator_keys or []:
            code, node, host, port = shell.find(key)
            coordinators.append(cls.Coordinator(key=key, node_id=node, host=host, port=port, error_code=int(code),
                                                error_message=None))
        return cls(version=version, throttle_time_ms=0, error_code=0, error_message=None, node_id=-1, host="",
                   port=-1, coordinators=coordinators)
    code, node, host, port = shell.find(body.key)
    return cls(version=version, throttle_time_ms=0, error_code=int(code), error_message=None, node_id=node,
               host=host, port=port, coordinators=[])


def is_transaction_lookup(request: DecodedRequest) -> bool:
    """True for a FindCoordinator request about transactional ids (key type 1)."""
    return request.body is not None and request.api_version >= 1 and request.body.key_type == TRANSACTION_KEY_TYPE


class TxnApis:
    """AddPartitionsToTxn, EndTxn and WriteTxnMarkers over a ``TxnCoordinatorShell`` and a
    ``ReplicaManager`` (module docstring)."""

    def __init__(self, shell: Any, manager: Any) -> None:
        self.shell = shell
        self.manager = manager

    def handlers(self) -> dict[int, Handler]:
        """Map api key -> async handler."""
        return {ApiKey.ADD_PARTITIONS_TO_TXN: self.handle_add_partitions_to_txn,
                ApiKey.ADD_OFFSETS_TO_TXN: self.handle_add_offsets_to_txn,
                ApiKey.END_TXN: self.handle_end_txn,
                ApiKey.WRITE_TXN_MARKERS: self.handle_write_txn_markers}

    async def handle_add_partitions_to_txn(self, request: DecodedRequest) -> ApiMessage:
        """AddPartitionsToTxn 0-3 (a client's: the same outcome for every partition of the request) and 4
        (a broker's batch of transactions; KIP-890's VerifyOnly asks without adding)."""
        body, version = request.body, request.api_version
        if version >= 4:
            return await self._add_partitions_batch(body, version)
        partitions = [(t.name, p) for t in body.v3_and_below_topics for p in t.partitions]
        code = await self.shell.add_partitions(body.v3_and_below_transactional_id, body.v3_and_below_producer_id,
                                               body.v3_and_below_producer_epoch, partitions)
        if code == Errors.PRODUCER_FENCED and version < 2:
            code = Errors.INVALID_PRODUCER_EPOCH  # PRODUCER_FENCED arrived with v2 (KIP-588)
        cls = response_class(ApiKey.ADD_PARTITIONS_TO_TXN)
        tcls = cls.AddPartitionsToTxnTopicResult
        pcls = tcls.AddPartitionsToTxnPartitionResult
        return cls(version=version, throttle_time_ms=0, error_code=0, results_by_transaction=[],
                   results_by_topic_v3_and_below=[
                       tcls(name=t.name, results_by_partition=[
                           pcls(partition_index=p, partition_error_code=int(code)) for p in t.partitions])
                       for t in body.v3_and_below_topics])

    async def _add_partitions_batch(self, body: Any, version: int) -> ApiMessage:
        """AddPartitionsToTxn v4: per transaction, verify (VerifyOnly) or add, answered per partition."""
        cls = response_class(ApiKey.ADD_PARTITIONS_TO_TXN)
        rcls = cls.AddPartitionsToTxnResult
        tcls = cls.AddPartitionsToTxnTopicResult
        pcls = tcls.AddPartitionsToTxnPartitionResult
        results = []
        for txn in body.transactions or []:
            partitions = [(t.name, p) for t in txn.topics for p in t.partitions]
            if txn.verify_only:
                codes = self.shell.verify_local(txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                                partitions)
            else:
                code = await self.shell.add_partitions(txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                                       partitions)
                codes = dict.fromkeys(partitions, code)
            results.append(rcls(transactional_id=txn.transactional_id, topic_results=[
                tcls(name=t.name, results_by_partition=[
                    pcls(partition_index=p, partition_error_code=int(codes[(t.name, p)])) for p in t.partitions])
                for t in txn.topics]))
        return cls(version=version, throttle_time_ms=0, error_code=0, results_by_transaction=results,
                   results_by_topic_v3_and_below=[])

    async def handle_add_offsets_to_txn(self, request: DecodedRequest) -> ApiMessage:
        """AddOffsetsToTxn 0-3: the group's ``__consumer_offsets`` partition joins the transaction, so the
        producer may then send TxnOffsetCommit to the group's coordinator."""
        body, version = request.body, request.api_version
        code = await self.shell.add_offsets(body.transactional_id, body.producer_id, body.producer_epoch,
                                            body.group_id)
        if code == Errors.PRODUCER_FENCED and version < 2:
            code = Errors.INVALID_PRODUCER_EPOCH  # PRODUCER_FENCED arrived with v2 (KIP-588)
        return response_class(ApiKey.ADD_OFFSETS_TO_TXN)(version=version, throttle_time_ms=0, error_code=int(code))

    async def handle_end_txn(self, request: DecodedRequest) -> ApiMessage:
        """EndTxn 0-3: commit or abort the open transaction."""
        body = request.body
        code = await self.shell.end_txn(body.transactional_id, body.producer_id, body.producer_epoch,
                                        bool(body.committed))
        if code == Errors.PRODUCER_FENCED and request.api_version < 2:
            code = Errors.INVALID_PRODUCER_EPOCH  # PRODUCER_FENCED arrived with v2 (KIP-588)
        return response_class(ApiKey.END_TXN)(version=request.api_version, throttle_time_ms=0,
                                              error_code=int(code), producer_id=-1, producer_epoch=-1)

    async def handle_write_txn_markers(self, request: DecodedRequest) -> ApiMessage:
        """WriteTxnMarkers 0-1: append each marker to the partitions this broker leads (acks=all)."""
        cls = response_class(ApiKey.WRITE_TXN_MARKERS)
        rcls = cls.WritableTxnMarkerResult
        tcls = rcls.WritableTxnMarkerTopicResult
        pcls = tcls.WritableTxnMarkerPartitionResult
        results = []
        for m in request.body.markers:
            topics = []
            for t in m.topics:
                parts = []
                for p in t.partition_indexes:
                    r = await self.manager.write_marker(t.name, p, m.producer_id, m.producer_epoch,
                                                        bool(m.transaction_result), m.coordinator_epoch,
                                                        MARKER_TIMEOUT_MS)
                    parts.append(pcls(partition_index=p, error_code=int(r.error)))
                topics.append(tcls(name=t.name, partitions=parts))
            results.append(rcls(producer_id=m.producer_id, topics=topics))
        return cls(version=request.api_version, markers=results)
