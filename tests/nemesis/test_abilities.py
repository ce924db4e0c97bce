"""Nemeses work through host abilities alone, and refuse the abilities a host lacks.

``AbilityHost`` is an in-memory host that has only some abilities (``Killable``, ``NetworkRules``,
``NodeExec``; ``Pausable`` in a subclass): its processes are table rows with pids no real process can
have (above the kernel's pid limit) and its network is a set of blocked edges. A nemesis that read
``/proc`` or ran iptables itself instead of asking the host would find nothing there, so these tests
fail unless every effect and every piece of evidence goes through the protocols.
"""

from __future__ import annotations

import ast
import random
import signal
from pathlib import Path

import pytest

import nemesis
from harness.context import RunContext
from harness.interfaces import CLIENTS, ClockSkew, FuseMounts, Killable, NetworkRules, NodeExec, Pausable
from harness.spec import RunSpec
from nemesis.base import NemesisUnsupported
from nemesis.registry import build_package

PID_BASE = 2**22 + 1000  # above /proc/sys/kernel/pid_max's ceiling: never a real process


class AbilityHost:
    """Node processes and network rules kept in memory; no backend name is ever consulted."""

    name = "in-memory"

    def __init__(self, nodes: list[str]):
        self.run_id = "test-abilities"
        self._nodes = list(nodes)
        self.procs: dict[str, tuple[int, str]] = {}  # node -> (pid, state letter)
        self.blocked: set[tuple[str, str]] = set()
        self._next_pid = PID_BASE
        self.signals: list[tuple[str, int]] = []

    # -- what the stand-in cluster uses -------------------------------------------------------
    def start(self, node: str) -> int:
        self._next_pid += 1
        self.procs[node] = (self._next_pid, "S")
        return self._next_pid

    # -- Killable -----------------------------------------------------------------------------
    def nodes(self) -> list[str]:
        return list(self._nodes)

    def pid(self, node: str) -> int | None:
        entry = self.procs.get(node)
        return entry[0] if entry else None

    def is_running(self, node: str) -> bool:
        return node in self.procs

    def kill(self, node: str, sig: int) -> None:
        self.signals.append((node, sig))
        if node not in self.procs:
            return
        pid, _ = self.procs[node]
        if sig in (signal.SIGKILL, signal.SIGTERM):
            del self.procs[node]
        elif sig == signal.SIGSTOP:
            self.procs[node] = (pid, "T")
        elif sig == signal.SIGCONT:
            self.procs[node] = (pid, "S")

    def stop(self, node: str, timeout_s: float = 10.0) -> None:
        self.kill(node, signal.SIGTERM)

    def process_state(self, node: str, pid: int) -> str | None:
        entry = self.procs.get(node)
        return entry[1] if entry and entry[0] == pid else None

    def exit_code(self, node: str) -> int | None:
        return None if node in self.procs else -int(signal.SIGTERM)

    # -- NetworkRules -------------------------------------------------------------------------
    def network_rules_problem(self) -> str | None:
        return None

    def block(self, src: str, dst: str) -> str | None:
        self.blocked.add((src, dst))
        return None

    def unblock(self, src: str, dst: str) -> str | None:
        self.blocked.discard((src, dst))
        return None

    def rules_in_place(self) -> int:
        return len(self.blocked)

    def unblock_all(self) -> int:
        count = len(self.blocked)
        self.blocked.clear()
        return count

    def probe(self, src: str, dst: str) -> str:
        return "timeout" if (src, dst) in self.blocked else "refused"

    # -- NodeExec -----------------------------------------------------------------------------
    def exec(self, node: str, argv: list[str], timeout_s: float = 30.0) -> tuple[int, str]:
        return 127, "no commands in memory"


class PausableHost(AbilityHost):
    """The same host, able to pause."""

    def pause(self, node: str) -> None:
        self.kill(node, signal.SIGSTOP)

    def resume(self, node: str) -> None:
        self.kill(node, signal.SIGCONT)


class MemoryCluster:
    """Three brokers and a controller on an ``AbilityHost``; broker 1 leads partition 0."""

    def __init__(self, host: AbilityHost):
        self.host = host

    def nodes(self) -> list[str]:
        return ["c1", "b1", "b2", "b3"]

    def brokers(self) -> list[str]:
        return ["b1", "b2", "b3"]

    def active_controller(self) -> str:
        return "c1"

    def leaders(self, topic: str) -> dict[int, int]:
        return {0: 1}

    def kill_node(self, node: str) -> int | None:
        pid = self.host.pid(node)
        self.host.kill(node, signal.SIGKILL)
        return pid

    def restart_node(self, node: str) -> int:
        return self.host.start(node)


def _run(tmp_path, host_class=AbilityHost) -> RunContext:
    host = host_class(["c1", "b1", "b2", "b3"])
    cluster = MemoryCluster(host)
    for node in cluster.nodes():
        host.start(node)
    return RunContext(spec=RunSpec(topic="queue", brokers=3), host=host, store_dir=tmp_path,
                      rng=random.Random(0), cluster=cluster)


def test_the_host_has_exactly_the_abilities_it_implements():
    host = AbilityHost([])
    assert all(isinstance(host, a) for a in (Killable, NetworkRules, NodeExec))
    assert not any(isinstance(host, a) for a in (Pausable, ClockSkew, FuseMounts))
    assert isinstance(PausableHost([]), Pausable)


def test_kill_and_partition_work_through_the_abilities_alone(tmp_path):
    run = _run(tmp_path)
    pkg = build_package("kill,partition", seed=1)
    pkg.setup(run)  # no Pausable, ClockSkew or FuseMounts needed for these families
    killed = pkg.execute(run, {"f": "kill", "value": {"target": "leader", "partition": 0}})
    assert killed["value"]["effective"] is True and killed["value"]["nodes"] == ["b1"]
    old_pid = killed["value"]["killed"]["b1"]
    assert old_pid > PID_BASE and not run.host.is_running("b1")
    started = pkg.execute(run, {"f": "start", "value": {}})
    assert started["value"]["effective"] is True and run.host.pid("b1") not in (None, old_pid)

    cut = pkg.execute(run, {"f": "start-partition", "value": {"topology": "clients-brokers", "pick": 2}})
    assert cut["value"]["effective"] is True, cut["value"]
    assert run.host.blocked and all(CLIENTS in edge for edge in run.host.blocked)
    assert set(cut["value"]["probes_during"].values()) == {"timeout"}
    healed = pkg.execute(run, {"f": "stop-partition", "value": {}})
    assert healed["value"]["effective"] is True and run.host.blocked == set()

    run.host.block("b2", "b3")  # a rule nobody recorded: the final heal's safety net removes it
    heal = pkg.heal(run)
    assert heal["value"]["partition"]["leftovers_removed"] == 1 and heal["value"]["effective"] is True


def test_pause_needs_the_pausable_ability(tmp_path):
    with pytest.raises(NemesisUnsupported, match="cannot pause.*Pausable"):
        build_package("kill,pause", seed=1).setup(_run(tmp_path))

    run = _run(tmp_path, PausableHost)
    pkg = build_package("pause", seed=1)
    pkg.setup(run)
    paused = pkg.execute(run, {"f": "pause", "value": {"nodes": ["b2"]}})
    assert paused["value"]["effective"] is True and paused["value"]["proc_state"] == {"b2": "T"}
    resumed = pkg.execute(run, {"f": "resume", "value": {}})
    assert resumed["value"]["effective"] is True and run.host.procs["b2"][1] == "S"


@pytest.mark.parametrize("family, ability", [("clock", "ClockSkew"), ("disk", "FuseMounts")])
def test_missing_abilities_are_refused_by_name(tmp_path, family, ability):
    with pytest.raises(NemesisUnsupported, match=f"in-memory host.*{ability}"):
        build_package(family, seed=1).setup(_run(tmp_path))


def test_no_nemesis_names_a_backend():
    """Nemeses decide by abilities: no string 'local'/'docker' in their code, no import of a host class."""
    offenders = []
    for path in sorted(Path(nemesis.__file__).parent.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and id(node) not in docstrings and node.value in ("local", "docker"):
                offenders.append(f"{path.name}:{node.lineno}: {node.value!r}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    ("harness.hosts.local", "harness.hosts.docker")):
                offenders.append(f"{path.name}:{node.lineno}: imports {node.module}")
    assert offenders == []


class RoundTripHost(AbilityHost):
    """Probes as TCP does them: the SYN crosses src -> dst and the reset dst -> src, so a cut either way
    makes the probe time out."""

    def probe(self, src: str, dst: str) -> str:
        return "timeout" if {(src, dst), (dst, src)} & self.blocked else "refused"


def test_a_partial_heal_does_not_probe_an_edge_whose_reverse_stays_cut(tmp_path):
    """Healing b3->b2 of a two-way cut between b2 and b3: a probe of b3->b2 would time out on the reset
    coming back over the still-cut b2->b3, so the edge is named as unprobed instead of failing the heal;
    healing the rest is then proven by its probes."""
    from nemesis.net import NetNemesis

    run = _run(tmp_path, RoundTripHost)
    net = NetNemesis()
    cut = net.invoke(run, {"f": "start-partition", "value": {"edges": [["b3", "b2"], ["b2", "b3"], ["b1", "b3"]]}})
    assert cut["value"]["effective"] is True
    partial = net.invoke(run, {"f": "stop-partition", "value": {"edges": [["b3", "b2"]]}})["value"]
    assert partial["effective"] is True and partial["probes_after"] == {}
    assert partial["unprobed"]["edges"] == ["b3->b2"] and run.host.blocked == {("b2", "b3"), ("b1", "b3")}
    rest = net.invoke(run, {"f": "stop-partition", "value": {"edges": [["b2", "b3"], ["b1", "b3"]]}})["value"]
    assert rest["effective"] is True and "unprobed" not in rest and run.host.blocked == set()
    assert set(rest["probes_after"].values()) == {"refused"}


def test_a_heal_whose_rule_stayed_is_not_effective(tmp_path):
    """The other side of the same evidence: an edge whose rule the host failed to remove still times out."""
    from nemesis.net import NetNemesis

    class StickyHost(RoundTripHost):
        def unblock(self, src: str, dst: str) -> str | None:
            return None  # claims success, removes nothing

    run = _run(tmp_path, StickyHost)
    net = NetNemesis()
    net.invoke(run, {"f": "start-partition", "value": {"edges": [["b1", "b3"]]}})
    assert net.invoke(run, {"f": "stop-partition", "value": {}})["value"]["effective"] is False
