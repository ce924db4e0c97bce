"""The nemesis protocol (docs/interfaces.md).

A nemesis receives invocation ops (process ``"nemesis"``) and returns completions whose ``value`` carries
evidence that the fault took effect. It refuses at ``setup`` with ``NemesisUnsupported`` when it cannot
work on the backend, so nothing silently does nothing: it asks the host for the abilities it needs
(``isinstance(run.host, ability)`` with the protocols of ``harness.interfaces``) and, for the
abilities that depend on the machine, for the ``*_problem`` hint.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


class NemesisUnsupported(Exception):
    """Raised at setup when a fault cannot take effect on this backend (the message says why)."""


def host_label(run: Any) -> str:
    """The host's name, for refusal messages only: a nemesis decides by abilities, never by this name."""
    return str(getattr(run.host, "name", type(run.host).__name__))


def restart_nodes(run: Any, nodes: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Restart each of ``nodes`` through the cluster adapter: ``(started, errors)``, node -> pid and node ->
    what went wrong. A failure is evidence, not an exception: the final heal retries what is still down."""
    started: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for node in nodes:
        try:
            started[node] = run.cluster.restart_node(node)
        except Exception as exc:
            errors[node] = f"{type(exc).__name__}: {exc}"
    return started, errors


@runtime_checkable
class Nemesis(Protocol):
    """Injects one family of faults and heals them."""

    def setup(self, run: Any) -> None:
        """Prepare (check privileges, install helpers); raise NemesisUnsupported if it cannot work."""

    def invoke(self, run: Any, op: dict) -> dict:
        """Perform the fault described by ``op`` and return its completion with evidence."""

    def heal_all(self, run: Any) -> dict:
        """Undo every fault this nemesis may have left in place; return evidence of the healing."""

    def teardown(self, run: Any) -> None:
        """Release everything (idempotent, never raises)."""

    def fs(self) -> set[str]:
        """The ``f`` names this nemesis handles."""
