"""Partition topologies as data: the set of directed edges ``(src, dst)`` whose packets are dropped.

Pure functions over node names (unit-tested without a network). The pseudo-node ``CLIENTS``
(``"client"``, from ``harness.interfaces``) stands for the harness's Kafka clients. Jepsen's vocabulary:

- ``isolate-one``: one node cut from all others;
- ``halves`` / ``random-halves``: two sides (sorted or shuffled), no traffic between them;
- ``bridge``: two halves plus one node that still talks to both;
- ``majorities-ring``: nodes on a ring each see the majority centred on themselves, so every node sees
  a majority but no two see the same one;
- ``isolate-leader`` / ``isolate-controller``: the given node cut from everyone else;
- ``one-way``: nobody receives from one node, while it still receives from everybody;
- ``brokers-controller``: every broker cut from the controller(s) (broker-to-broker traffic stays);
- ``clients-brokers``: the clients cut from one broker (brokers still replicate);
- with a controller quorum (``controllers``): ``isolate-controller`` cuts the active controller from the
  brokers and the other voters; ``controllers-split`` cuts a minority of the voters, the active one among
  them, from the rest (brokers keep talking to everyone); ``controller-one-way`` drops what the active
  controller sends to one other voter (it still hears that voter).
"""

from __future__ import annotations

import random

from harness.interfaces import CLIENTS

Edge = tuple[str, str]


def complete_cut(side_a: list[str], side_b: list[str]) -> set[Edge]:
    """Drop every packet between the two sides, in both directions."""
    edges = set()
    for a in side_a:
        for b in side_b:
            if a != b:
                edges.add((a, b))
                edges.add((b, a))
    return edges


def halves(nodes: list[str]) -> tuple[list[str], list[str]]:
    """Split into a smaller first half and a larger second half (order kept)."""
    mid = len(nodes) // 2
    return nodes[:mid], nodes[mid:]


def majorities_ring(nodes: list[str]) -> set[Edge]:
    """Each node hears only the majority window centred on itself on the ring ``nodes``."""
    n = len(nodes)
    if n < 3:
        return set()
    majority = n // 2 + 1
    reach = (majority - 1) // 2
    edges = set()
    for i, dst in enumerate(nodes):
        visible = {nodes[(i + d) % n] for d in range(-reach, reach + 1)}
        # With an even majority the window is one wider on the right (Jepsen's grudge is directed too).
        if len(visible) < majority:
            visible.add(nodes[(i + reach + 1) % n])
        for src in nodes:
            if src not in visible:
                edges.add((src, dst))
    return edges


def edges_for(
    topology: str,
    brokers: list[str],
    controller: str | None,
    rng: random.Random,
    special: str | None = None,
    controllers: list[str] | None = None,
    others: list[str] | None = None,
) -> set[Edge]:
    """Directed edges to drop for ``topology``; ``special`` is the leader for ``isolate-leader``;
    ``controllers`` every voter of a controller quorum (``controller`` is the active one); ``others`` are
    nodes that are neither brokers nor controllers (a system's storage node), cut like the rest."""
    brokers = sorted(brokers)
    voters = sorted(set(controllers or []) | ({controller} if controller else set()))
    nodes = brokers + voters + sorted(set(others or []) - set(voters))
    if topology == "isolate-one":
        node = rng.choice(nodes)
        return complete_cut([node], [n for n in nodes if n != node])
    if topology == "halves":
        a, b = halves(nodes)
        return complete_cut(a, b)
    if topology == "random-halves":
        shuffled = list(nodes)
        rng.shuffle(shuffled)
        a, b = halves(shuffled)
        return complete_cut(a, b)
    if topology == "bridge":
        shuffled = list(nodes)
        rng.shuffle(shuffled)
        if len(shuffled) < 3:
            return set()
        bridge = shuffled[len(shuffled) // 2]
        rest = [n for n in shuffled if n != bridge]
        a, b = halves(rest)
        return complete_cut(a, b)
    if topology == "majorities-ring":
        ring = list(nodes)
        rng.shuffle(ring)
        return majorities_ring(ring)
    if topology == "isolate-leader":
        if not special:
            return set()
        return complete_cut([special], [n for n in nodes if n != special])
    if topology == "isolate-controller":
        if not controller:
            return set()
        return complete_cut([controller], brokers + [v for v in voters if v != controller])
    if topology == "controllers-split":
        if len(voters) < 3:
            return set()
        others = [v for v in voters if v != controller]
        rng.shuffle(others)
        minority = ([controller] if controller else []) + others[:(len(voters) - 1) // 2 - (1 if controller else 0)]
        return complete_cut(minority, [v for v in voters if v not in minority])
    if topology == "controller-one-way":
        others = [v for v in voters if v != controller]
        if not controller or not others:
            return set()
        return {(controller, rng.choice(others))}
    if topology == "one-way":
        node = rng.choice(nodes)
        return {(node, other) for other in nodes if other != node}
    if topology == "brokers-controller":
        return complete_cut(brokers, voters) if voters else set()
    if topology == "clients-brokers":
        return complete_cut([CLIENTS], [rng.choice(brokers)]) if brokers else set()
    raise ValueError(f"unknown topology {topology!r}")


def grudge(edges: set[Edge]) -> dict[str, list[str]]:
    """``dst -> [src, ...]``: from whom each node drops packets (Jepsen's grudge), for evidence."""
    out: dict[str, list[str]] = {}
    for src, dst in sorted(edges):
        out.setdefault(dst, []).append(src)
    return out
