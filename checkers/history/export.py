"""Exports of a history for Jepsen-ecosystem tools: EDN and Jepsen-style JSON.

Both EDN and JSON use Jepsen's Kafka workload encoding (``jepsen.tests.kafka``), which elle-cli and the
Jepsen checkers read: client ops become micro-op vectors - a single ``send`` ``[k, [o, v]]`` becomes
``{:f :send, :value [[:send k [o v]]]}``, a ``poll`` ``{k: [[o v]]}`` becomes ``{:f :poll, :value [[:poll
{k [[o v]]}]]}``; ``txn`` ops keep their micro-ops; invocations of polls carry ``[[:poll]]``. Keys become
integers again (JSON objects forced them to strings). Other ops (``assign``, ``subscribe``, register
ops, nemesis ops) keep their value; ``process`` ``"nemesis"`` becomes the keyword ``:nemesis``. Extra op
fields (``final``, ``hwm``, ``seek_to_beginning``) are kept, with ``-`` instead of ``_`` in EDN keyword
names and Jepsen's own name ``:seek-to-beginning?`` for the seek. ``checkers.history.edn`` reads the EDN
back into the same ops.
"""

from __future__ import annotations

import json
from typing import Any

from checkers.queue.extract import norm_key

# Op fields whose EDN name is not just the field name with dashes (Jepsen's spelling).
EDN_FIELD_NAMES = {"seek_to_beginning": "seek-to-beginning?"}
_STRING_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def _poll_result(d: Any) -> Any:
    if not isinstance(d, dict):
        return d
    return {norm_key(k): v for k, v in d.items()}


def jepsen_op(op: dict) -> dict:
    """One op in Jepsen's Kafka encoding (plain Python; mop names are strings here)."""
    out = dict(op)
    f, value, typ = op.get("f"), op.get("value"), op.get("type")
    if f == "send" and isinstance(value, list) and len(value) == 2:
        out["value"] = [["send", norm_key(value[0]), value[1]]]
    elif f == "poll":
        out["value"] = [["poll"]] if typ == "invoke" or value is None else [["poll", _poll_result(value)]]
    elif f == "txn" and isinstance(value, list):
        mops = []
        for mop in value:
            if isinstance(mop, list) and mop and mop[0] == "send" and len(mop) == 3:
                mops.append(["send", norm_key(mop[1]), mop[2]])
            elif isinstance(mop, list) and mop and mop[0] == "poll":
                mops.append(["poll"] if len(mop) == 1 else ["poll", _poll_result(mop[1])])
            else:
                mops.append(mop)
        out["value"] = mops
    elif f in ("assign", "subscribe") and isinstance(value, list):
        out["value"] = [norm_key(k) for k in value]
    return out


# ------------------------------------------------------------------------------------------------ EDN
def _kw(name: str) -> str:
    return ":" + str(name).replace("_", "-")


def edn_value(x: Any, mop_names: bool = False) -> str:
    """A JSON-like value as EDN (maps, vectors, strings, numbers, nil, booleans); with ``mop_names`` a
    ``["send", ...]`` / ``["poll", ...]`` micro-op gets a keyword name, as Jepsen writes them."""
    if x is None:
        return "nil"
    if x is True:
        return "true"
    if x is False:
        return "false"
    if isinstance(x, int | float):
        return repr(x)
    if isinstance(x, str):
        return '"' + x.translate(_STRING_ESCAPES) + '"'
    if isinstance(x, dict):
        return "{" + ", ".join(f"{edn_value(k)} {edn_value(v)}" for k, v in x.items()) + "}"
    if isinstance(x, list | tuple):
        if mop_names and x and x[0] in ("send", "poll"):
            return "[" + " ".join([_kw(x[0])] + [edn_value(v) for v in x[1:]]) + "]"
        return "[" + " ".join(edn_value(v, mop_names) for v in x) + "]"
    return edn_value(str(x))


def op_to_edn(op: dict) -> str:
    """One op as a Jepsen EDN map."""
    j = jepsen_op(op)
    parts = []
    for k, v in j.items():
        if v is None and k in ("node", "error"):
            continue
        if k in ("type", "f"):
            parts.append(f"{_kw(k)} {_kw(v)}")
        elif k == "process":
            parts.append(f":process {_kw(v) if v == 'nemesis' else edn_value(v)}")
        elif k == "value":
            parts.append(f":value {edn_value(v, mop_names=j.get('f') in ('send', 'poll', 'txn'))}")
        else:
            parts.append(f":{EDN_FIELD_NAMES[k]} {edn_value(v)}" if k in EDN_FIELD_NAMES
                         else f"{_kw(k)} {edn_value(v)}")
    return "{" + ", ".join(parts) + "}"


def to_edn(ops: list[dict]) -> str:
    """A Jepsen ``history.edn``: one op map per line."""
    return "".join(op_to_edn(op) + "\n" for op in ops)


def to_jepsen_json(ops: list[dict]) -> str:
    """A JSON array of ops in Jepsen's Kafka encoding (what elle-cli's JSON reader takes)."""
    return "[\n" + ",\n".join(json.dumps(jepsen_op(op), default=str) for op in ops) + "\n]\n"
