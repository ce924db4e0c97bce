"""History ops as a reader wants them next to an anomaly: one line each, long poll results cut to the
records that matter, the offending values highlighted.

A poll can return thousands of records; the anomaly that names it concerns one or two of them (a value
read twice, an offset that skipped). ``op_html`` keeps the records the anomaly names (by value, or by
offset within its key), a couple of neighbours and the ends of each list, says how many were left out,
and marks the named ones (``<mark>``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from reports.html import esc
from reports.run_facts import shorten_records

MAX_VALUE_CHARS = 400


@dataclass(frozen=True)
class Focus:
    """What an anomaly names: values (anywhere), and offsets of one key (``key`` None: of any key)."""

    values: frozenset[Any] = field(default_factory=frozenset)
    offsets: frozenset[Any] = field(default_factory=frozenset)
    key: str | None = None


def focus_of(example: Any) -> Focus:
    """The values, offsets and key an anomaly example names (``value``/``values``, ``offset``/``offsets``,
    ``key``)."""
    if not isinstance(example, dict):
        return Focus()
    values = _scalars(example.get("value")) | _scalars(example.get("values"))
    offsets = _scalars(example.get("offset")) | _scalars(example.get("offsets"))
    key = example.get("key")
    return Focus(frozenset(values), frozenset(offsets), None if key is None else str(key))


def op_html(op: dict[str, Any], focus: Focus = Focus()) -> str:
    """One op as a line of HTML: index, type, process, f, node, its value shortened and highlighted, error."""
    head = f"#{op.get('index')} {op.get('type')} p{op.get('process')} {op.get('f')}"
    if op.get("node"):
        head += f" @{op['node']}"
    if op.get("final"):
        head += " (final)"
    value = _value_html(op.get("f"), op.get("value"), focus)
    error = f" <span class='muted'>error: {esc(op['error'])}</span>" if op.get("error") else ""
    return f"<code>{esc(head)} {value}</code>{error}"


def example_rows(example: dict[str, Any], ops: dict[int, dict], refs: list[int]) -> list[tuple[str, str]]:
    """A finding's example as (label, HTML) rows: its description (``detail``), its other fields, the
    trace events it cites one per line, then each history op it names (``refs``, looked up in ``ops``)
    shortened around what it names."""
    focus = focus_of(example)
    rows = []
    if example.get("detail"):
        rows.append(("what", esc(example["detail"])))
    rest = {k: v for k, v in example.items() if k not in ("events", "detail", "ops")}  # ops: shown below
    if rest:
        rows.append(("example", f"<code>{esc(rest)}</code>"))
    for event in example.get("events") or []:
        if isinstance(event, dict):
            rows.append((f"trace {esc(event.get('kind', 'event'))}", f"<code>{esc(event_line(event))}</code>"))
    rows.extend((f"op {i}", op_html(ops[i], focus) if i in ops else "<span class='muted'>not in the stored "
                 "history</span>") for i in refs)
    return rows


def event_line(event: dict[str, Any]) -> str:
    """A trace event in one line: time (s), node, then its other fields."""
    rest = {k: v for k, v in event.items() if k not in ("time", "node", "kind", "line", "_line")}
    time_ns = event.get("time")
    when = f"t={time_ns / 1e9:.3f}s " if isinstance(time_ns, int | float) else ""
    return f"{when}node {event.get('node')}: " + ", ".join(f"{k}={json.dumps(v)}" for k, v in rest.items())


def _value_html(f: Any, value: Any, focus: Focus) -> str:
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        return _records_by_key(value, focus)
    if f == "txn" and isinstance(value, list):
        parts = []
        for mop in value:
            if isinstance(mop, list) and len(mop) == 2 and mop[0] == "poll" and isinstance(mop[1], dict):
                parts.append(f"[poll {_records_by_key(mop[1], focus)}]")
            else:
                parts.append(_highlight_json(mop, focus))
        return "[" + ", ".join(parts) + "]"
    if f == "send" and isinstance(value, list):
        return _highlight_json(value, focus)
    text = json.dumps(value, default=str)
    if len(text) > MAX_VALUE_CHARS:
        return esc(text[:MAX_VALUE_CHARS]) + f"<span class='muted'>... ({len(text)} chars)</span>"
    return esc(text)


def _records_by_key(value: dict[str, list], focus: Focus) -> str:
    parts = []
    for key, records in value.items():
        offsets = focus.offsets if focus.key in (None, str(key)) else frozenset()
        shown = []
        for what, item in shorten_records(records, set(focus.values), set(offsets)):
            if what == "gap":
                shown.append(f"<span class='muted'>... {item} more ...</span>")
            elif what == "hit":
                shown.append(f"<mark>{esc(item)}</mark>")
            else:
                shown.append(esc(item))
        parts.append(f"{esc(str(key))}: [" + ", ".join(shown) + "]")
    return "{" + "; ".join(parts) + "}"


def _highlight_json(value: Any, focus: Focus) -> str:
    """A send (``[key, v]``, ``[key, [offset, v]]``, or the micro-op ``["send", key, ...]``), marked when it
    sent a named value."""
    text = esc(value)
    sent = value[1:] if isinstance(value, list) and value[:1] == ["send"] else value
    payload = sent[1] if isinstance(sent, list) and len(sent) == 2 else None
    if isinstance(payload, list) and len(payload) == 2:
        payload = payload[1]
    return f"<mark>{text}</mark>" if payload is not None and payload in focus.values else text


def _scalars(value: Any) -> set[Any]:
    if isinstance(value, list | tuple | set | frozenset):
        out: set[Any] = set()
        for v in value:
            out |= _scalars(v)
        return out
    if value is None or isinstance(value, dict):
        return set()
    return {value}
