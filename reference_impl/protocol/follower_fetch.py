"""Follower fetch scheduling (F1, F2): what a broker sends to one leader per round, and what becomes of it.

A broker fetches all the partitions it follows on one leader in one request, one request at a time (Kafka's
fetcher thread per source broker). ``fetch_round`` asks each replica for its next fetch (``build_fetch``:
at most one outstanding, F1) and gives up at once on the fetches of replicas that now follow another
leader (a metadata change moved them after the fetcher picked them up; that fetcher sends their next one).
``complete_fetch_round`` hands each answer to its replica (``handle_fetch_response``: F2 drops stale ones,
F3 truncates, F4 appends) and reports every fetch that got no answer for its partition (connection lost,
timeout, a reply without it) with ``abandon_fetch``, so the replica backs off (F2) rather than waiting for a
reply the leader never sent. The caller sends the request and collects the answers.

Timing, shared by every caller: the leader holds a fetch up to ``FETCH_MAX_WAIT_MS`` while it has nothing
new (long polling, ``answer_now`` says when to stop waiting), a round with no answer at all waits ``FETCH_RETRY_BACKOFF_MS`` before the next one, and
a fetcher with nothing to send looks again after ``FETCH_IDLE_POLL_MS`` (or when woken).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from reference_impl.protocol.replica import PartitionReplica
from reference_impl.protocol.replica_messages import FetchPartitionResult, FetchRequest

FETCH_MAX_WAIT_MS = 500
FETCH_RETRY_BACKOFF_MS = 200
FETCH_IDLE_POLL_MS = 50


@dataclass(frozen=True)
class PlannedFetch:
    """One partition's fetch in a round: the caller's name for the partition, its replica, the request."""

    key: Hashable
    replica: PartitionReplica
    request: FetchRequest


def fetch_round(partitions: Iterable[tuple[Hashable, PartitionReplica]], leader_id: int,
                now_ms: int) -> list[PlannedFetch]:
    """F1: the fetches to send to ``leader_id`` now, from the ``(key, replica)`` pairs of its fetcher."""
    planned = []
    for key, replica in partitions:
        request = replica.build_fetch(now_ms)
        if request is None:
            continue
        if request.leader_id == leader_id:
            planned.append(PlannedFetch(key, replica, request))
        else:
            replica.abandon_fetch(request, now_ms)  # never sent here: the right fetcher sends the next one
    return planned


def complete_fetch_round(planned: Sequence[PlannedFetch], answers: Mapping[Hashable, FetchPartitionResult],
                         now_ms: int) -> bool:
    """F2-F4 for each answered fetch, ``abandon_fetch`` for the rest; returns whether anything was answered
    (a round without any answer is followed by ``FETCH_RETRY_BACKOFF_MS`` of quiet)."""
    for p in planned:
        answer = answers.get(p.key)
        if answer is None:
            p.replica.abandon_fetch(p.request, now_ms)
        else:
            p.replica.handle_fetch_response(p.request, answer, now_ms)
    return bool(answers)


def answer_now(urgent: bool, size_bytes: int, min_bytes: int, expired: bool) -> bool:
    """Leader-side long polling: answer a fetch at once when a partition has news that cannot wait
    (``urgent``: an error or a diverging epoch), when the records reach ``min_bytes`` (at least 1 byte), or
    when the wait is over; otherwise hold it until the next change of a partition."""
    return urgent or size_bytes >= max(min_bytes, 1) or expired
