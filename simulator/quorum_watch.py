"""Fail-over must happen, and zombies must stand down: the controller quorum's liveness during the faults.

The end-of-run liveness check (``liveness``) restarts every node first, so a quorum that never fails over
(followers that never stand for election, a candidate that never times out) or a leader that never notices
it lost the quorum passes it: the old leader comes back and leads again. Raft promises more, and so does
KRaft: while a majority of the voters run and can talk to each other, one of them becomes the active
controller within a few election rounds (Q3, Q4, Q10); a leader that cannot reach a majority resigns
within its check-quorum timeout (Q11). Every ``CHECK_EVERY_MS`` of simulated time this watch looks at the
network the schedule left and reports a ``liveness`` finding when

- for ``failover_bound_ms`` (seven fetch timeouts) some majority of voters has been alive and fully
  connected (no cut either way, no lossy or slow link between any two of them), and no such majority
  has held the active controller; or
- a voter has been the active controller for ``zombie_bound_ms`` (about three check-quorum timeouts)
  while it could not reach a majority: every other voter but too few was crashed or cut from it (either
  way). A lossy or slow link is no cut here: fetches still get through it, and a leader that hears a
  majority keeps leading (seed 407 of the 3-voter kip966 search: a 20 ms link to the one follower left).

Both bounds are generous multiples of the quorum's timers (``SimOptions``), so a legitimate election with a
split vote or two never trips them; 2 000 seeds of the unmodified core do not.
"""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from simulator.host import Host

RULE = "liveness"


class QuorumWatch:
    """The two conditions of the module docstring, tracked across checks."""

    def __init__(self, world: Host) -> None:
        o = world.options
        self.failover_bound_ms = 7 * o.quorum_fetch_timeout_ms
        self.zombie_bound_ms = 3 * (o.quorum_fetch_timeout_ms * 3 // 2) + o.quorum_fetch_timeout_ms
        self._available_since: int | None = None
        self._cut_off_since: dict[Any, int] = {}

    def problems(self, world: Host) -> list[str]:
        """What is wrong now (see the module docstring); empty when the quorum behaves."""
        voters = world.controller_ids
        if len(voters) < 2:
            return []
        now = world.now
        live = [v for v in voters if not world.nodes[v].dead]
        majority = len(voters) // 2 + 1
        groups = _connected_majorities(world, live, majority)
        out = []
        if groups and not any(world.nodes[v].active for group in groups for v in group):
            if self._available_since is None:
                self._available_since = now
            elif now - self._available_since > self.failover_bound_ms:
                out.append(f"no active controller although voters {sorted(groups[0])} have run connected for "
                           f"{now - self._available_since} ms without one (fail-over, Q3/Q10)")
        else:
            self._available_since = None
        for v in live:
            if world.nodes[v].active and not _reaches_majority(world, v, live, majority):
                since = self._cut_off_since.setdefault(v, now)
                if now - since > self.zombie_bound_ms:
                    out.append(f"controller {v} still active {now - since} ms after it lost the quorum (Q11)")
            else:
                self._cut_off_since.pop(v, None)
        return out


def _healthy(world: Host, a: Any, b: Any) -> bool:
    net = world.network
    return not (net.is_cut(a, b) or net.is_cut(b, a) or (a, b) in net.faults or (b, a) in net.faults)


def _connected_majorities(world: Host, live: list[Any], majority: int) -> list[list[Any]]:
    """Every group of at least ``majority`` live voters whose every pair can talk (a handful of voters:
    every subset), largest first."""
    out = []
    for size in range(len(live), majority - 1, -1):
        for group in combinations(live, size):
            if all(_healthy(world, a, b) for a, b in combinations(group, 2)):
                out.append(list(group))
    return out


def _reaches_majority(world: Host, voter: Any, live: list[Any], majority: int) -> bool:
    net = world.network
    return 1 + sum(1 for v in live if v != voter and not (net.is_cut(voter, v) or net.is_cut(v, voter))) >= majority
