"""The part every targeted fault built on ``nemesis.net`` shares: its rules, setup, heal and teardown."""

from __future__ import annotations

from typing import Any

from nemesis.net import NetNemesis


class NetMember:
    """A nemesis member that installs its cuts through one ``NetNemesis``; subclasses set ``FS`` and
    implement ``invoke``."""

    FS: set[str] = set()

    def __init__(self) -> None:
        self.net = NetNemesis()

    def fs(self) -> set[str]:
        """The op names handled here."""
        return set(self.FS)

    def setup(self, run: Any) -> None:
        """Refuse as ``nemesis.net`` does (no NetworkRules, or rules cannot be installed here)."""
        self.net.setup(run)

    def heal_all(self, run: Any) -> dict:
        """Remove every rule (``nemesis.net``'s heal); nodes the member stopped are restarted by the run's
        heal."""
        return self.net.heal_all(run)

    def teardown(self, run: Any) -> None:
        """Remove every rule; never raises."""
        self.net.teardown(run)
