"""Workloads: the clients that drive a cluster and the generators that say what they do.

Theory of operation. A workload is two things: a *generator* of invocations (plain data, seeded: see
``harness.generator``) and a *client* per logical process that turns an invocation into real Kafka
requests and classifies the outcome. The interpreter pairs them and records every invocation and
completion in the history; the workload never writes the history itself. The two, with the final
generator that ends a run (after the faults are healed), form one ``harness.workload.Workload``;
``workloads.registry`` maps ``spec.workload`` to it, so the runner drives whichever workload a spec
names and a new one plugs in with ``registry.register``.

``queue`` (``workloads.queue`` + ``workloads.clients``) follows Jepsen's Kafka queue workload: producers
send run-unique integer values with ``acks=all`` (idempotent) to partitions named by integer keys,
consumers ``assign()`` partitions and poll; a final phase reads every partition from the beginning with
ops marked ``"final": true``. Its guarantees to the checkers: values are unique per run, so a value names
its send; a ``fail`` completion means the record certainly was not appended (only definite, pre-append
rejections); anything ambiguous (timeouts, retried errors, exceptions) is ``info`` and retires the
process. What it cannot see: records appended by an earlier attempt of a send that later timed out are
visible only through reads, so such values appear as ``info`` sends that may be read back.
"""
