"""Named scenarios: scripted reproductions of known protocol situations on a real cluster.

Theory of operation. A random fault schedule (``kraftcheck run``) finds problems by chance; a scenario
drives the cluster through one exact sequence from PROTOCOL.md's recipes (section 5) so that a known
issue either shows up or is shown to be fixed, every time, in well under a minute. A scenario is plain
data plus two functions:

- ``spec_options``: the run configuration it needs (cluster size, RF, MinISR, acks, flush policy, the
  fault families it uses, short session timeouts), merged with the user's ``--backend``, ``--variant``
  and ``--seed`` into an ordinary ``spec.json`` (plus ``"scenario": NAME``, which the guarantee profiles
  read to recognise a reproduction);
- ``script(runner, run, cluster)``: the steps, run by ``harness.scenarios.script.ScriptedRunner`` in place
  of the random main phase. Client ops and faults go through the normal clients and nemesis classes, so
  the history, trace, coverage table, checkers and report are exactly those of any run;
- ``judge(spec, steps, ops, events, results)``: the decisive facts read back from the stored history and
  trace, and whether the variant's expectation held (for Last Replica Standing: loss under v3.5 reported
  as the known issue, no loss and a valid verdict under KIP-966).

What a scenario cannot show: it proves the one interleaving it scripts. Waits are on states the
controller reports in its trace (fencing, ISR/ELR changes, elections), so timing differences between
machines change how long a step takes, not what it establishes; a state that never comes is a harness
error naming what was awaited and what was last seen, never a verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Scenario:
    """One named, scripted reproduction (see the package docstring)."""

    name: str
    summary: str
    recipe: str
    variants: tuple[str, ...]
    spec_options: dict[str, Any] = field(default_factory=dict)
    script: Callable[..., None] | None = None
    judge: Callable[..., dict[str, Any]] | None = None
    needs_root_locally: bool = True
    aliases: tuple[str, ...] = ()


class UnknownScenario(KeyError):
    """No scenario has that name (the message lists the known ones)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown scenario"


def _last_replica_standing() -> Scenario:
    from harness.scenarios import lrs

    return Scenario(
        name="last-replica-standing",
        summary="acked write lost after power loss of the last ISR member (v3.5); kept with KIP-966",
        recipe=lrs.RECIPE,
        variants=("v3.5", "kip966"),
        spec_options=dict(lrs.SPEC_OPTIONS),
        script=lrs.script,
        judge=lrs.judge,
        aliases=("lrs",),
    )


# name -> builder (built on demand so listing names imports nothing heavy)
_BUILDERS: dict[str, Callable[[], Scenario]] = {
    "last-replica-standing": _last_replica_standing,
}
_ALIASES = {"lrs": "last-replica-standing"}


def names() -> list[str]:
    """Registered scenario names, sorted."""
    return sorted(_BUILDERS)


def get(name: str) -> Scenario:
    """The scenario called ``name`` (or one of its aliases); ``UnknownScenario`` otherwise."""
    key = _ALIASES.get(name, name)
    if key not in _BUILDERS:
        raise UnknownScenario(f"unknown scenario {name!r}; known: {', '.join(names())}")
    return _BUILDERS[key]()


def scenario_options(scenario: Scenario, backend: str | None = None, variant: str | None = None,
                     seed: int | None = None) -> dict[str, Any]:
    """Spec options for one run of ``scenario`` (its own options plus the user's choices)."""
    if variant is not None and variant not in scenario.variants:
        raise ValueError(f"scenario {scenario.name} has no variant {variant!r}; "
                         f"choose one of {', '.join(scenario.variants)}")
    options = dict(scenario.spec_options)
    options["variant"] = variant or scenario.variants[0]
    if backend is not None:
        options["backend"] = backend
    if seed is not None:
        options["seed"] = seed
    return options


__all__ = ["Scenario", "UnknownScenario", "get", "names", "scenario_options"]
