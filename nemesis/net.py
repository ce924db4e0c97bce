"""Network partitions with iptables, tagged per run, healed rule by rule, proven by TCP probes.

``start-partition`` ``{"topology": ...}`` computes the directed edges to drop (``nemesis.topology``)
and installs one iptables rule per edge, each carrying ``-m comment --comment kraftcheck-<run id>``:

- **docker**: in the receiving container's own network namespace (``docker exec``):
  ``iptables -I INPUT -s <sender address> -j DROP``; the clients are the host, which reaches the
  containers from the network's gateway address.
- **local** (root only): nodes share the host's ``lo``, and loopback connections leave from 127.0.0.1,
  so senders are told apart by the group id each node runs with (``LocalHost.node_gid``):
  ``iptables -I OUTPUT -o lo -m owner --gid-owner <sender gid> -d <receiver address> -j DROP``. The
  clients are the harness process (its own gid). Without root the nemesis refuses at setup.

Evidence: for a sample of dropped edges a TCP connect is made *as the sender* (from its container, or
with its gid) to the receiver's address, on a port nobody listens on: a reachable host answers at
once with a reset ("refused"), a cut one stays silent until the timeout. ``effective`` is true when
every sampled edge timed out while the rules held; ``stop-partition`` removes exactly the rules it
added (``iptables -D`` with the same arguments) and probes again, expecting "refused".
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from typing import Any

from nemesis.base import NemesisUnsupported
from nemesis.targets import broker_node
from nemesis.topology import edges_for, grudge

PROBE_PORT = 1  # tcpmux: nothing listens there, so a reachable address answers with a reset
PROBE_TIMEOUT_S = 1.5
PROBE_SAMPLE = 4

_PROBE_CODE = (
    "import socket,sys\n"
    "s=socket.socket();s.settimeout(float(sys.argv[3]))\n"
    "try:\n s.connect((sys.argv[1],int(sys.argv[2])));print('connected')\n"
    "except ConnectionRefusedError:print('refused')\n"
    "except (TimeoutError,socket.timeout):print('timeout')\n"
    "except OSError as e:print('error',e.errno)\n"
)


def comment_tag(run_id: str) -> str:
    """The iptables comment that marks every rule of a run."""
    return f"kraftcheck-{run_id}"


def classify(output: str) -> str:
    """``connected`` / ``refused`` / ``timeout`` / ``error ...`` from a probe's output."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no-output"


class NetNemesis:
    """start-partition / stop-partition (see the module docstring)."""

    FS = {"start-partition", "stop-partition"}

    def __init__(self, probe_sample: int = PROBE_SAMPLE):
        self.probe_sample = probe_sample
        self.rules: list[tuple[str, list[str]]] = []  # (node whose namespace holds it, iptables args)
        self.edges: list[tuple[str, str]] = []
        self.backend = None

    def fs(self) -> set[str]:
        """The op names handled here."""
        return set(self.FS)

    def setup(self, run: Any) -> None:
        """Refuse when rules cannot be installed on this backend."""
        self.backend = run.host.name
        if self.backend == "local":
            if os.geteuid() != 0:
                raise NemesisUnsupported(
                    "partitions on the local backend need root (iptables owner rules on lo); "
                    "run as root or use --backend docker"
                )
            if shutil.which("iptables") is None:
                raise NemesisUnsupported("iptables is not installed (apt-get install iptables)")
            if not hasattr(run.host, "node_gid"):
                raise NemesisUnsupported("this local host cannot give nodes their own group id")
        elif self.backend != "docker":
            raise NemesisUnsupported(f"no partition support for backend {self.backend!r}")

    # -- rule handling -------------------------------------------------------------------------
    def _tag(self, run: Any) -> list[str]:
        return ["-m", "comment", "--comment", comment_tag(run.host.run_id)]

    def _addr(self, run: Any, node: str) -> str:
        """Address of a node, or of the clients (the host: 127.0.0.1 locally, the gateway on docker)."""
        if node == "client":
            return "127.0.0.1" if self.backend == "local" else run.host.gateway()
        return run.host.ip(node)

    def _rule_for(self, run: Any, src: str, dst: str) -> tuple[str, list[str]]:
        """(where, iptables args without -I/-D) dropping ``src`` -> ``dst``; where "" = the host."""
        if self.backend == "local":
            # Loopback packets to a client go to 127.0.0.1 (the clients' source address).
            gid = os.getgid() if src == "client" else run.host.node_gid(src)
            return "", ["OUTPUT", "-o", "lo", "-m", "owner", "--gid-owner", str(gid), "-d", self._addr(run, dst),
                        *self._tag(run), "-j", "DROP"]
        if dst == "client":
            # The clients live on the host, not in a container: drop in the sender's OUTPUT instead.
            return src, ["OUTPUT", "-d", self._addr(run, dst), *self._tag(run), "-j", "DROP"]
        return dst, ["INPUT", "-s", self._addr(run, src), *self._tag(run), "-j", "DROP"]

    def _iptables(self, run: Any, where: str, args: list[str]) -> tuple[int, str]:
        if where == "":
            done = subprocess.run(["iptables", "-w", *args], capture_output=True, text=True, check=False)
            return done.returncode, done.stdout + done.stderr
        return run.host.exec(where, ["iptables", "-w", *args], timeout_s=20.0)

    def probe(self, run: Any, src: str, dst: str) -> str:
        """Try a TCP connect from ``src`` to ``dst``; ``refused``/``connected`` = reachable."""
        ip = self._addr(run, dst)
        argv = ["python3", "-c", _PROBE_CODE, ip, str(PROBE_PORT), str(PROBE_TIMEOUT_S)]
        if src == "client":
            done = subprocess.run(
                [sys.executable, *argv[1:]], capture_output=True, text=True, timeout=30, check=False
            )
            return classify(done.stdout)
        _, out = run.host.exec(src, argv, timeout_s=30.0)
        return classify(out)

    # -- ops -----------------------------------------------------------------------------------
    def invoke(self, run: Any, op: dict) -> dict:
        """Install or remove a partition and return evidence."""
        value = dict(op.get("value") or {})
        if op["f"] == "stop-partition":
            return {**op, "type": "ok", "value": {**value, **self._heal(run)}}
        if self.rules:  # one partition at a time: replace the previous one
            self._heal(run)
        topology = value.get("topology", "isolate-one")
        rng = random.Random(value.get("pick", 0))
        cluster = run.cluster
        brokers = list(cluster.brokers())
        try:
            controller = cluster.active_controller()
        except Exception:
            controller = None
        leader = None
        if topology == "isolate-leader":
            try:
                leaders = cluster.leaders(value.get("topic") or run.spec.get("topic") or "queue")
                if leaders:
                    partition = sorted(leaders)[rng.randrange(len(leaders))]
                    if leaders[partition] is not None and leaders[partition] >= 0:
                        leader = broker_node(cluster, leaders[partition])
            except Exception:
                leader = None
        if value.get("edges"):  # explicit [[src, dst], ...] (scripted scenarios name the exact cut)
            edges = sorted({(str(s), str(d)) for s, d in value["edges"]})
        else:
            edges = sorted(edges_for(topology, brokers, controller, rng, special=leader))
        errors = []
        for src, dst in edges:
            where, args = self._rule_for(run, src, dst)
            code, out = self._iptables(run, where, ["-I", *args])
            if code == 0:
                self.rules.append((where, args))
                self.edges.append((src, dst))
            else:
                errors.append(f"{src}->{dst}: {out.strip()[:200]}")
        sample = rng.sample(self.edges, min(self.probe_sample, len(self.edges)))
        probes = {f"{s}->{d}": self.probe(run, s, d) for s, d in sample}
        effective = bool(edges) and not errors and all(p == "timeout" for p in probes.values())
        evidence = {
            "topology": topology,
            "grudge": grudge(set(edges)),
            "rules": len(self.rules),
            "probes_during": probes,
            "effective": effective,
        }
        if errors:
            evidence["errors"] = errors
        return {**op, "type": "ok", "value": {**value, **evidence}}

    def _heal(self, run: Any) -> dict:
        removed, errors = 0, []
        for where, args in reversed(self.rules):
            code, out = self._iptables(run, where, ["-D", *args])
            if code == 0:
                removed += 1
            elif "does a matching rule exist" not in out and "No chain/target/match" not in out:
                errors.append(out.strip()[:200])
        sample = random.Random(len(self.edges)).sample(self.edges, min(self.probe_sample, len(self.edges)))
        probes = {f"{s}->{d}": self.probe(run, s, d) for s, d in sample}
        self.rules.clear()
        self.edges.clear()
        evidence = {
            "removed": removed,
            "probes_after": probes,
            "effective": not errors and all(p in ("refused", "connected") for p in probes.values()),
        }
        if errors:
            evidence["errors"] = errors
        return evidence

    def heal_all(self, run: Any) -> dict:
        """Remove every rule this nemesis added (and, as a safety net, any rule with this run's tag)."""
        evidence = self._heal(run)
        evidence["leftovers_removed"] = remove_tagged_rules(run)
        return evidence

    def teardown(self, run: Any) -> None:
        """Remove every rule; never raises."""
        try:
            self.heal_all(run)
        except Exception:
            pass


def remove_tagged_rules(run: Any) -> int:
    """Delete every rule carrying this run's comment tag (host tables, or every container's)."""
    tag = comment_tag(run.host.run_id)
    if run.host.name == "local":
        return delete_rules_with_tag(tag, lambda args: subprocess.run(
            ["iptables", "-w", *args], capture_output=True, text=True, check=False))
    total = 0
    for node in getattr(run.host, "nodes", lambda: [])():
        if not run.host.is_container_up(node):
            continue

        def runner(args, node=node):
            code, out = run.host.exec(node, ["iptables", "-w", *args], timeout_s=20.0)
            return subprocess.CompletedProcess(args, code, out, "")

        total += delete_rules_with_tag(tag, runner)
    return total


def delete_rules_with_tag(tag: str, runner) -> int:
    """Delete the rules in ``iptables -S`` (filter table) whose comment is ``tag``; return how many."""
    listing = runner(["-S"])
    removed = 0
    for line in (listing.stdout or "").splitlines():
        if not line.startswith("-A ") or f"--comment {tag}" not in line and f'--comment "{tag}"' not in line:
            continue
        args = ["-D", *line.split()[1:]]
        args = [a.strip('"') for a in args]
        if runner(args).returncode == 0:
            removed += 1
    return removed
