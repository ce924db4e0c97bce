"""The queue workload's main-phase generator: seeded send / poll / assign invocations, or, with transactions
(spec ``txn``), ``txn`` invocations of several send and poll micro-ops as Jepsen's Kafka workload makes them.

Values are integers unique within the run, so each names its send in the checkers (docs/history-schema.md).
"""

from __future__ import annotations

from harness.generator import GenContext
from workloads.group_ops import CHURN_SHARE, GroupOps, subscribes


class QueueOps:
    """The queue workload's main-phase ops: ``send [key, value]``, ``poll``, ``assign [keys]``.

    Values are integers unique within the run (a counter), so a value identifies its send in the checkers
    (duplicates, lost writes). Keys are partition numbers 0..keys-1 (they name the topic's
    partitions one to one: docs/history-schema.md).
    """

    def __init__(self, keys: int, send_ratio: float = 0.6, assign_ratio: float = 0.05, first_value: int = 0,
                 sub_via: str = "assign", concurrency: int = 1, session_timeout_ms: int = 6000):
        if keys < 1:
            raise ValueError("keys must be >= 1")
        self.keys, self.send_ratio, self.assign_ratio = keys, send_ratio, assign_ratio
        self.next_value = first_value
        # Subscribing processes (``sub_via``) draw their consumer ops from ``workloads.group_ops``.
        self.sub_via, self.concurrency = sub_via, concurrency
        self.group_ops = GroupOps(keys, session_timeout_ms)

    def op(self, ctx: GenContext) -> dict:
        """One op drawn from the mix."""
        group = subscribes(self.sub_via, ctx.process, self.concurrency)
        if group and ctx.process not in self.group_ops.joined:
            return self.group_ops.op(ctx, churn=False)
        draw = ctx.rng.random()
        if draw < self.send_ratio:
            value = self.next_value
            self.next_value += 1
            return {"f": "send", "value": [ctx.rng.randrange(self.keys), value]}
        if group:
            churn = draw < self.send_ratio + self.assign_ratio * CHURN_SHARE
            return self.group_ops.op(ctx, churn=churn)
        if draw < self.send_ratio + self.assign_ratio:
            count = ctx.rng.randint(1, self.keys)
            return {"f": "assign", "value": sorted(ctx.rng.sample(range(self.keys), count))}
        return {"f": "poll", "value": None}


MAX_MICRO_OPS = 4
ABORT_RATIO = 0.2  # share of transactions with sends that the client aborts on purpose (Jepsen: on errors only)
ZOMBIE_RATIO = 0.05  # share whose producer is replaced mid-transaction by a new instance (a zombie left behind)


class TxnOps(QueueOps):
    """With transactions: ``txn [[\"send\", key, value] | [\"poll\"], ...]`` (1 to ``MAX_MICRO_OPS`` micro-ops,
    each a send with probability ``send_ratio``) or ``assign [keys]``. A transaction with sends carries
    ``"abort": true`` (the client aborts it: it completes ``fail``) or ``"zombie": true`` (the client starts a
    second producer with the same transactional id halfway, which fences the first; the first then tries to
    finish, as a producer paused past its fencing would) at the ratios above."""

    def op(self, ctx: GenContext) -> dict:
        """One op drawn from the mix. A subscribing process (``sub_via``) joins the group first and spends
        the ``assign_ratio`` share on the group's own ops (commits, polls, membership changes)."""
        group = subscribes(self.sub_via, ctx.process, self.concurrency)
        if group and ctx.process not in self.group_ops.joined:
            return self.group_ops.op(ctx, churn=False)
        draw = ctx.rng.random()
        if group and draw < self.assign_ratio:
            return self.group_ops.op(ctx, churn=draw < self.assign_ratio * CHURN_SHARE)
        if not group and draw < self.assign_ratio:
            count = ctx.rng.randint(1, self.keys)
            return {"f": "assign", "value": sorted(ctx.rng.sample(range(self.keys), count))}
        mops: list[list] = []
        for _ in range(ctx.rng.randint(1, MAX_MICRO_OPS)):
            if ctx.rng.random() < self.send_ratio:
                mops.append(["send", ctx.rng.randrange(self.keys), self.next_value])
                self.next_value += 1
            else:
                mops.append(["poll"])
        op: dict = {"f": "txn", "value": mops}
        if any(m[0] == "send" for m in mops):
            draw = ctx.rng.random()
            if draw < ABORT_RATIO:
                op["abort"] = True
            elif draw < ABORT_RATIO + ZOMBIE_RATIO:
                op["zombie"] = True
        return op
