"""Composition: several nemeses behind one, routing each op by its ``f`` (Jepsen's nemesis packages)."""

from __future__ import annotations

import sys
from typing import Any

from nemesis.base import NemesisUnsupported


class ComposedNemesis:
    """Routes ops to the member nemesis whose ``fs()`` contains the op's ``f``."""

    def __init__(self, members: dict[str, Any]):
        self.members = dict(members)
        self._routes: dict[str, Any] = {}
        for name, member in self.members.items():
            for f in member.fs():
                if f in self._routes and self._routes[f] is not member:
                    raise ValueError(f"op {f!r} is handled by two nemeses (second: {name})")
                self._routes[f] = member
        self._set_up: list[Any] = []

    def fs(self) -> set[str]:
        """Every op name some member handles."""
        return set(self._routes)

    def setup(self, run: Any) -> None:
        """Set every member up; if one refuses, tear down the ones already set up and re-raise."""
        for name, member in self.members.items():
            try:
                member.setup(run)
            except NemesisUnsupported as exc:
                self.teardown(run)
                raise NemesisUnsupported(f"{name}: {exc}") from exc
            except BaseException:
                self.teardown(run)
                raise
            self._set_up.append(member)

    def invoke(self, run: Any, op: dict) -> dict:
        """Hand ``op`` to the member that handles its ``f``."""
        member = self._routes.get(op["f"])
        if member is None:
            raise ValueError(f"no nemesis handles op {op['f']!r}")
        return member.invoke(run, op)

    def heal_all(self, run: Any) -> dict:
        """Heal every member (in reverse order: network and clocks before restarting processes is
        not required, but disks must be synced before processes restart); collect their evidence."""
        evidence: dict[str, Any] = {}
        for name in reversed(list(self.members)):
            try:
                evidence[name] = self.members[name].heal_all(run)
            except Exception as exc:  # keep healing the others; the failure is evidence too
                evidence[name] = {"effective": False, "error": f"{type(exc).__name__}: {exc}"}
        evidence["effective"] = all(
            isinstance(v, dict) and v.get("effective", True) for v in evidence.values()
        )
        return evidence

    def teardown(self, run: Any) -> None:
        """Tear down every member that was set up, in reverse order; never raises."""
        for member in reversed(self._set_up):
            try:
                member.teardown(run)
            except Exception as exc:
                print(f"[kraftcheck] nemesis teardown failed: {exc}", file=sys.stderr)
        self._set_up.clear()
