"""Fault injection: process, network, clock, disk and admin faults, each proving it took effect.

Theory of operation. A nemesis is a small object (``nemesis.base.Nemesis``) that turns invocation ops
into real faults on the cluster's hosts and returns completions whose ``value`` carries evidence, with
``value.effective`` true only when the evidence shows the fault happened:

- ``process`` (``kill``/``start``, ``stop``/``start``, ``pause``/``resume``): signals to node processes;
  evidence: the pid that died and the new one, ``/proc`` state ``T`` while paused.
- ``net`` (``start-partition``/``stop-partition``): iptables rules tagged
  ``kraftcheck-<run id>`` in each node's network namespace (in the container; on the local backend,
  rules on ``lo`` matching the node addresses); evidence: a TCP connect across the cut fails while the
  rules hold and succeeds after heal.
- ``clock`` (``bump-clock``, ``skew-clock``, ``strobe-clock``, ``reset-clock``): libfaketime through
  LD_PRELOAD with an offset file the nemesis rewrites; only the wall clock is faked
  (FAKETIME_DONT_FAKE_MONOTONIC=1); evidence: the offset measured by a process with the node's env.
- ``disk`` (``power-loss``, ``lose-unsynced``): a FUSE pass-through file system (``nemesis.lazyfs``)
  under each node's data directory keeps unsynced file data in memory (metadata such as creates and
  renames is applied at once: a documented limit); power loss kill -9s, drops, restarts; evidence: the
  bytes dropped and the log end offsets before and after (``nemesis.logdir``).
- ``admin`` (reassignments keeping or changing RF, with and without KIP-860's flag, cancels, preferred
  and unclean elections): kafka-python admin requests; evidence: the controller's answer and the
  reassignment/leader state read back. All-at-once vs incremental (KIP-435) reassignment is the
  controller's ``reassignment.mode``, chosen per run (``--reassignment-mode``), not switched live.
- ``targeted`` (``crash-lossy``, ``strike``, ``churn``, ``cut``; the package ``nemesis.targeted``): faults
  aimed at the narrow windows where the replication rules matter: a lossy restart followed by a leader
  kill, kill -9 or pause fired within milliseconds of a protocol event read from the live trace,
  membership changes under kills and partitions, controller-only and one-way leader/follower cuts.

Every nemesis reaches the nodes through host abilities only (``harness.interfaces``:
``Killable``, ``Pausable``, ``NetworkRules``, ``ClockSkew``, ``FuseMounts``, ``NodeExec``): it refuses at
setup, with ``NemesisUnsupported``, when the host lacks one it needs, and never asks which backend it
runs on, so a new backend implements abilities and changes no nemesis.

``nemesis.registry.build_package`` composes the members a run asks for into one nemesis with a seeded
schedule (``nemesis.schedule``: one turn of each family first, then random subsets) and a final heal; the
families, their ops and their members are one table, ``harness.faults.FAULT_FAMILIES``, whose names key the
registry's start drawers; ``nemesis.coverage`` turns a history into the requested / attempted / proven
table that caps the verdict at ``unknown`` when a requested fault never took effect. Every member heals
in ``heal_all`` and releases in ``teardown``; ``harness.cleanup`` finds what a killed harness left behind
(rules by comment tag, mounts by fsname, faketime files, processes by pid file).

What it cannot see: a fault that took effect but had no consequence (a pause shorter than any timeout)
counts as effective; whether it mattered is for the checkers to tell.
"""
