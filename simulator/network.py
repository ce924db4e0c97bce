"""The simulated network: per-message delays, cuts (partitions, one-way), and lossy/duplicating/slow links.

Every message gets a base delay of 1-3 ms; a ``link`` fault adds up to its ``delay`` more, so messages on
that link overtake each other (Kafka uses several connections per broker pair, and the protocol treats
messages as an unordered set, docs/protocol-rules.md 1.7). TCP never duplicates a message; what a duplicate
stands for is a request the sender sent again after losing the answer to the first copy, so the server
handles both copies but only the answer to the copy it handles last reaches the sender (a registration
answered twice hands out two broker epochs, and the broker must learn the one the controller kept); a
request its sender saw refused (nobody listening at the first copy's arrival) reached no server, so its
other copies are never delivered (``World._deliver``). A cut is checked when a message would arrive: whatever is
in flight when a cut starts is lost with it, as packets are under iptables DROP. Clients' links are never
faulty (the faults are the cluster's). All randomness comes from the ``rng`` given, so a schedule replays.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

BASE_DELAY_MS = (1, 3)
# Request kinds that are a part of a wider one: a fault on the wider kind touches them too. The quorum's
# Vote requests are ``vote`` so that a fault can aim at elections alone (a delayed Fetch starves a follower
# into an election of its own; a delayed Vote lets two candidacies overlap), yet a ``raft`` fault still
# covers every quorum RPC.
PART_OF = {"vote": "raft"}


@dataclass(frozen=True)
class Message:
    """One message: ``kind`` names the request (or ``reply``), ``rpc`` ties a reply to its request."""

    src: Any
    dst: Any
    kind: str
    body: Any
    rpc: int
    reply_lost: bool = False  # an earlier copy of a duplicated request: its answer never reaches the sender


@dataclass(frozen=True)
class LinkFault:
    """Drop and duplicate probabilities and the extra delay bound of a faulty link; with ``kinds``, only
    messages of those request kinds (requests and their replies) are affected (a steered fault, ``steer``)."""

    drop: float
    dup: float
    delay: int
    kinds: frozenset[str] | None = None


class Network:
    """Delivery times for messages under the current faults (the caller schedules the deliveries)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.cuts: set[tuple[Any, Any]] = set()
        self.faults: dict[tuple[Any, Any], LinkFault] = {}

    def cut(self, a: Any, b: Any, oneway: bool = False) -> None:
        """Drop everything from a to b (and b to a)."""
        self.cuts.add((a, b))
        if not oneway:
            self.cuts.add((b, a))

    def uncut(self, a: Any, b: Any, oneway: bool = False) -> None:
        """Undo ``cut``."""
        self.cuts.discard((a, b))
        if not oneway:
            self.cuts.discard((b, a))

    def set_fault(self, a: Any, b: Any, fault: LinkFault | None) -> None:
        """Make the link between a and b faulty (both directions), or healthy again with None."""
        for pair in ((a, b), (b, a)):
            if fault is None:
                self.faults.pop(pair, None)
            else:
                self.faults[pair] = fault

    def heal(self) -> None:
        """Every link healthy and connected."""
        self.cuts.clear()
        self.faults.clear()

    def is_cut(self, src: Any, dst: Any) -> bool:
        """Whether a message from src to dst is lost on arrival now."""
        return (src, dst) in self.cuts

    def delays(self, src: Any, dst: Any, kind: str | None = None) -> list[int]:
        """The delivery delays of one message sent now: none (dropped), one, or two (duplicated). ``kind``:
        the request kind the message is (or answers), for a fault limited to some kinds."""
        rng = self.rng
        delay = rng.randint(*BASE_DELAY_MS)
        fault = self.faults.get((src, dst))
        if fault is None or (fault.kinds is not None and kind not in fault.kinds
                             and PART_OF.get(kind) not in fault.kinds):
            return [delay]
        if fault.drop and rng.random() < fault.drop:
            return []
        out = [delay + (rng.randint(0, fault.delay) if fault.delay else 0)]
        if fault.dup and rng.random() < fault.dup:
            out.append(delay + rng.randint(0, max(fault.delay, 5)))
        return out
