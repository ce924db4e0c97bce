"""The ``NetworkRules`` ability on top of iptables, shared by the local and the docker host.

A rule drops what one node sends to another; where it lives and how it recognises the sender is the
backend's business (``_rules_for``): in the receiving container's INPUT chain on docker, in the host's
OUTPUT chain on ``lo`` with the sender's group id locally. What both share is here: every rule carries
``-m comment --comment kraftcheck-<run id>`` (so ``kraftcheck clean`` and ``unblock_all`` find it), a
rule is removed with ``iptables -D`` and the very arguments that added it, and reachability is tested
with a TCP connect to a port nobody listens on: a reachable address answers at once with a reset
("refused"), a cut one stays silent until the timeout.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

from harness.interfaces import CLIENTS

PROBE_PORT = 1  # tcpmux: nothing listens there, so a reachable address answers with a reset
PROBE_TIMEOUT_S = 1.5

PROBE_CODE = (
    "import socket,sys\n"
    "s=socket.socket();s.settimeout(float(sys.argv[3]))\n"
    "try:\n s.connect((sys.argv[1],int(sys.argv[2])));print('connected')\n"
    "except ConnectionRefusedError:print('refused')\n"
    "except (TimeoutError,socket.timeout):print('timeout')\n"
    "except OSError as e:print('error',e.errno)\n"
)

# iptables -D of a rule that is already gone: nothing left to undo.
_ALREADY_GONE = ("does a matching rule exist", "No chain/target/match")

Runner = Callable[[list[str]], tuple[int, str]]


def comment_tag(run_id: str) -> str:
    """The iptables comment that marks every rule of a run."""
    return f"kraftcheck-{run_id}"


def classify(output: str) -> str:
    """``connected`` / ``refused`` / ``timeout`` / ``error ...`` from a probe's output."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no-output"


def host_iptables(args: list[str]) -> tuple[int, str]:
    """``iptables -w ARGS`` on this machine; (exit code, output)."""
    done = subprocess.run(["iptables", "-w", *args], capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


def delete_rules_with_tag(tag: str, runner: Runner) -> int:
    """Delete the rules in ``iptables -S`` (filter table) whose comment is ``tag``; return how many."""
    _, listing = runner(["-S"])
    removed = 0
    for line in listing.splitlines():
        if not line.startswith("-A ") or f"--comment {tag}" not in line and f'--comment "{tag}"' not in line:
            continue
        args = [a.strip('"') for a in ["-D", *line.split()[1:]]]
        if runner(args)[0] == 0:
            removed += 1
    return removed


class IptablesRulesMixin:
    """``block`` / ``unblock`` / ``unblock_all`` / ``probe`` for a host that supplies the backend hooks:

    - ``_rules_for(src, dst)`` -> ``[(where, args), ...]``: the rules that cut the edge, each with the node
      whose namespace holds it ("" for this machine) and its iptables arguments without ``-I``/``-D`` (the
      tag included, see ``_tag``);
    - ``_address(node)``: the address others reach ``node`` at (``CLIENTS`` included);
    - ``_rule_runners()``: one ``args -> (code, output)`` runner per place rules of this run may be;
    - ``exec`` and ``run_id`` (the host's own).
    """

    run_id: str
    _rules_for: Callable[[str, str], list[tuple[str, list[str]]]]
    _address: Callable[[str], str]
    _rule_runners: Callable[[], list[Runner]]
    exec: Callable[..., tuple[int, str]]

    def _installed(self) -> dict[tuple[str, str], list[tuple[str, list[str]]]]:
        return self.__dict__.setdefault("_iptables_rules", {})

    def _tag(self) -> list[str]:
        return ["-m", "comment", "--comment", comment_tag(self.run_id)]

    def _iptables(self, where: str, args: list[str]) -> tuple[int, str]:
        if where == "":
            return host_iptables(args)
        return self.exec(where, ["iptables", "-w", *args], timeout_s=20.0)

    def block(self, src: str, dst: str) -> str | None:
        """Drop what ``src`` sends to ``dst``; None when the rule holds, else the error text."""
        if (src, dst) in self._installed():
            return None
        placed: list[tuple[str, list[str]]] = []
        for where, args in self._rules_for(src, dst):
            code, out = self._iptables(where, ["-I", *args])
            if code != 0:
                for undo_where, undo_args in placed:  # all of the edge's rules or none
                    self._iptables(undo_where, ["-D", *undo_args])
                return out.strip()[:200] or f"iptables exit {code}"
            placed.append((where, args))
        self._installed()[(src, dst)] = placed
        return None

    def unblock(self, src: str, dst: str) -> str | None:
        """Remove the rule ``block(src, dst)`` added; None when it is gone, else the error text."""
        rules = self._installed().pop((src, dst), None)
        errors = []
        for where, args in rules or []:
            code, out = self._iptables(where, ["-D", *args])
            if code != 0 and not any(s in out for s in _ALREADY_GONE):
                errors.append(out.strip()[:200] or f"iptables exit {code}")
        return "; ".join(errors) or None

    def rules_in_place(self) -> int:
        """How many rules the edges cut by ``block`` hold now."""
        return sum(len(rules) for rules in self._installed().values())

    def unblock_all(self) -> int:
        """Delete every rule carrying this run's tag, wherever it is; return how many."""
        self._installed().clear()
        tag = comment_tag(self.run_id)
        return sum(delete_rules_with_tag(tag, runner) for runner in self._rule_runners())

    def probe(self, src: str, dst: str) -> str:
        """TCP connect from ``src`` to ``dst`` (see the module docstring); ``refused``/``connected`` = reachable."""
        args = [self._address(dst), str(PROBE_PORT), str(PROBE_TIMEOUT_S)]
        if src == CLIENTS:
            done = subprocess.run([sys.executable, "-c", PROBE_CODE, *args], capture_output=True, text=True,
                                  timeout=30, check=False)
            return classify(done.stdout)
        _, out = self.exec(src, ["python3", "-c", PROBE_CODE, *args], timeout_s=30.0)
        return classify(out)
