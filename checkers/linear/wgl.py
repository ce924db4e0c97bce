"""Wing-Gong-Lowe linearizability search over one partition (see the package docstring)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Operation:
    """One operation of a partition: ``call``/``ret`` are positions in history order (``ret`` may be
    ``INF`` for an indeterminate op), ``inp``/``out`` what the model sees, ``ref`` the history op index."""

    call: float
    ret: float
    inp: Any
    out: Any
    ref: Any = None


INF = float("inf")
MAX_STUCK_STATES = 4
ANY_STATE = object()  # ``_Entry.wants`` of an op that may be legal in more than one state


class _Entry:
    __slots__ = ("op", "inp", "out", "is_call", "match", "prev", "next", "oid", "observer", "twin_before",
                 "wants")

    def __init__(self, op, is_call, oid, observer=False):
        self.op = op
        self.inp = op.inp if op is not None else None  # read in the search's inner loop
        self.out = op.out if op is not None else None
        self.observer = observer  # the op never changes the model's state (see check_operations)
        self.twin_before = -1  # the interchangeable crashed op invoked last before this one (or -1)
        self.wants = ANY_STATE  # the one state the op is legal in, when the model can say (an observer)
        self.is_call = is_call
        self.oid = oid
        self.match = None
        self.prev = None
        self.next = None


@dataclass
class SearchResult:
    """``valid`` True / False / "unknown"; details for reports."""

    valid: Any
    explored: int = 0
    reason: str | None = None
    linearized: int = 0
    total: int = 0
    stuck: list = field(default_factory=list)
    stuck_states: list = field(default_factory=list)


def _event_order(ops: list[Operation]) -> list[tuple[bool, int]]:
    """The invocations and completions of ``ops`` as ``(is_call, op id)`` in history order. At equal
    times a completion comes before an invocation (the earlier op finished first), except an op's own
    completion at the instant of its invocation, which comes after the invocations of that instant."""
    keyed = []
    for i, op in enumerate(ops):
        keyed.append((op.call, 1, i, True))
        keyed.append((op.ret, 2 if op.ret == op.call else 0, i, False))
    keyed.sort()
    return [(is_call, i) for _, _, i, is_call in keyed]


def _crashed_twins(ops: list[Operation]) -> list:
    """For each op, a class shared by the indeterminate ops with the same input and output (``None``
    for the others): two such ops, both invoked and pending, are interchangeable from then on."""
    classes: dict = {}
    twin: list = [None] * len(ops)
    for i, op in enumerate(ops):
        if op.ret == INF:
            try:
                twin[i] = classes.setdefault(_typed(op.inp, op.out), i)
            except TypeError:  # an unhashable input: this op is its own class
                pass
    return twin


def _typed(*values):
    """``values`` with the type of every leaf, so that 1, 1.0 and True (equal in Python) differ."""
    return tuple(_typed(*v) if isinstance(v, tuple) else (type(v), v) for v in values)


def _build_list(ops: list[Operation], model) -> _Entry:
    observes = getattr(model, "observes", None)
    wanted = getattr(model, "wanted_state", None)
    calls = [_Entry(op, True, i, observes is not None and observes(op.inp, op.out)) for i, op in enumerate(ops)]
    for c in calls:
        c.match = _Entry(c.op, False, c.oid)
        if c.observer and wanted is not None:
            c.wants = _single_state(wanted(c.inp, c.out))
    twin = _crashed_twins(ops)
    last_of_class: dict = {}
    head = _Entry(None, False, -1)
    prev = head
    for is_call, i in _event_order(ops):
        e = calls[i] if is_call else calls[i].match
        if is_call and twin[i] is not None:
            e.twin_before = last_of_class.get(twin[i], -1)
            last_of_class[twin[i]] = i
        prev.next = e
        e.prev = prev
        prev = e
    return head


def _single_state(wanted):
    """The state of a ``wanted_state`` answer, or ``ANY_STATE`` when there is none or it cannot be
    compared safely by ``!=`` alone (the step compares with ``==``: a value unequal to itself, NaN,
    would be skipped where the step might differ)."""
    if wanted is None:
        return ANY_STATE
    w = wanted[0]
    try:
        return w if w == w else ANY_STATE
    except Exception:  # a value whose comparison fails is left to the step
        return ANY_STATE


def _lift(e: _Entry) -> None:
    e.prev.next = e.next
    if e.next is not None:
        e.next.prev = e.prev
    m = e.match
    m.prev.next = m.next
    if m.next is not None:
        m.next.prev = m.prev


def _unlift(e: _Entry) -> None:
    m = e.match
    m.prev.next = m
    if m.next is not None:
        m.next.prev = m
    e.prev.next = e
    if e.next is not None:
        e.next.prev = e


def check_operations(model, ops: list[Operation], deadline: float | None = None) -> SearchResult:
    """Search for a linearization of ``ops`` under ``model``; ``deadline`` is a ``time.monotonic()``."""
    n = len(ops)
    if n == 0:
        return SearchResult(True, total=0)
    head = _build_list(ops, model)
    state = model.init()
    # The set of linearized ops is kept as ``base`` (every op below it is linearized, op ``base`` is not)
    # and ``mask`` (bit i: op ``base + i`` is linearized): the same set as one n-bit integer, but its
    # size is the spread of the ops linearized out of order, not the history's length, so memo keys and
    # updates stay small on long histories (with one n-bit integer per key, a 300 k-op partition filled
    # gigabytes and spent its time copying them).
    base = 0
    mask = 0
    count = 0
    cache: set = set()
    stack: list = []
    entry = head.next
    explored = 0
    best = 0
    best_stuck: list = []
    best_states: list = []  # distinct model states at the deepest dead ends: where a reader looks first
    step = model.step
    # An op that never changes the state (a read, a poll, a failed cas) and is legal now can be taken now
    # in any linearization from here that takes it later (nothing it could be moved past sees a
    # different state, and no pending op returned before it was called). So such a choice is never
    # undone in favour of another op at the same point: when what follows it fails, or it leads to a
    # state already explored, the search backtracks past it (``_Entry.observer``).
    while head.next is not None:
        explored += 1
        if deadline is not None and not explored & 0x3FF and time.monotonic() > deadline:
            return SearchResult("unknown", explored, "time limit reached", best, n, best_stuck, best_states)
        if entry.is_call:
            twin = entry.twin_before
            if twin >= base and not (mask >> (twin - base)) & 1:
                # An interchangeable crashed op invoked earlier is still open: it was tried here first,
                # and taking this one instead reaches the same configuration up to renaming.
                entry = entry.next
                continue
            wants = entry.wants
            if wants is not ANY_STATE and wants != state:  # an observer of another state: illegal now
                entry = entry.next
                continue
            ok, new_state = step(state, entry.inp, entry.out)
            if not ok:
                entry = entry.next
                continue
            new_base, new_mask = base, mask | (1 << (entry.oid - base))
            if new_mask & 1:  # op ``base`` is in: move past the run of linearized ops
                run = (~new_mask & (new_mask + 1)).bit_length() - 1
                new_base += run
                new_mask >>= run
            key = (new_base, new_mask, new_state)
            if key not in cache:
                cache.add(key)
                stack.append((entry, state, base, mask))
                state, base, mask = new_state, new_base, new_mask
                count += 1
                _lift(entry)
                entry = head.next
                continue
            if not entry.observer:
                entry = entry.next
                continue
        else:
            # A completion: its op should have been linearized already. Remember the deepest dead end
            # (the ops still open there) to explain a failure, then backtrack.
            if count > best or not best_stuck:
                best = count
                best_stuck = [entry.op.ref]
                best_states = [state]
                e = head.next
                while e is not None and e is not entry and len(best_stuck) < 20:
                    if e.is_call:
                        best_stuck.append(e.op.ref)
                    e = e.next
            elif count == best and len(best_states) < MAX_STUCK_STATES and state not in best_states:
                best_states.append(state)
        while True:  # backtrack to the last choice that may be undone
            if not stack:
                return SearchResult(False, explored, "no linearization", best, n, best_stuck, best_states)
            entry, state, base, mask = stack.pop()
            count -= 1
            _unlift(entry)
            if not entry.observer:
                break
        entry = entry.next
    return SearchResult(True, explored, None, n, n)
