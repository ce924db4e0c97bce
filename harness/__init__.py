"""The harness: starts a cluster, drives workloads and nemeses, records one history, checks it, stores it.

Theory of operation (Jepsen's model, applied to Kafka's replication protocol):

- **A run is plain data.** ``spec`` builds a validated, serializable spec (seed, workload options, cluster
  configuration, nemesis list, environment facts such as the git commit and the image tag) and writes it
  to ``spec.json`` before anything starts, so every run, even one whose harness was killed, can be
  replayed (``kraftcheck run --replay``) and analysed. Live handles (host, cluster, history writer) live
  beside it in ``context.RunContext``.
- **Where nodes run** is a ``Host`` (``hosts.local``: processes on 127.x addresses; ``hosts.docker``:
  containers on an internal network). **What runs there** is a ``Cluster`` adapter (``cluster.RefCluster``
  for the reference implementation): it writes node configs, starts nodes, and observes readiness only
  through the Kafka protocol (Metadata lists registered, unfenced brokers), so other implementations can
  be plugged in later.
- **What happens** is decided by generators (``generator``: plain, seeded, testable without a cluster)
  and executed by the ``interpreter`` with one worker per logical process and real kafka-python clients
  (``workloads``). Every invocation and completion is streamed to ``history.jsonl`` as it happens. An op
  whose outcome is unknown (timeout, exception) is ``info`` and retires its process; ``fail`` is only for
  ops that certainly did not happen. Nemeses (``nemesis.registry``) inject faults on a seeded schedule
  and record them with their evidence.
- **The final phase** heals every fault, waits for the cluster to recover and reads every partition from
  the beginning (ops marked ``"final": true``), so "every acknowledged write survives" becomes checkable.
- **The verdict** comes from the checkers (``checkers.analysis.check_run``) over the history and the
  merged, time-rebased node traces; a requested fault that never provably took effect, an interrupted
  run or an incomplete final read caps it at ``unknown``. ``runner`` ties it together with teardown on
  every exit path; ``store`` lays the files out; ``commands`` are the CLI; ``pytest_plugin`` exposes runs
  and clusters to tests.

What the harness cannot see: anything not in the history, the node traces or the node logs; a fault's
effect beyond the evidence its nemesis records; and, after a SIGKILL of the harness itself, whatever had
not been flushed (at most the op being written).
"""
