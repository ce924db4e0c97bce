"""Sequential models for the linearizability engine: ``step(state, input, output) -> (ok, new_state)``.

An op's ``output`` is ``UNKNOWN`` for indeterminate (``info``) ops: any output is then legal, but the op's
effect on the state still applies when it is linearized. States are hashable and compared by value.
Optional abilities the search uses when a model has them: ``observes(input, output)`` (the op never
changes the state: taken as soon as it is legal), ``wanted_state(input, output)`` (``(state,)`` when
the op is legal in that one state only: skipped by a comparison elsewhere) and ``prepare(ops)`` (a
sound rewrite of a partition before the search).
"""

from __future__ import annotations

import bisect
from typing import Any


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self) -> str:
        return "UNKNOWN"  # unpickled as the module's singleton: models compare with ``is UNKNOWN``


UNKNOWN = _Unknown()


class Register:
    """A read/write register. Inputs ``("read", None)`` / ``("write", v)``; read outputs the value."""

    name = "register"

    def init(self) -> Any:
        """The initial value is None (Jepsen's ``nil``)."""
        return None

    def step(self, state, inp, out):
        """Apply one op."""
        f, arg = inp
        if f == "read":
            return (out is UNKNOWN or out == state), state
        if f == "write":
            return True, arg
        return False, state

    def observes(self, inp, out) -> bool:
        """Whether the op never changes the state, whatever the state (the search may then take it as
        soon as it is legal: see ``wgl.check_operations``)."""
        return inp[0] == "read"

    def wanted_state(self, inp, out):
        """``(state,)`` when the op is legal in that one state only (a read of a known value), else None:
        the search then skips it by a comparison in any other state instead of a call of ``step``."""
        return (out,) if inp[0] == "read" and out is not UNKNOWN else None


class CasRegister(Register):
    """A register with compare-and-set: ``("cas", (expected, new))`` outputs True (swapped) or False."""

    name = "cas-register"

    def step(self, state, inp, out):
        """Apply one op; a failed cas is legal only when the compare really fails."""
        if inp[0] == "cas":
            expected, new = inp[1]
            if state == expected:
                return (out is UNKNOWN or out is True), new
            return (out is UNKNOWN or out is False), state
        return Register.step(self, state, inp, out)

    def observes(self, inp, out) -> bool:
        """Reads, and a cas known to have failed (legal only when the compare fails, so nothing changes)."""
        return inp[0] == "read" or (inp[0] == "cas" and out is False)


class KV:
    """Porcupine's kv object for one key: ``get`` (output the string), ``put`` v, ``append`` v."""

    name = "kv"

    def init(self) -> Any:
        """An absent key reads as the empty string."""
        return ""

    def observes(self, inp, out) -> bool:
        """Gets never change the value."""
        return inp[0] == "get"

    def wanted_state(self, inp, out):
        """A get of a known string is legal in that state only (see ``Register.wanted_state``)."""
        return (out,) if inp[0] == "get" and out is not UNKNOWN else None

    def step(self, state, inp, out):
        """Apply one op."""
        f, arg = inp
        if f == "get":
            return (out is UNKNOWN or out == state), state
        if f == "put":
            return True, arg
        if f == "append":
            return True, state + arg
        return False, state


class LogState:
    """An append-only log state: the first ``n`` entries of a list shared with the states it grew from.

    Appending at the end of the shared list costs O(1); a state that diverges from a longer sibling copies
    its prefix (copy on write), so entries below ``n`` never change. The hash is a rolling hash kept with
    the state, so memo lookups do not rehash the log; equality compares the prefixes only on equal hashes.
    """

    __slots__ = ("lst", "n", "h")

    def __init__(self, lst: list, n: int, h: int):
        self.lst = lst
        self.n = n
        self.h = h

    @property
    def vals(self) -> list:
        """The log's values (a copy of the prefix)."""
        return self.lst[:self.n]

    def __hash__(self) -> int:
        return self.h

    def __eq__(self, other) -> bool:
        if not isinstance(other, LogState) or self.h != other.h or self.n != other.n:
            return False
        return self.lst is other.lst or self.lst[:self.n] == other.lst[:other.n]

    def __len__(self) -> int:
        return self.n

    def get(self, o: int):
        """The value at offset o (caller checks o < n)."""
        return self.lst[o]

    def append(self, v) -> LogState:
        """The log with ``v`` appended."""
        lst, n = self.lst, self.n
        if len(lst) == n:
            lst.append(v)
        elif lst[n] != v:
            lst = lst[:n] + [v]
        return LogState(lst, n + 1, hash((self.h, v)))


def _shown_offsets(ops: list) -> tuple[dict[Any, int], set[int]]:
    """Of a partition's log operations: the offset each value was first read at, and every offset the
    history shows (records read, acknowledged sends)."""
    seen_at: dict[Any, int] = {}
    shown: set[int] = set()
    for op in ops:
        f, arg = op.inp
        if f in ("poll", "final-poll"):
            for o, v in (arg if f == "poll" else arg[0]):
                if isinstance(o, int):
                    shown.add(o)
                    seen_at.setdefault(v, o)
        elif f == "send" and op.out is not UNKNOWN and op.out is not None:
            shown.add(op.out)
    return seen_at, shown


class KafkaLog:
    """One Kafka partition: ``("send", v)`` outputs the offset it was appended at (the log length then);
    ``("poll", ((o, v), ...))`` is legal when every returned record is in the log at that offset (a
    consumer reads a range of the committed prefix). ``("final-poll", (((o, v), ...), end))`` is a read of
    the *whole* log (a final read: end offset taken, then everything read from the beginning up to it): legal
    when the log has exactly ``end`` records and the read returned each of them, offsets 0 .. end-1 in
    order. Offsets are dense and start at 0: the log is non-transactional and kraftcheck runs never delete
    (no retention), so the log start offset is 0."""

    name = "kafka-log"

    def init(self) -> Any:
        """The empty log."""
        return LogState([], 0, 0)

    def observes(self, inp, out) -> bool:
        """Polls and final reads only look at the log."""
        return inp[0] in ("poll", "final-poll")

    def prepare(self, ops: list) -> list:
        """Canonicalise indeterminate sends before the search (sound for this model, and it keeps the
        search from trying every crashed send at every point):

        * a crashed send whose value some poll returned at offset o must have been appended at o, so its
          output becomes o;
        * a crashed send nobody read, when the observed offsets (acknowledged sends and polled records)
          have no hole below their maximum, can only have been appended after every observation (anywhere
          earlier it would shift an observed offset), which is the same as never: it is dropped.
        """
        seen_at, observed = _shown_offsets(ops)
        no_holes = not observed or len(observed) == max(observed) + 1
        out = []
        for op in ops:
            if op.inp[0] == "send" and op.out is UNKNOWN:
                v = op.inp[1]
                if v in seen_at:
                    op = type(op)(op.call, op.ret, op.inp, seen_at[v], op.ref)
                elif no_holes:
                    continue
            out.append(op)
        return out

    def step(self, state, inp, out):
        """Apply one op."""
        f, arg = inp
        if f == "send":
            if out is not UNKNOWN and out is not None and out != state.n:
                return False, state
            return True, state.append(arg)
        if f == "poll":
            lst, n = state.lst, state.n
            for o, v in arg:
                if o is None or o >= n or lst[o] != v:
                    return False, state
            return True, state
        if f == "final-poll":
            # A read of the whole log at the instant its end offset was taken: an empty result with end 0
            # after acknowledged sends is a lost prefix, not an unconstrained read (LRS under v3.5).
            recs, end = arg
            lst, n = state.lst, state.n
            if n != end or len(recs) != n:
                return False, state
            for i, (o, v) in enumerate(recs):
                if o != i or lst[i] != v:
                    return False, state
            return True, state
        return False, state


class KafkaLogWithGaps(KafkaLog):
    """A Kafka partition whose offsets may skip numbers, as in a log written by transactional producers
    (each commit or abort marker takes an offset): a send gets an offset above every offset in the log
    and at or above the end offset any final read saw; a poll returns records at their offsets; a final
    read returns every record below its end offset, in order.

    Checked as ``KafkaLog`` on renumbered offsets: every offset the history shows (acknowledged sends,
    crashed sends placed by a poll that returned them, records read) is replaced by its rank among them,
    and a final read's end offset by the number of shown offsets below it. Every record in a log comes
    from a send whose offset the history shows, so a linearization with gaps is one without them on the
    ranks and back; the search keeps the dense model's one-next-offset constraint (fast)."""

    name = "kafka-log-gaps"

    def prepare(self, ops: list) -> list:
        """Place crashed sends that a poll returned, drop the ones nobody read (with gaps allowed no
        observation needs them: they can be taken to have happened after everything), then renumber."""
        seen_at, shown = _shown_offsets(ops)
        order = sorted(shown)
        rank = {o: i for i, o in enumerate(order)}
        out = []
        for op in ops:
            f, arg = op.inp
            result = op.out
            if f == "send":
                if result is UNKNOWN or result is None:
                    if arg not in seen_at:
                        continue
                    result = seen_at[arg]
                result = rank[result]
            elif f == "poll":
                arg = _renumbered(arg, rank)
            elif f == "final-poll":
                recs, end = arg
                arg = (_renumbered(recs, rank), bisect.bisect_left(order, end))
            out.append(type(op)(op.call, op.ret, (f, arg), result, op.ref))
        return out


def _renumbered(recs, rank: dict[int, int]) -> tuple:
    """Records ``(offset, value)`` with integer offsets replaced by their rank (all of them are in
    ``rank``: ``_shown_offsets`` collected them); anything else is left for the step to refuse."""
    return tuple((rank[o] if isinstance(o, int) else o, v) for o, v in recs)


MODELS = {m.name: m for m in (Register(), CasRegister(), KV(), KafkaLog(), KafkaLogWithGaps())}
KAFKA_LOG_MODELS = ("kafka-log", "kafka-log-gaps")
