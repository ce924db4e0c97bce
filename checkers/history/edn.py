"""Jepsen Kafka-workload histories in EDN, read as the ops of kraftcheck's schema (docs/history-schema.md).

A Jepsen user re-checks a stored run with ``kraftcheck check --history history.edn``; ``kraftcheck
export --format edn`` writes the same encoding, and ``read_edn_history`` gives its ops back unchanged.

Layouts: one op map per line (Jepsen's ``history.edn``; a map printed over several lines is joined back),
or one vector of op maps. ``#jepsen.history.Op{...}`` records read as their map.

Op maps (``jepsen.tests.kafka``): ``:type`` ``:invoke``/``:ok``/``:info``/``:fail``, ``:f`` ``:send``/
``:poll``/``:txn``/``:assign``/``:subscribe`` (others, such as ``:crash`` or nemesis ops, are kept as
they are), ``:process`` an integer or ``:nemesis``, ``:time`` in nanoseconds, ``:index``. Keywords read as
their name (``:x`` -> ``"x"``), sets as lists (in no particular order); field names lose a trailing
``?`` and take ``_`` for ``-``
(``:seek-to-beginning?`` -> ``seek_to_beginning``, ``:rebalance-log`` -> ``rebalance_log``).

Values become kraftcheck's encoding, the inverse of ``checkers.history.export.jepsen_op``: a ``:send`` of one
micro-op ``[[:send k v]]`` becomes ``[k, v]`` (``v`` may be ``[offset value]``), a ``:poll`` of one
micro-op ``[[:poll {k pairs}]]`` becomes ``{"k": pairs}`` (``[[:poll]]`` becomes null); ops with several
micro-ops keep the list (``[["send", k, v], ["poll", {...}], ...]``), which the checkers read as a
transaction. Poll result keys become strings, as in JSON. A missing ``:index`` is the op's position, a
missing ``:time`` the previous op's (equal times order nothing). ``:error`` values that are not strings
become their JSON text.

Jepsen marks no final phase; it is recognised instead (``mark_final_phase``): only Jepsen's final
generator seeks to the beginning, after a ``:debug-topic-partitions`` op, and from then on a process that
assigns with ``:seek-to-beginning? true`` is a final reader (its assign and later ops get
``"final": true``). Histories that mark final ops themselves are left as they are.

Bad input: an entry that does not parse or is not an op map is listed in ``malformed`` (line number,
reason) and the rest is read; a file with no op map at all raises ``ValueError`` naming the file.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import edn_format

from checkers.history.edn_fast import loads_all
from checkers.queue.extract import CLIENT_FS, SUBSCRIPTION_FS
from harness.history import OP_TYPES, MalformedLine, file_looks_like_edn, validate_op

_OP_TAG = re.compile(r"#jepsen\.history\.Op(?=\s*\{)")
_JSON_START = re.compile(r'\[?\s*\{\s*"')
_MAX_JOINED_LINES = 200  # an op map printed over more lines than this is not joined back


def sniff_format(path: str | os.PathLike) -> str:
    """``"edn"`` for a ``.edn`` file or one whose start reads as EDN
    (``harness.history.file_looks_like_edn``), else ``"jsonl"``."""
    path = os.fspath(path)
    return "edn" if path.endswith(".edn") or file_looks_like_edn(path) else "jsonl"


def _plain(x: Any) -> Any:
    """A value from either EDN reader as plain JSON-like Python: keywords and symbols as their names,
    vectors, lists and sets as lists, map keys that are not str/int as their JSON text."""
    if isinstance(x, edn_format.Keyword):
        return x.name
    if isinstance(x, edn_format.Symbol):
        return x.name
    if isinstance(x, dict | edn_format.ImmutableDict):
        out = {}
        for k, v in x.items():
            k = _plain(k)
            if not isinstance(k, str | int) or isinstance(k, bool):
                k = json.dumps(k, default=str)
            out[k] = _plain(v)
        return out
    if isinstance(x, list | tuple | set | frozenset | edn_format.ImmutableList):
        return [_plain(v) for v in x]
    if x is None or isinstance(x, str | int | float | bool):
        return x
    return str(x)  # dates, UUIDs, characters, ratios: their text


def _parse(text: str) -> list[Any]:
    """Every top-level EDN value of ``text`` as plain Python (the fast reader, else edn_format and
    ``_plain``); ValueError if neither reads it. The fast reader's values are plain already but for map
    keys that are vectors (tuples), which ``op_from_jepsen`` turns into text where they can occur."""
    try:
        return loads_all(text)
    except ValueError:
        pass
    try:
        # edn_format reads one value; a line holds one map, a file in vector layout one vector.
        return [_plain(edn_format.loads(text))]
    except Exception as exc:  # edn_format raises its own error types (EDNDecodeError, lexer errors)
        raise ValueError(f"not EDN ({type(exc).__name__}: {exc})".splitlines()[0][:200]) from None


def _values_by_line(text: str, malformed: list[tuple[int, str]]) -> list[tuple[int, Any]]:
    """``(line number, value)`` for the values of a file in one-map-per-line layout; an entry that does
    not parse is joined with the lines after it (a map printed over several lines) and else reported."""
    lines = text.split("\n")
    out: list[tuple[int, Any]] = []
    i = 0
    while i < len(lines):
        if not lines[i].strip(" \t\r,"):
            i += 1
            continue
        try:
            out.extend([(i + 1, v) for v in _parse(lines[i])])
            i += 1
            continue
        except ValueError as exc:
            reason = str(exc)
        for j in range(i + 1, min(len(lines), i + _MAX_JOINED_LINES)):
            try:
                values = _parse("\n".join(lines[i:j + 1]))
            except ValueError:
                continue
            out.extend([(i + 1, v) for v in values])
            i = j + 1
            break
        else:
            malformed.append((i + 1, reason))
            i += 1
    return out


def _key(k: Any) -> Any:
    """A queue key as the JSON schema writes it in poll results: an integer as its decimal string."""
    return str(k) if isinstance(k, int) and not isinstance(k, bool) else k


def _mop(mop: Any) -> Any:
    """One micro-op in kraftcheck's txn encoding."""
    if not isinstance(mop, list) or not mop:
        return mop
    if mop[0] == "send" and len(mop) == 3:
        return ["send", mop[1], mop[2]]
    if mop[0] == "poll" and len(mop) == 2 and isinstance(mop[1], dict):
        return ["poll", {_key(k): v for k, v in mop[1].items()}]
    return mop


def _client_value(f: str, value: Any) -> Any:
    """A send/poll/txn value: single micro-ops unwrapped as kraftcheck writes them, others as a list."""
    if not isinstance(value, list):
        return value
    mops = [_mop(m) for m in value]
    if len(mops) == 1 and isinstance(mops[0], list) and mops[0]:
        only = mops[0]
        if f == "send" and only[0] == "send" and len(only) == 3:
            return [only[1], only[2]]
        if f == "poll" and only[0] == "poll":
            return only[1] if len(only) == 2 else None
    return mops


def op_from_jepsen(m: dict, position: int, last_time: int) -> tuple[dict | None, str | None]:
    """A Jepsen op map (as ``_parse`` reads it) as a kraftcheck op, or ``(None, why)`` when it is not one."""
    op = {}
    queue_op = m.get("f") in CLIENT_FS
    for k, v in m.items():
        name = str(k)
        if name.endswith("?"):
            name = name[:-1]
        if isinstance(v, dict | list) and not (queue_op and name == "value"):
            v = _plain(v)  # nemesis values and extra fields may have vectors as map keys
        op[name.replace("-", "_")] = v
    if "type" not in op or "f" not in op:
        return None, "not a Jepsen op map (needs :type and :f)"
    if op["type"] not in OP_TYPES:
        return None, f"bad :type {op['type']!r}"
    op.setdefault("index", position)
    op.setdefault("time", last_time)
    f = op["f"]
    if f in CLIENT_FS:
        op["value"] = _client_value(f, op.get("value"))
    if op.get("error") is not None and not isinstance(op["error"], str):
        op["error"] = json.dumps(op["error"], default=str)
    op.setdefault("value", None)
    op.setdefault("node", None)
    op.setdefault("error", None)
    reason = validate_op(op)
    return (None, reason) if reason is not None else (op, None)


def mark_final_phase(ops: list[dict]) -> int:
    """Mark Jepsen's final reads with ``"final": true`` (see the module docstring); returns how many ops
    were marked. Nothing is marked when any op already carries ``final``."""
    if any("final" in op for op in ops):
        return 0
    started = False
    readers: set = set()
    marked = 0
    for op in ops:
        p, f = op["process"], op["f"]
        if f == "debug-topic-partitions" and type(p) is int:
            started = True
        if started and f in SUBSCRIPTION_FS and op.get("seek_to_beginning") is True and type(p) is int:
            readers.add(p)
        if p in readers and type(p) is int:
            op["final"] = True
            marked += 1
    return marked


def read_edn_history(path: str | os.PathLike, malformed: list[MalformedLine] | None = None) -> list[dict]:
    """The ops of a Jepsen EDN history in kraftcheck's schema; bad entries go to ``malformed``. Raises
    ``ValueError`` (naming the file) when nothing in it is a Jepsen op map."""
    path = os.fspath(path)
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = _OP_TAG.sub("", fh.read())
    bad: list[tuple[int, str]] = []
    body = text.lstrip(" \t\r\n,")
    if _JSON_START.match(body):  # EDN readers take JSON's colons for keywords: say what it is instead
        raise ValueError(f"{path}: not a Jepsen history: JSON, not EDN (a kraftcheck history.jsonl?)")
    if body.startswith("["):  # one vector of op maps: entries have no line numbers of their own
        try:
            values = _parse(text)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
        entries = [(1, v) for top in values for v in (top if isinstance(top, list) else [top])]
    else:
        entries = _values_by_line(text, bad)
    ops: list[dict] = []
    last_time = 0
    first_reason = bad[0][1] if bad else None
    for line, value in entries:
        if not isinstance(value, dict):
            op, reason = None, "not a Jepsen op map (needs :type and :f)"
        else:
            op, reason = op_from_jepsen(value, len(ops), last_time)
        if op is None:
            bad.append((line, reason))
            first_reason = first_reason or reason
            continue
        last_time = op["time"]
        ops.append(op)
    if not ops and (entries or bad):
        raise ValueError(f"{path}: not a Jepsen history: {first_reason}")
    if malformed is not None:
        malformed.extend(MalformedLine(path, line, reason) for line, reason in sorted(bad))
    mark_final_phase(ops)
    return ops
