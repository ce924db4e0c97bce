"""K7 in the controller process: ask brokers for their log ends, then let the core elect (KIP-966).

A partition whose ISR and ELR are both empty has no clean candidate (K3); under
``unclean.recovery.strategy=balanced`` the controller asks every last-known-ELR member for the epoch of its
last batch and its log end (GetReplicaLogInfo, api key 93), waits until all have answered, and elects the
most complete live one; ``proactive`` asks every live replica and takes the best answer of one round;
``manual`` never asks. Which partitions are due and whom to ask come from the core
(``Controller.unclean_recovery_queries``), and so does the choice (``Controller.unclean_recovery``, a
committed change like any other, C1): this module only carries the questions and answers.

One round, on the active controller, every ``ROUND_INTERVAL_S``:

1. ask each broker named by the core about its partitions, all brokers at once, each within
   ``ANSWER_TIMEOUT_S``; a broker that does not answer (down, cut off) is asked again next round;
2. drop an answer whose broker epoch is not the one the controller has registered for that broker: it
   came from an incarnation the controller no longer knows, and its log may have changed since;
3. for each partition, hand the answers to the core as one change; the core re-checks that the partition
   still needs a recovery on the committed state and answers ELIGIBLE_LEADERS_NOT_AVAILABLE while an answer
   it needs is missing.

Every recovery is traced (``unclean_recovery``, with the answers it was chosen from): it is always possible
data loss, and a reader of the trace must be able to see why that replica leads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from reference_impl.protocol.controller import Controller as ControllerCore
from reference_impl.protocol.controller import ControllerResult
from reference_impl.protocol.trace_events import unclean_recovery_event
from reference_impl.server.apis.common import topic_uuid
from reference_impl.server.trace import Tracer, log
from reference_impl.server.wire import messages as m
from reference_impl.server.wire.client import WireClient

ROUND_INTERVAL_S = 1.0
ANSWER_TIMEOUT_S = 2.0

TopicPartition = tuple[str, int]
LogEnd = tuple[int, int]  # (last written leader epoch, log end offset)


class UncleanRecoveryDriver:
    """Carries K7's questions to the brokers and the answers to the core (module docstring)."""

    def __init__(self, core: Callable[[], ControllerCore],
                 change: Callable[[Callable[[], ControllerResult]], Awaitable[Any]],
                 tracer: Tracer, node: str) -> None:
        self._core = core
        self._change = change
        self.tracer = tracer
        self.node = node
        self._clients: dict[int, WireClient] = {}

    async def round(self) -> list[TopicPartition]:
        """One round (module docstring); returns the partitions that got a leader."""
        core = self._core()
        queries = core.unclean_recovery_queries()
        if not queries:
            return []
        asked = sorted(queries.items())
        answers = await asyncio.gather(*(self._ask(core, broker, tps) for broker, tps in asked))
        by_partition: dict[TopicPartition, dict[int, LogEnd]] = {}
        for (broker, tps), answer in zip(asked, answers, strict=True):
            for tp in tps:
                by_partition.setdefault(tp, {})
                if tp in answer:
                    by_partition[tp][broker] = answer[tp]
        recovered = []
        for tp, replies in sorted(by_partition.items()):
            err = await self._change(lambda tp=tp, replies=replies: self._core().unclean_recovery(
                tp, replies, window_closed=True))
            if not err.ok:
                continue
            state = self._core().partition(*tp)
            leader = None if state is None else state.leader
            log(self.node, f"unclean recovery of {tp[0]}-{tp[1]} ({core.config.unclean_recovery_strategy}): "
                           f"broker {leader} leads, chosen from log ends {replies} (possible data loss, K7)")
            self.tracer.write(unclean_recovery_event(tp[0], tp[1], leader, core.config.unclean_recovery_strategy,
                                                     replies))
            recovered.append(tp)
        return recovered

    async def _ask(self, core: ControllerCore, broker: int, tps: list[TopicPartition]
                   ) -> dict[TopicPartition, LogEnd]:
        """GetReplicaLogInfo to one broker; its usable answers (none when it cannot be reached)."""
        reg = core.brokers.get(broker)
        if reg is None or not reg.host or reg.port <= 0:
            return {}
        by_id: dict[str, list[int]] = {}
        names: dict[str, str] = {}
        for topic, partition in tps:
            info = core.find_topic(topic)
            if info is None:
                continue
            by_id.setdefault(info.topic_id, []).append(partition)
            names[str(topic_uuid(info.topic_id))] = info.name
        request = m.GetReplicaLogInfoRequest(topic_partitions=[
            m.GetReplicaLogInfoRequest.TopicPartitions(topic_id=topic_uuid(tid), partitions=parts)
            for tid, parts in sorted(by_id.items())])
        client = self._client(broker, reg.host, reg.port)
        try:
            response = await client.send(request, 0, timeout_s=ANSWER_TIMEOUT_S)
        except (ConnectionError, OSError, TimeoutError) as exc:
            log(self.node, f"GetReplicaLogInfo to broker {broker} failed: {exc!r} (asked again next round)")
            return {}
        except Exception as exc:  # an answer that does not decode is the broker's fault: no answer, no crash
            log(self.node, f"GetReplicaLogInfo from broker {broker}: unreadable answer {exc!r}")
            await client.close()
            return {}
        if response.broker_epoch != reg.epoch:
            log(self.node, f"GetReplicaLogInfo from broker {broker}: epoch {response.broker_epoch}, registered "
                           f"{reg.epoch}: answer dropped")
            return {}
        out: dict[TopicPartition, LogEnd] = {}
        for topic in response.topic_partition_log_info_list:
            name = names.get(str(topic.topic_id))
            for p in topic.partition_log_info if name is not None else []:
                if p.error_code == 0:
                    out[(name, p.partition)] = (p.last_written_leader_epoch, p.log_end_offset)
        return out

    def _client(self, broker: int, host: str, port: int) -> WireClient:
        client = self._clients.get(broker)
        if client is None or (client.host, client.port) != (host, port):
            if client is not None:
                asyncio.ensure_future(client.close())
            client = WireClient(host, port, client_id=f"{self.node}-unclean-recovery",
                                timeout_s=ANSWER_TIMEOUT_S)
            self._clients[broker] = client
        return client

    async def close(self) -> None:
        """Close every connection to the brokers."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()
