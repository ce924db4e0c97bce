"""Consumer-group checks: what a history of subscribing consumers says about the group coordinator.

Theory of operation
===================
The queue checks judge records (was every acknowledged write read, in order, once). A consumer group adds
a second replicated state, the group's *committed offsets* and its *generations*, and three promises about
them, which these checks hold the history to:

- ``double-assignment``: in one generation of a group, a partition is owned by at most one member (the
  leader's assignment is a partition of the topic; the coordinator hands each member its own share).
- ``commit-regression``: a committed offset never goes backwards. An acknowledged commit A of offset ``a``
  and a later acknowledged commit B (invoked after A completed) of ``b < a`` for the same partition are a
  regression when B's generation is older than A's (the coordinator accepted a commit from a generation
  it had left behind), or when they come from the same member of one generation, or when B's member was
  handed the partition in a newer generation after A had completed (so its start position came from a
  group state that already held ``a``).
- ``poll-below-commit``: after a rebalance, the group never hands a member a record below an offset the
  group committed for that partition before the rebalance began. At-least-once delivery allows reading
  again what was not committed, nothing below a commit.

What they read (docs/history-schema.md, the group ops): ``ok`` ``commit`` completions (value
``{key: offset}``, with ``group``, ``generation`` and ``member``), and the ``rebalance_log`` of ``ok``
polls (``{"type": "assigned"|"revoked", "keys", "generation", "member"}``), with the records those polls
returned. Events and commits without a generation (histories from clients that do not say) are skipped:
nothing is judged without it. Timing is the history's own: a commit "before" a rebalance completed
before the poll that went through the rebalance was invoked, so a commit that was acknowledged only
after the member fetched its offsets (a race Kafka allows) is never held against it.

How serious an anomaly is follows the queue profile's loss family: committed offsets and generations
live in a replicated log, so where the run's configuration lets acknowledged records be lost (unclean
elections, acks below all, Last Replica Standing on v3.5), the group kinds are allowed or a known issue
too; elsewhere they are forbidden.

Every rule compares commits, assignments and reads of one partition, so the checks run one key at a
time: ``extract`` says which facts a key needs (its commits and reads, and every rebalance event narrowed
to it), and both the Python checker and the Spark engine (``spark_analysis.groups``, on its workers) run
the same code on each key's facts, in history order.

Modules: ``extract`` (commits, assignments and reads from the completed ops, the tally, the split by
key), ``checks`` (the three checks, and all of them on one key), ``checker`` (``GroupChecker``, the
statuses and ``group_result``, which both engines assemble their result with).
"""

from checkers.groups.checker import GROUP_KINDS, GroupChecker, has_group_ops

__all__ = ["GROUP_KINDS", "GroupChecker", "has_group_ops"]
