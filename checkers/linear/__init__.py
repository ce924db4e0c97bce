"""The linearizability engine: Wing-Gong-Lowe search, run as a separate executable.

Theory of operation. A history is linearizable when every completed operation can be given one instant
between its invocation and its completion such that, taken in that order, the operations are a legal
run of a sequential model (register, cas-register, kv, or a Kafka partition log: ``kafka-log`` with
dense offsets for non-transactional producers, ``kafka-log-gaps`` - chosen automatically when the
history has ``txn`` ops - whose offsets may skip the numbers that transaction markers take). The
engine is the Wing & Gong search with Lowe's memoisation, as in porcupine and knossos' ``wgl`` checker:

* the invocations and completions of one partition form a doubly linked list in history order;
* the search walks it: at an invocation it tries to *linearize* that op now (apply the model step; on
  success remove the op's two entries and restart from the head), at a completion it has hit an op that
  had to be linearized already, so it backtracks to the last choice and tries the next candidate;
* a cache of (set of linearized ops, model state) pairs already explored prunes the search (Lowe): two
  paths reaching the same pair cannot differ later;
* two shortcuts that never change a verdict (tested against an exhaustive search of the definition):
  an op that cannot change the state (a read, a failed cas) is taken as soon as it is legal, and of
  crashed ops with the same input and output (interchangeable once invoked) only the earliest open one
  is tried at a point, since taking another reaches the same configuration up to renaming.

Indeterminate (``info``) operations - crashed clients - may or may not have taken effect; their
completion is moved to the end of the history and their output is unknown (any output is accepted), so
the search may linearize them anywhere after their invocation, or at the very end, which is the same as
never. ``fail`` operations certainly did not happen and are dropped, except a ``fail`` cas, which is the
definite answer "the compare did not match" (as in porcupine's etcd model).

Per-key partitioning (P-compositionality, Herlihy & Wing): each key is an independent object, so each
key's sub-history is searched alone (the search is exponential in concurrency, so this matters). A
time limit makes the verdict ``unknown`` with the reason (which key, how many states explored), never a
guess. The executable (``python -m checkers.linear``) reads our JSONL history, Jepsen EDN, porcupine's
etcd logs and kv histories, and prints a JSON verdict; its exit code is the verdict's in
``harness.verdict.EXIT_CODES``. When a knossos command is configured (``--knossos CMD`` or ``KRAFTCHECK_KNOSSOS``) the same entry
point exports EDN, runs knossos instead and parses its verdict. Knossos is not installed on this machine:
that path is tested on recorded knossos output only.
"""
