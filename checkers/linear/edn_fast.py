"""A small, fast reader for the EDN subset Jepsen histories use (edn_format is ~1000x slower).

Supports maps, vectors, lists, sets, keywords (read as their name without the colon), strings, integers,
floats, ``nil``, ``true``, ``false``, symbols (as strings) and commas as whitespace. Anything else (tagged
literals, characters) raises ``ValueError`` so the caller can fall back to ``edn_format``.
"""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(r'''[\s,]*(?:(?P<open>\#\{|[\[({])|(?P<close>[\])}])|(?P<str>"(?:[^"\\]|\\.)*")|(?P<atom>[^\s,\[\](){}"]+))''')
_INT = re.compile(r"^[-+]?\d+N?$")
_FLOAT = re.compile(r"^[-+]?\d+\.\d*(?:[eE][-+]?\d+)?M?$|^[-+]?\d+[eE][-+]?\d+M?$")
_ESC = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def _atom(tok: str) -> Any:
    if tok == "nil":
        return None
    if tok == "true":
        return True
    if tok == "false":
        return False
    if tok.startswith(":"):
        return tok[1:]
    if _INT.match(tok):
        return int(tok.rstrip("N"))
    if _FLOAT.match(tok):
        return float(tok.rstrip("M"))
    if tok.startswith(("#", "\\")):
        raise ValueError(f"unsupported EDN token {tok!r}")
    return tok


def _string(tok: str) -> str:
    body = tok[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r"\\(.)", lambda m: _ESC.get(m.group(1), m.group(1)), body)


def loads_all(text: str) -> list[Any]:
    """Every top-level EDN value in ``text``."""
    out: list[Any] = []
    stack: list[tuple[str, list]] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip(" \t\r\n,") == "":
                break
            raise ValueError(f"cannot parse EDN at offset {pos}")
        pos = m.end()
        if m.group("open"):
            stack.append((m.group("open"), []))
            continue
        if m.group("close"):
            if not stack:
                raise ValueError("unbalanced EDN")
            kind, items = stack.pop()
            if kind == "{":
                if len(items) % 2:
                    raise ValueError("odd map")
                value: Any = {_key(items[i]): items[i + 1] for i in range(0, len(items), 2)}
            else:
                value = items
        elif m.group("str") is not None:
            value = _string(m.group("str"))
        else:
            value = _atom(m.group("atom"))
        if stack:
            stack[-1][1].append(value)
        else:
            out.append(value)
    if stack:
        raise ValueError("unterminated EDN collection")
    return out


def _key(k: Any) -> Any:
    return tuple(k) if isinstance(k, list) else k
