"""The guard coverage table of a search: which guards fired, how often, first under which seed.

``GuardTally`` adds up the per-schedule firings (``Result.guards``) of a search, whatever the number of
workers (results arrive in seed order, so "first seed" is the smallest seed that fired the guard).
``render`` prints the table: the guards that never fired first (each one a finding: a search that never makes
its condition true cannot test it), then the others by how rarely they fired. Guards of the controller
quorum's own code (``raft/``, ``quorum_controller.py``) run only with ``--controllers`` above one; in a
search with a single controller they are listed apart, as out of scope, and not counted as never fired.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.guards import Guard, core_guards


def quorum_guard(guard: Guard) -> bool:
    """A guard in the quorum's own code, which a single controller never runs."""
    path = guard.path.replace("\\", "/")
    return "/raft/" in path or path.endswith("/quorum_controller.py")


@dataclass
class GuardTally:
    """Firings per guard of the table ``guards`` over the schedules added so far."""

    guards: tuple[Guard, ...] = field(default_factory=core_guards)
    fired: dict[int, int] = field(default_factory=dict)
    first_seed: dict[int, int] = field(default_factory=dict)
    kinds: dict[int, set[str]] = field(default_factory=dict)
    schedules: int = 0
    failing: int = 0

    def add(self, seed: int, guards: dict[int, tuple[int, tuple[str, ...]]], failed: bool = False) -> None:
        """One schedule's firings (guard index -> (times, message kinds))."""
        self.schedules += 1
        self.failing += failed
        for index, (times, kinds) in guards.items():
            self.fired[index] = self.fired.get(index, 0) + times
            self.first_seed.setdefault(index, seed)
            self.kinds.setdefault(index, set()).update(kinds)

    def rows(self, quorum: bool) -> list[dict[str, Any]]:
        """One row per guard in table order: never fired first, then by times fired (rarest first), then
        out of scope (quorum guards without a quorum); ties in source order."""
        rows = []
        for index, guard in enumerate(self.guards):
            in_scope = quorum or not quorum_guard(guard)
            times = self.fired.get(index, 0)
            rows.append({"guard": guard.name, "where": guard.where, "reason": guard.reason, "test": guard.test,
                         "fired": times, "first_seed": self.first_seed.get(index),
                         "kinds": sorted(self.kinds.get(index, ())), "in_scope": in_scope})
        rows.sort(key=lambda r: (not r["in_scope"], r["fired"] > 0, r["fired"]))
        return rows

    def summary(self, quorum: bool) -> dict[str, int]:
        """How many guards are in scope, how many fired, how many never did."""
        scoped = [i for i, g in enumerate(self.guards) if quorum or not quorum_guard(g)]
        fired = sum(1 for i in scoped if self.fired.get(i))
        return {"guards": len(self.guards), "in_scope": len(scoped), "fired": fired,
                "never_fired": len(scoped) - fired, "schedules": self.schedules}

    def to_json(self, quorum: bool) -> dict[str, Any]:
        """The table as a JSON-ready dict."""
        return {"summary": self.summary(quorum), "rows": self.rows(quorum)}


def render(tally: GuardTally, quorum: bool, limit: int | None = None) -> list[str]:
    """The table as lines of text (``limit``: at most that many rows of fired guards after the never-fired
    ones, which are always all shown)."""
    s = tally.summary(quorum)
    lines = [f"guard coverage: {s['fired']} of {s['in_scope']} guards fired in {s['schedules']} schedules, "
             f"{s['never_fired']} never fired"
             + (f" ({s['guards'] - s['in_scope']} quorum guards out of scope with one controller)"
                if s["guards"] != s["in_scope"] else "")]
    rows = tally.rows(quorum)
    never = [r for r in rows if r["in_scope"] and not r["fired"]]
    fired = [r for r in rows if r["in_scope"] and r["fired"]]
    width = max((len(r["where"]) for r in rows), default=10)
    if never:
        lines.append(f"never fired ({len(never)}): findings, a search that never makes the condition true "
                     f"cannot test the guard")
        for r in never:
            lines.append(f"  NEVER  {r['where']:<{width}}  {_short(r['guard'])}  if {r['test']}")
    shown = fired if limit is None else fired[:limit]
    lines.append(f"fired ({len(fired)}), rarest first: times, first seed, kinds of message")
    for r in shown:
        seed = "-" if r["first_seed"] is None else r["first_seed"]
        lines.append(f"  {r['fired']:>8}  {r['where']:<{width}}  seed {seed:<6} "
                     f"{_short(r['guard'])}  [{','.join(r['kinds'])}]")
    if len(shown) < len(fired):
        lines.append(f"  ... {len(fired) - len(shown)} more (--json FILE has them all)")
    return lines


def _short(name: str) -> str:
    """``Class.method#n`` of ``path:Class.method#n``."""
    return name.rsplit(":", 1)[-1]
