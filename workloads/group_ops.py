"""Which processes consume through the group, and the ops such a process draws.

``sub_via`` (Jepsen's ``:sub-via``): ``assign`` (every consumer assigns partitions itself, the default),
``subscribe`` (every consumer is a member of the run's consumer group) or ``assign,subscribe`` (each
logical process slot picks one: odd slots subscribe). A slot keeps its choice when its process is
retired and continues under a new id (the id moves by the concurrency).

A subscribing process first ``subscribe``s (a new member joins); then, besides the sends of the mix, it
polls, commits, and now and then subscribes again (leaves and rejoins: a rebalance), crashes (disappears
without leaving: its session times out on the coordinator) or commits after a stall (a zombie's commit
from a generation the group has left behind). The share of these is fixed; the mix's ``assign_ratio``
share goes to re-subscribes and client faults.
"""

from __future__ import annotations

from harness.generator import GenContext

STALL_EXTRA_MS = 2000  # beyond the session timeout: the coordinator has expired the member by then
# Of the assign_ratio share, the part a subscribing process spends on membership changes: each one costs
# the group a rebalance of a few seconds, so a fifth keeps the group stable most of the time.
CHURN_SHARE = 0.2


def subscribes(sub_via: str, process: int | str, concurrency: int) -> bool:
    """Whether ``process`` consumes through the group."""
    if sub_via == "subscribe":
        return True
    if sub_via == "assign,subscribe" and isinstance(process, int):
        return (process % max(1, concurrency)) % 2 == 1
    return False


class GroupOps:
    """The consumer side of a subscribing process's ops (module docstring)."""

    def __init__(self, keys: int, session_timeout_ms: int, commit_share: float = 0.2) -> None:
        self.keys = keys
        self.stall_ms = session_timeout_ms + STALL_EXTRA_MS
        self.commit_share = commit_share
        self.joined: set = set()

    def op(self, ctx: GenContext, churn: bool) -> dict:
        """A consumer op for ``ctx.process``; ``churn`` when the mix drew a membership change."""
        if ctx.process not in self.joined:
            self.joined.add(ctx.process)
            return {"f": "subscribe", "value": list(range(self.keys))}
        if churn:
            draw = ctx.rng.random()
            if draw < 0.4:
                return {"f": "subscribe", "value": list(range(self.keys))}
            if draw < 0.6:
                # the next op of this slot runs on a fresh process, which subscribes first
                return {"f": "crash", "value": None}
            self.joined.discard(ctx.process)  # the zombie's consumer is abandoned after its commit
            return {"f": "commit", "value": None, "stall_ms": self.stall_ms}
        if ctx.rng.random() < self.commit_share:
            return {"f": "commit", "value": None}
        return {"f": "poll", "value": None}
