"""Protocol invariants I1-I26 (docs/protocol-rules.md section 4) over ``trace.jsonl`` and the history.

Theory of operation. The trace is a time-ordered stream of state changes reported by the nodes
(docs/history-schema.md): the controller's committed partition states (``metadata_applied`` with ``source:
"controller"``), broker registrations and fencing, and each replica's local view (``metadata_applied``,
``role``, ``leader_epoch_start``, ``hwm``, ``leo``, ``truncate``, ``isr_proposed``/``isr_updated``/
``isr_rollback``). Trace times share the history's clock (monotonic, rebased to the run start), so a sweep in
time order reconstructs, at every event, the controller's state, each replica's last reported LEO/HWM/
role and the True HWM (TH = the highest HWM any leader ever reported).

The sweep (``checker.TraceSweep``) keeps the two apart, in the manner of the invariants of Kafka's Raft
simulation tests: ``state.TraceState`` is that reconstruction, moved by each event and judging nothing;
``rules.RULES`` holds one small rule per invariant, keyed by the event kinds it reads (``events.classify``
names them, telling the controller's reports from a replica's). Each event is judged by the rules that
read its kind on the state it finds (rules that compare it with what was, e.g. an epoch going back), applied
to the state, and judged by the rules that read the state it leaves (e.g. every ISR member holds the True
HWM). The invariants read from the history (I6, I7, I14, I15) are judged once, at the end
(``history_checks``); ``logs`` holds the log and metadata comparisons of I4, I5 and I16. A violation names
the trace events (with their trace line numbers) and history ops that show it. ``TraceSweep`` takes one
event at a time, for callers that check while the trace is being produced (the deterministic simulator
checks after every step); ``check_invariants`` feeds a whole trace.

The trace is not a consistent global snapshot: a rule is evaluated only at moments where the events it
reads are causally ordered (e.g. I2 on a member's own ``leo`` report and on controller ISR changes, I9 on
the controller's own records). Replica log contents (I4, I16) come from ``log_summary`` events and broker
metadata (I5) from replica partition states and ``metadata_offset`` events; data not in the trace (fetcher
internals, most of I10) is never judged ``valid``, and any invariant when the events it needs are absent
(each lists the event kinds and attributes it needs in ``NEEDS``). The checker is defensive: unknown kinds
and missing attributes are skipped, never an exception.

With a controller quorum every voter traces every committed record; the sweep names a later voter's copy
``CONTROLLER_COPY``, which only I20 (the copies agree) and I21 read, so I1-I16 see each record once.
``quorum`` holds I17-I22 (election safety, epochs and HWMs that never go back, committed prefix agreement,
only committed metadata applied, one vote per voter and epoch) and the quorum's part of the state.

The coordinators report their decisions too, so the group and transaction rules are judged from the brokers'
side as well as from the clients' history: ``consumer_groups`` holds I23 (an accepted offset commit carries
the group's current generation and a member of it) and I24 (no topic-partition handed to two members of one
generation), ``transactions`` I25 (a completed transaction has its outcome's marker on every partition of
its set) and I26 (a partition leader never appends an older producer epoch after a newer one), each with its
part of the state. A run whose spec uses no consumer groups (``sub_via``) or no transactions (``txn``) and
whose trace gives these rules nothing to judge has them as not applicable.

Profiles: under a configuration where committed-data loss is a known issue or allowed
(``checkers/queue/profiles.py``: v3.5 with lossy faults = Last Replica Standing, unclean election, acks <
all), violations of the loss invariants I1, I2, I4, I6, I7, I13, I15, and of the coordinator invariants
I23-I25 (whose state is a log that may lose committed records too), are reported with that status and do
not make the run invalid.
"""

from checkers.invariants.checker import LOSS_INVARIANTS, NEEDS, InvariantChecker, TraceSweep, check_invariants

__all__ = ["InvariantChecker", "LOSS_INVARIANTS", "NEEDS", "TraceSweep", "check_invariants"]
