"""The harness: the contracts every other package builds on, and the machinery that runs a cluster.

Two layers, enforced by an import contract (pyproject ``[tool.importlinter]``):

- **Contracts** (pure, no processes, no sockets): the history schema and its I/O (``history``), the typed
  run spec and its flags and JSON Schema (``spec``, ``spec_cli``, ``spec_schema``), the store layout
  (``store``), the fault vocabulary (``faults``), the verdict and exit codes (``verdict``), the small
  protocols a host, cluster and client implement (``interfaces``), the generator combinators
  (``generator``) and the ``Workload`` bundle (``workload``). Checkers, reports and Spark jobs need only
  these, so a history can be judged with no cluster anywhere.
- **Machinery** (above them): the hosts nodes run on (``hosts``), the docker image (``image``), the
  cluster adapter (``cluster``), the interpreter that executes generators with real clients
  (``interpreter``), the live run context (``context``) and ``cleanup`` of whatever a run left behind.

The application that composes a run from these, with nemeses, workloads and checkers, is the
``kraftcheck`` package above every other.

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
  be plugged in.
- **What happens** is decided by generators (``generator``: plain, seeded, testable without a cluster)
  and executed by the ``interpreter`` with one worker per logical process and real Kafka clients
  (``workloads``). Every invocation and completion is streamed to ``history.jsonl`` as it happens. An op
  whose outcome is unknown (timeout, exception) is ``info`` and retires its process; ``fail`` is only for
  ops that certainly did not happen. Nemeses inject faults on a seeded schedule and record them with
  their evidence.
- **The final phase** heals every fault, waits for the cluster to recover and reads every partition from
  the beginning (ops marked ``"final": true``), so "every acknowledged write survives" becomes checkable.
- **The verdict** comes from the checkers (``checkers.analysis.check_run``) over the history and the
  merged, time-rebased node traces; a requested fault that never provably took effect, an interrupted
  run or an incomplete final read caps it at ``unknown`` (``verdict.decide``).

What the harness cannot see: anything not in the history, the node traces or the node logs; a fault's
effect beyond the evidence its nemesis records; and, after a SIGKILL of the harness itself, whatever had
not been flushed (at most the op being written).
"""
