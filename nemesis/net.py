"""Network partitions: one drop rule per directed edge, healed rule by rule, proven by TCP probes.

``start-partition`` ``{"topology": ...}`` computes the directed edges to drop (``nemesis.topology``), or
takes them from ``{"edges": [[src, dst], ...]}``, and asks the host to ``block`` each one (``harness.interfaces.NetworkRules``; a one-way cut is a single
edge). ``isolate-group-coordinator`` / ``isolate-txn-coordinator`` cut the broker that leads the run's
group-offsets or transaction-state partition (``nemesis.targets.coordinator_of``) from every other node,
and name it in the evidence (``coordinator``). Where a rule lives and how it tells senders apart is the host's business: on docker, iptables in
the receiving container's network namespace; on the local backend (root only), owner rules on the
host's ``lo`` keyed by each node's group id. The clients are the node ``CLIENTS``. A new partition
replaces the one in place, unless the op says ``"add": true`` (scripted scenarios widen a cut without the
gap a heal would open); a ``stop-partition`` with ``"edges"`` removes only those, leaving the rest of the
cut in place.

Evidence: for a sample of dropped edges the host probes a TCP connect *as the sender* to the receiver's
address, on a port nobody listens on: a reachable address answers at once with a reset ("refused"), a
cut one stays silent until the timeout. ``effective`` is true when every sampled edge timed out while the
rules held; ``stop-partition`` removes exactly the rules it added and probes again, expecting "refused"
(except an edge whose reverse stays cut: the reset could not come back, so it is named, ``unprobed``).
The final heal also asks the host to remove any rule still carrying this run's tag.
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.interfaces import NetworkRules
from nemesis.base import NemesisUnsupported, host_label
from nemesis.targets import COORDINATOR_TOPICS, broker_node, controller_nodes, coordinator_of
from nemesis.topology import edges_for, grudge

PROBE_SAMPLE = 4


class NetNemesis:
    """start-partition / stop-partition (see the module docstring)."""

    FS = {"start-partition", "stop-partition"}

    def __init__(self, probe_sample: int = PROBE_SAMPLE):
        self.probe_sample = probe_sample
        self.edges: list[tuple[str, str]] = []  # the edges whose rules are in place

    def fs(self) -> set[str]:
        """The op names handled here."""
        return set(self.FS)

    def setup(self, run: Any) -> None:
        """Refuse when the host has no network rules, or cannot install them here."""
        if not isinstance(run.host, NetworkRules):
            raise NemesisUnsupported(f"no partition support on the {host_label(run)} host (no NetworkRules ability)")
        problem = run.host.network_rules_problem()
        if problem:
            raise NemesisUnsupported(problem)

    def _probes(self, run: Any, edges: list[tuple[str, str]]) -> dict[str, str]:
        # At the same time: a probe across a cut waits out its connect timeout, and one after another they
        # kept a partition's op (and a strand's or a cut's) waiting for seconds.
        if not edges:
            return {}
        with ThreadPoolExecutor(max_workers=len(edges), thread_name_prefix="kraftcheck-probe") as pool:
            outcomes = list(pool.map(lambda edge: run.host.probe(*edge), edges))
        return {f"{s}->{d}": outcome for (s, d), outcome in zip(edges, outcomes, strict=True)}

    # -- ops -----------------------------------------------------------------------------------
    def invoke(self, run: Any, op: dict) -> dict:
        """Install or remove a partition and return evidence."""
        value = dict(op.get("value") or {})
        if op["f"] == "stop-partition":
            only = {(str(s), str(d)) for s, d in value["edges"]} if value.get("edges") else None
            return {**op, "type": "ok", "value": {**value, **self._heal(run, only)}}
        if self.edges and not value.get("add"):  # one partition at a time: replace the previous one
            self._heal(run)
        topology = value.get("topology", "isolate-one")
        rng = random.Random(value.get("pick", 0))
        cluster = run.cluster
        brokers = list(cluster.brokers())
        try:
            controller = cluster.active_controller()
        except Exception:
            controller = None
        leader = None
        found = None
        drawn = topology
        if topology.startswith("isolate-") and topology[len("isolate-"):] in COORDINATOR_TOPICS:
            # A coordinator is the leader of a state-topic partition: the same cut as isolate-leader,
            # aimed at that partition's leader (or the fallback broker the evidence names).
            found = coordinator_of(run, topology[len("isolate-"):], value)
            leader, topology = found.get("node"), "isolate-leader"
        elif topology == "isolate-leader":
            try:
                leaders = cluster.leaders(value.get("topic") or run.spec.topic or "queue")
                if leaders:
                    partition = sorted(leaders)[rng.randrange(len(leaders))]
                    if leaders[partition] is not None and leaders[partition] >= 0:
                        leader = broker_node(cluster, leaders[partition])
            except Exception:
                leader = None
        if value.get("edges"):  # explicit [[src, dst], ...] (scripted scenarios name the exact cut)
            edges = sorted({(str(s), str(d)) for s, d in value["edges"]})
        else:
            voters = controller_nodes(cluster)
            others = [n for n in cluster.nodes() if n not in brokers and n != controller and n not in voters]
            edges = sorted(edges_for(topology, brokers, controller, rng, special=leader, controllers=voters,
                                     others=others))
            if not edges and topology != "clients-brokers":
                # Too few nodes for this topology (a system with one broker and no controller): the only
                # partition left is between the clients and a broker; the evidence names both.
                value["drawn_topology"], topology = drawn, "clients-brokers"
                edges = sorted(edges_for(topology, brokers, controller, rng))
        errors = []
        installed = []
        for src, dst in edges:
            if (src, dst) in self.edges:  # "add": already cut
                continue
            error = run.host.block(src, dst)
            if error is None:
                self.edges.append((src, dst))
                installed.append((src, dst))
            else:
                errors.append(f"{src}->{dst}: {error}")
        sample = rng.sample(installed, min(self.probe_sample, len(installed)))
        probes = self._probes(run, sample)
        effective = bool(edges) and not errors and all(p == "timeout" for p in probes.values())
        evidence = {
            "topology": drawn if found is not None and topology == "isolate-leader" else topology,
            "grudge": grudge(set(edges)),
            "edges": len(self.edges),
            "rules": run.host.rules_in_place(),
            "probes_during": probes,
            "effective": effective,
        }
        if found is not None:
            evidence["coordinator"] = found
        if errors:
            evidence["errors"] = errors
        return {**op, "type": "ok", "value": {**value, **evidence}}

    def _heal(self, run: Any, only: set[tuple[str, str]] | None = None) -> dict:
        """Remove the rules of every cut edge, or of the edges in ``only``, and probe them."""
        healing = [e for e in self.edges if only is None or e in only]
        removed, errors = 0, []
        for src, dst in reversed(healing):
            error = run.host.unblock(src, dst)
            if error is None:
                removed += 1
            else:
                errors.append(error)
        self.edges = [e for e in self.edges if e not in healing]
        # A probe is a round trip: the receiver's reset travels the reverse edge. While that edge stays cut
        # (a partial heal of a two-way cut) the probe times out whether or not this edge was healed, so it
        # proves nothing: such edges are named, not probed.
        still_cut = set(self.edges)
        provable = [e for e in healing if (e[1], e[0]) not in still_cut]
        sample = random.Random(len(healing)).sample(provable, min(self.probe_sample, len(provable)))
        probes = self._probes(run, sample)
        evidence = {
            "removed": removed,
            "probes_after": probes,
            "effective": not errors and all(p in ("refused", "connected") for p in probes.values()),
        }
        unprovable = [f"{s}->{d}" for s, d in healing if (d, s) in still_cut]
        if unprovable:
            evidence["unprobed"] = {"edges": unprovable, "why": "the reverse edge is still cut"}
        if errors:
            evidence["errors"] = errors
        return evidence

    def heal_all(self, run: Any) -> dict:
        """Remove every rule this nemesis added (and, as a safety net, any rule with this run's tag)."""
        evidence = self._heal(run)
        evidence["leftovers_removed"] = run.host.unblock_all()
        return evidence

    def teardown(self, run: Any) -> None:
        """Remove every rule; never raises."""
        try:
            self.heal_all(run)
        except Exception:
            pass

