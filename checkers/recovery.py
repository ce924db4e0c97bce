"""Recovery: once every fault is healed, the system must serve clients again (Jepsen's "heal, then demand
progress", which the simulator's liveness check demands of the protocol core).

A run's final phase heals every fault (one nemesis ``heal`` op), lets the cluster recover, then reads every
partition with fresh consumers (ops marked ``"final": true``), retrying until one read completes ``ok`` or
the final-read timeout runs out. From the history alone:

- some final read completed ``ok``: **valid**;
- final reads were attempted, none completed, and every fault had been healed (the ``heal`` completed
  ``ok``, or the run had no nemesis): **invalid**, with the errors the reads met. The system answered no
  complete read for as long as the harness kept asking (``final_read_timeout_s``), although nothing was
  keeping it from serving: a broker wedged after a fault, a store that never came back;
- the heal did not complete ``ok`` (a fault may still have been in place): **unknown**;
- no final read in the history (a history from elsewhere, or a run stopped before its final phase): not
  checked.

What it cannot see: whether a read failed because of the client library rather than the system (the
errors are listed so a reader can tell), and availability during the run, which no guarantee promises.
"""

from __future__ import annotations

from typing import Any

from harness.checked_spec import CheckedSpec

NAME = "recovery"


class RecoveryChecker:
    """The recovery property over a history (module docstring)."""

    name = NAME

    def check(self, spec: CheckedSpec, history: list[dict], traces: list[dict]) -> dict[str, Any]:
        """Judge the final phase's reads against the final heal."""
        finals = [op for op in history if op.get("final") is True and op.get("type") != "invoke"]
        if not finals:
            return {"valid": True, "checked": False, "reason": "no final read in the history"}
        completed = [op for op in finals if op.get("type") == "ok"]
        if completed:
            return {"valid": True, "final_reads": len(finals), "first_ok": completed[0].get("index")}
        heals = [op for op in history if op.get("process") == "nemesis" and op.get("f") == "heal"
                 and op.get("type") != "invoke"]
        errors = sorted({str(op.get("error"))[:300] for op in finals if op.get("error")})
        details = {"final_reads": len(finals), "ops": [op.get("index") for op in finals][:20],
                   "errors": errors[:5]}
        if heals and heals[-1].get("type") != "ok":
            return {"valid": "unknown", **details,
                    "reason": "the final heal did not complete ok: a fault may still have been in place"}
        healed = "every fault was healed" if heals else "no fault was injected"
        return {"valid": False, **details,
                "reason": f"{healed}, yet none of {len(finals)} final reads completed: the system did not "
                          "recover" + (f" (last error: {errors[-1]})" if errors else "")}
