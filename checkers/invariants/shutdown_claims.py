"""I13's first half, from the brokers' own events: a registration claims a clean shutdown only after one.

K4: a broker writes its clean-shutdown marker (the broker epoch it stopped with) only at the very end of a
controlled shutdown, and deletes it once read at the next start, so the ``previous_broker_epoch`` it
registers with is either -1 (its last stop was not clean) or the epoch of the clean stop just before. The
controller trusts that claim: under KIP-966 a broker that says it stopped cleanly keeps its place in the
ELR although a crash may have cost it unflushed records. So the claim is checked against what the broker
traced: its last stop before this incarnation must be a ``shutdown`` event with ``clean: true`` and that
epoch. A ``kill -9`` leaves no such event, and a crash of the simulated broker traces ``clean: false``.

Each incarnation is judged once (a registration retried by the same incarnation repeats its claim), and a
clean stop is used up by the incarnation after it, so one clean stop cannot vouch for a later crash.
"""

from __future__ import annotations

from typing import Any


def _broker_of(ev: dict) -> Any:
    b = ev.get("broker")
    if b is None and str(ev.get("node", "")).lstrip("b").isdigit():
        b = int(str(ev["node"]).lstrip("b"))
    return b


class CleanShutdownClaims:
    """Follows each broker's stops and registrations (broker-side lifecycle events, no partition)."""

    def __init__(self) -> None:
        self.clean_stop: dict[Any, int] = {}     # broker -> epoch of its last clean stop, until used
        self.judged: set[tuple[Any, str]] = set()  # (broker, incarnation id) already checked

    def feed(self, ev: dict, res: Any) -> None:
        """Take one broker-side event; ``res.ok``/``res.bad`` record I13 for each new incarnation."""
        kind = ev.get("kind")
        if kind not in ("shutdown", "registered") or ev.get("partition") is not None:
            return
        b = _broker_of(ev)
        if b is None:
            return
        if kind == "shutdown":
            epoch = ev.get("broker_epoch")
            if ev.get("clean") is True and isinstance(epoch, int) and epoch >= 0:
                self.clean_stop[b] = epoch
            elif ev.get("clean") is False:
                self.clean_stop.pop(b, None)
            return
        incarnation = ev.get("incarnation_id")
        if incarnation is None or (b, incarnation) in self.judged:
            return
        self.judged.add((b, incarnation))
        claimed = ev.get("previous_broker_epoch")
        stopped_clean_at = self.clean_stop.pop(b, None)
        if not isinstance(claimed, int) or claimed < 0:
            res.ok("I13")  # no claim: the controller treats it as an unclean restart
        elif claimed == stopped_clean_at:
            res.ok("I13")
        else:
            last = ("no clean stop traced since its previous registration" if stopped_clean_at is None
                    else f"its last clean stop was at broker epoch {stopped_clean_at}")
            res.bad("I13", f"broker {b} registered claiming a clean shutdown at broker epoch {claimed} (K4), "
                           f"but {last}", [ev])
