"""Targeted faults: aimed at the narrow windows where the replication rules matter.

Theory of operation. Random faults rarely land while an ISR change is in flight, right after a truncation,
or just after a node came back without its unflushed writes, yet that is where single-guard bugs live.
Each family here aims a fault at such a window and, like every nemesis, returns evidence of effect
(``value.effective`` true only when the evidence shows the fault happened):

- ``crash-lossy`` (``lossy``): kill -9 a node, drop its unsynced writes (the lazyfs mounts of
  ``nemesis.disk``), keep it down while the others move on, restart it, and optionally kill the leader
  right after, so the node that lost data is a candidate in the next election. Within its op.
- ``strike`` (``strike``, ``tail``, ``triggers``): follow the nodes' ``trace.jsonl`` files while the run
  goes and, on a protocol event (an ISR expansion proposed, a leader epoch starting, a reassignment step,
  a truncation), kill -9 or pause the leader, the joining follower or the controller within
  milliseconds. The op can provoke its event first (a replica down long enough to be fenced, a
  reassignment). Lasting, healed by ``end-strike``.
- ``churn`` (``churn``): membership changes as a sequence through the admin API: remove a replica and
  add it back, shrink and grow the replication factor, cancel mid-way, under a kill -9 or a partition of
  the replica being moved. Within its op (the kill and the partition are healed before it completes).
- ``cut`` (``cuts``): a broker cut off from the controller but not from its peers, and one-way cuts
  between a leader and a follower. Lasting, healed by ``stop-cut``.

- ``strand`` (``strand``): a follower cut off from its leader until the ISR drops it, then every other
  replica of the partition stopped, so the stale follower is the only live replica (the window of unclean
  election, C12); the others restart. Within its op.

- ``episodes`` (``episodes``): the scripted episodes that open the windows of bugs Kafka shipped (the
  zombie follower of KAFKA-6880, the fast fail-over of KAFKA-6361, an unclean restart of an ELR member
  with the ISR empty), played one after the other with leadership moved through the admin API, cuts and
  crashes; the episodes of ``simulator.historical_episodes`` on a live cluster. Within its op.

``--nemesis targeted`` asks for all six (``harness.faults.TARGETED``); ``all`` includes them. Every
member reaches the hosts only through the abilities of ``harness.interfaces``.
"""
