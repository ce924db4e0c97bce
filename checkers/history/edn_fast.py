"""A small, fast reader for the EDN subset Jepsen histories use (edn_format is an order of magnitude slower).

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


_MISSING = object()
# Atoms repeat all through a history (keywords such as :type and :ok, small offsets): each is read once.
_ATOMS: dict[str, Any] = {}


def loads_all(text: str) -> list[Any]:
    """Every top-level EDN value in ``text``."""
    out: list[Any] = []
    stack: list[tuple[str, list]] = []
    items = out
    atoms = _ATOMS
    pos = 0
    for m in _TOKEN.finditer(text):
        if m.start() != pos:  # text no token starts with was skipped
            raise ValueError(f"cannot parse EDN at offset {pos}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "atom":
            tok = m.group("atom")
            value = atoms.get(tok, _MISSING)
            if value is _MISSING:
                value = _atom(tok)
                if len(atoms) < 100_000:
                    atoms[tok] = value
        elif kind == "open":
            stack.append((m.group("open"), items))
            items = []
            continue
        elif kind == "close":
            if not stack:
                raise ValueError("unbalanced EDN")
            opened, parent = stack.pop()
            if opened == "{":
                if len(items) % 2:
                    raise ValueError("odd map")
                value = {_key(items[i]): items[i + 1] for i in range(0, len(items), 2)}
            else:
                value = items
            items = parent
        else:
            value = _string(m.group("str"))
        items.append(value)
    if text[pos:].strip(" \t\r\n,"):
        raise ValueError(f"cannot parse EDN at offset {pos}")
    if stack:
        raise ValueError("unterminated EDN collection")
    return out


def _key(k: Any) -> Any:
    return tuple(k) if isinstance(k, list) else k
