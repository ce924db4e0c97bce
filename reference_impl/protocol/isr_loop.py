"""The leader's ISR loop (L12-L16) as a broker runs it: every ``ISR_INTERVAL_MS``, each leader replica may
propose one ISR change, which the broker sends to the controller as an AlterPartition.

``isr_round`` passes the replicas what the broker's metadata image knows and they cannot: which brokers
are ineligible (fenced or in controlled shutdown, KIP-841) and each broker's registered epoch, so a
follower whose fetches came from an older incarnation is not proposed (scenario 10, KIP-903). Kafka does
the same leader-side check before the controller's C14. ``alter_partition_unanswered`` is what a request
that got no reply (connection lost, timeout) becomes: a NETWORK_EXCEPTION answer. Its outcome is unknown
(the controller may have committed the change and only the reply was lost), so the replica keeps the
request pending with its Maximal ISR (L16) and a later round sends the same request again, as Kafka's
AlterPartitionManager does; the metadata carrying the change, or the controller's verdict on the resend,
settles it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from reference_impl.protocol.errors import Errors, error
from reference_impl.protocol.metadata_image import MetadataImage
from reference_impl.protocol.replica import LEADER, PartitionReplica
from reference_impl.protocol.replica_messages import AlterPartitionRequest, AlterPartitionResponse

ISR_INTERVAL_MS = 100


def isr_round(partitions: Iterable[tuple[Hashable, PartitionReplica]], image: MetadataImage,
              now_ms: int) -> list[tuple[Hashable, AlterPartitionRequest]]:
    """The AlterPartition requests due now (L12-L15), at most one per leader replica, by the caller's key."""
    ineligible = image.ineligible_brokers()
    broker_epochs = image.broker_epochs()
    due = []
    for key, replica in partitions:
        if replica.role != LEADER:
            continue
        request = replica.maybe_change_isr(now_ms, ineligible=ineligible, broker_epochs=broker_epochs)
        if request is not None:
            due.append((key, request))
    return due


def alter_partition_unanswered(replica: PartitionReplica, request: AlterPartitionRequest, reason: str,
                               now_ms: int) -> None:
    """The request got no reply: answer it with NETWORK_EXCEPTION, an unknown outcome, so the replica keeps
    it pending and ``isr_round`` resends it (L16)."""
    replica.handle_alter_partition_response(
        request, AlterPartitionResponse(error=error(Errors.NETWORK_EXCEPTION, reason)), now_ms)
