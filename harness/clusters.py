"""Choosing the system under test for a run: its description, setting and build, and its cluster adapter.

``resolve(spec)`` reads the spec's ``sut``, ``sut_setting`` and ``sut_path`` into a ``SutChoice`` before
anything starts, so a run is refused at once (exit 2, with the reason) when the description is unknown,
the setting does not exist, the build is not installed (the message gives the install command), the
setting cannot serve the broker count, or the system cannot take a requested fault family or lacks an API
the workload needs. ``facts`` is what ``spec.json`` records about the system (``sut_facts``: its build,
version, how its runs are judged, the guarantees the setting declares and the reasons for what it does
not promise), so a stored run is judged by what was declared when it ran. ``make_cluster`` gives the
adapter: ``RefCluster`` for the reference implementation, ``SutCluster`` for any other description.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import sut_install
from harness.cluster import RefCluster
from harness.faults import FAMILY_NEEDS
from harness.spec import RunSpec
from harness.sut import REFERENCE, Setting, SutDescription, SutError, load
from harness.sut_cluster import SutCluster

# What a fault family's needs (the family table's ``needs``) are, in words.
NEED_TEXT = {
    "traces": "kraftcheck trace events (it fires on a protocol event the nodes report)",
    "admin:reassign": "partition reassignment through the admin API",
    "role:controller": "a controller node to cut off",
    "replication": "follower replicas that the leader keeps in sync (an ISR)",
}


@dataclass(frozen=True)
class SutChoice:
    """The system a run tests: its description, the chosen setting, the executable of its build and, for a
    distribution build, the distribution's directory."""

    description: SutDescription
    setting: Setting
    binary: Path | None
    dist: Path | None = None

    @property
    def is_reference(self) -> bool:
        """Whether this is the repository's own reference implementation (judged by the protocol's rules)."""
        return self.description.name == REFERENCE

    def has(self, need: str) -> bool:
        """Whether the system offers ``need`` (see ``FAMILY_NEEDS``)."""
        if need == "traces":
            return self.description.traces
        if need == "replication":
            return self.description.replication
        if need.startswith("admin:"):
            return need.split(":", 1)[1] in self.description.admin
        if need.startswith("role:"):
            return need.split(":", 1)[1] in {r.name for r in self.description.roles_of(self.setting.name)}
        raise ValueError(f"unknown need {need!r}")


def fit_to_setting(options: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Options for a system whose setting serves fewer brokers than the run's defaults: the broker count,
    replication factor and MinISR the user did not give are fitted to it (a one-broker setting runs one
    broker with one replica and MinISR 1), with a line saying so. What the user gave is kept as given,
    and ``resolve`` refuses it if it does not fit."""
    out = dict(options)
    try:
        setting = load(out.get("sut") or REFERENCE).setting(out.get("sut_setting"))
    except (SutError, OSError, ValueError):
        return out, None  # ``resolve`` reports the problem with the system itself
    limit = setting.max_brokers
    if limit is None or out.get("brokers") is not None:
        return out, None
    fitted: dict[str, int] = {"brokers": limit}
    if out.get("replication_factor") is None:
        fitted["replication_factor"] = limit
    if out.get("min_isr") is None:
        replicas = int(fitted.get("replication_factor") or out["replication_factor"])
        fitted["min_isr"] = min(2, replicas) if replicas > 1 else 1
    out.update(fitted)
    given = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in fitted.items())
    return out, f"setting {setting.name!r} serves at most {limit} broker(s): running with {given}"


def resolve(spec: RunSpec, require_installed: bool = True) -> SutChoice:
    """The system of ``spec``; ``SutError`` says why it cannot run (module docstring)."""
    description = load(spec.sut or REFERENCE)
    setting = description.setting(spec.sut_setting)
    build = description.builds[setting.build]
    binary = sut_install.binary_path(build, spec.sut_path)
    if require_installed and not sut_install.installed(build, spec.sut_path):
        if build.kind == "dist":
            raise SutError(f"--sut-path: {binary} is not an executable file of a {description.name} distribution")
        raise SutError(f"{description.name} ({build.name} build, for setting {setting.name!r}) is not installed: "
                       f"run `kraftcheck sut install {description.name} --setting {setting.name}` first")
    if setting.variant is not None and spec.variant != setting.variant:
        raise SutError(f"{description.name} setting {setting.name!r} runs the {setting.variant} variant of the "
                       f"protocol, but the run asks for --variant {spec.variant}: pass --variant "
                       f"{setting.variant} or choose another setting")
    limit = setting.max_brokers
    if limit is not None and int(spec.brokers) > limit:
        raise SutError(f"{description.name} setting {setting.name!r} serves at most {limit} broker(s) "
                       f"({setting.summary}); run it with --brokers {limit} --replication-factor {limit} "
                       f"--min-isr 1")
    dist = spec.sut_path if build.kind == "dist" else None
    return SutChoice(description, setting, binary, Path(dist).expanduser() if dist else None)


def refusals(choice: SutChoice, families: list[str] | tuple[str, ...]) -> list[str]:
    """Why the system cannot take each requested fault family it cannot take (empty: every one works)."""
    out = []
    for family in families:
        missing = [need for need in FAMILY_NEEDS.get(family, ()) if not choice.has(need)]
        if missing:
            out.append(f"{family}: {choice.description.name} offers no "
                       + "; no ".join(NEED_TEXT[need] for need in missing))
    return out


def missing_apis(choice: SutChoice, needed: tuple[str, ...]) -> list[str]:
    """The APIs a workload needs that the chosen build lacks."""
    return [api for api in needed if api in choice.description.missing_apis(choice.setting.name)]


def facts(choice: SutChoice) -> dict[str, Any]:
    """``spec.json``'s ``sut_facts`` (module docstring)."""
    build = choice.description.builds[choice.setting.build]
    return {
        "name": choice.description.name,
        "setting": choice.setting.name,
        "build": build.name,
        "kind": build.kind,
        "version": build.version,
        "binary": None if choice.binary is None else str(choice.binary),
        "profile": choice.description.profile,
        "traces": choice.description.traces,
        "replication": choice.description.replication,
        "ephemeral": choice.setting.ephemeral,
        "guarantees": sorted(choice.setting.guarantees),
        "not_promised": dict(choice.setting.not_promised),
        "summary": choice.setting.summary,
    }


def planned_nodes(choice: SutChoice, spec: RunSpec) -> list[str]:
    """The names of the nodes a run of ``spec`` will start, before any starts (nemeses prepare them)."""
    cluster = make_cluster(choice, None, None, 0.0)
    cluster.plan(spec)
    return cluster.nodes()


def make_cluster(choice: SutChoice, host: Any, run: Any, ready_timeout_s: float) -> Any:
    """The cluster adapter for the chosen system."""
    if choice.is_reference:
        return RefCluster(host, run, ready_timeout_s=ready_timeout_s)
    return SutCluster(host, run, choice.description, choice.setting.name, choice.binary,
                      ready_timeout_s=ready_timeout_s, dist=choice.dist)
