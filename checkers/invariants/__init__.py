"""Protocol invariants I1-I16 (docs/protocol-rules.md section 4) over ``trace.jsonl`` and the history.

Theory of operation. The trace is a time-ordered stream of state changes reported by the nodes
(docs/history-schema.md): the controller's committed partition states (``metadata_applied`` with ``source:
"controller"``), broker registrations and fencing, and each replica's local view (``metadata_applied``,
``role``, ``leader_epoch_start``, ``hwm``, ``leo``, ``truncate``, ``isr_proposed``/``isr_updated``/
``isr_rollback``). Trace times share the history's clock (monotonic, rebased to the run start), so a sweep in
time order reconstructs, at every event, the controller's state, each replica's last reported LEO/HWM/
role and the True HWM (TH = the highest HWM any leader ever reported). Each invariant is a predicate
evaluated at the events that can change it; a violation names the trace events (with their trace line
numbers) and history ops that show it. ``TraceSweep`` is the same sweep fed one event at a time, for
callers that check while the trace is being produced (the deterministic simulator checks after every step).

The trace is not a consistent global snapshot: a predicate is evaluated only at moments where the
events it reads are causally ordered (e.g. I2 on a member's own ``leo`` report and on controller ISR
changes, I9 on the controller's own records). Replica log contents (I4, I16) come from ``log_summary``
events and broker metadata (I5) from replica partition states and ``metadata_offset`` events
(``logs.py``); data not in the trace (fetcher internals, most of I10) is never judged ``valid``, and
any invariant when the events it needs are absent (each lists the event kinds and
attributes it needs in ``NEEDS``). The checker is defensive: unknown kinds and missing attributes are
skipped, never an exception.

Profiles: under a configuration where committed-data loss is a known issue or allowed
(``checkers/profiles.py``: v3.5 with lossy faults = Last Replica Standing, unclean election, acks < all),
violations of the loss invariants I1, I2, I6, I7, I13, I15 are reported with that status and do not make
the run invalid.
"""

from checkers.invariants.checker import NEEDS, InvariantChecker, TraceSweep, check_invariants

__all__ = ["InvariantChecker", "TraceSweep", "check_invariants", "NEEDS"]
