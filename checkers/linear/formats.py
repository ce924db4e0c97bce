"""Readers that turn history files into per-key lists of ``wgl.Operation`` for one model.

Formats: ``jsonl`` (our schema, docs/history-schema.md), ``edn`` (Jepsen ``history.edn``: one op map per line
or one vector of maps; also porcupine's kv histories, which carry ``:key``), ``etcd-log`` (the Jepsen etcd
logs of porcupine's corpus, read with porcupine's rules: an unmatched completion line such as ``:info
:write :timed-out`` leaves the op open until the end; ``:fail :read :timed-out`` completes a read with an
unknown output; ``:fail :cas`` is a cas whose compare failed).

Op meanings by ``f``: ``read``/``write``/``cas`` (register, cas-register), ``get``/``put``/``append`` (kv),
``send``/``poll``/``txn`` (kafka-log, or kafka-log-gaps when ``txn`` ops are present; split per key:
every send and every non-empty per-key poll result becomes one operation with the op's interval; an ok
final read with end offsets - ``"final": true`` and ``"ends": {k: int}`` - becomes one ``final-poll``
per key, empty results included). Keys: an op's ``key`` field (kv, independent registers) or the queue
key; None for a single register.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from checkers.linear.models import KAFKA_LOG_MODELS, UNKNOWN
from checkers.linear.wgl import INF, Operation
from checkers.queue.extract import norm_key
from harness.history import complete_op

QUEUE_FS = {"send", "poll", "txn"}
REGISTER_FS = {"read", "write", "cas"}
KV_FS = {"get", "put", "append"}


def detect_model(ops: list[dict]) -> str:
    """Pick a model from the ``f`` values present. Queue histories with ``txn`` ops get the log whose
    offsets may skip numbers: a transactional producer's commit and abort markers take offsets."""
    fs = {op.get("f") for op in ops if op.get("process") != "nemesis"}
    if fs & QUEUE_FS:
        return "kafka-log-gaps" if "txn" in fs else "kafka-log"
    if fs & KV_FS:
        return "kv"
    if "cas" in fs:
        return "cas-register"
    return "register" if fs & REGISTER_FS else "kafka-log"


def _plain(x: Any) -> Any:
    """EDN values -> plain Python (keywords become their names, vectors lists, maps dicts)."""
    import edn_format
    if isinstance(x, edn_format.Keyword):
        return x.name
    if isinstance(x, dict | edn_format.ImmutableDict):
        return {_plain(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple | edn_format.ImmutableList):
        return [_plain(v) for v in x]
    if isinstance(x, frozenset | set):
        return [_plain(v) for v in x]
    return x


def read_edn(text: str) -> list[dict]:
    """Jepsen EDN history (a vector of op maps, or one map per line) -> our op dicts with indices."""
    from checkers.history.edn_fast import loads_all
    try:
        raw = loads_all(text)
    except ValueError:  # something the fast reader does not know (tagged literals...): the full parser
        import edn_format
        stripped = text.strip()
        if stripped.startswith("["):
            raw = [_plain(edn_format.loads(stripped))]
        else:
            raw = [_plain(edn_format.loads(line)) for line in text.splitlines() if line.strip()]
    if len(raw) == 1 and isinstance(raw[0], list):
        raw = raw[0]
    ops = []
    for i, m in enumerate(raw):
        op = {k.replace("?", ""): v for k, v in m.items()}
        op.setdefault("index", i)
        op.setdefault("time", i)
        ops.append(op)
    return ops


def read_jsonl(path: str) -> list[dict]:
    """Our JSONL history, the ops the other checkers see (read with orjson by
    ``checkers.history.jsonl.read_ops``; malformed lines are skipped here, ``kraftcheck check`` reports
    them)."""
    from checkers.history.jsonl import read_ops
    return read_ops(path)


def _pairs(ops: list[dict]):
    """(invoke, completion|None) per client op, by process, in history order."""
    open_ = {}
    out = []
    for op in ops:
        p = op.get("process")
        if p == "nemesis" or op.get("type") not in ("invoke", "ok", "fail", "info"):
            continue
        if op["type"] == "invoke":
            open_[p] = len(out)
            out.append([op, None])
        else:
            slot = open_.pop(p, None)
            if slot is not None:
                out[slot][1] = op
    return out


def to_partitions(ops: list[dict], model: str) -> dict[Any, list[Operation]]:
    """Per-key operations for ``model`` (see the module docstring for the rules). Each invocation is
    completed by ``harness.history.complete_op``, as every reader does."""
    parts: dict[Any, list[Operation]] = defaultdict(list)
    for inv, comp in _pairs(ops):
        op = complete_op(inv, comp)
        ctype = op["type"]
        call = op["invoke_index"]
        ret = INF if ctype == "info" else op["index"]  # an indeterminate op may take effect until the end
        ref = op["index"]
        f = op["f"]
        if model in KAFKA_LOG_MODELS:
            if f not in QUEUE_FS or ctype == "fail":
                continue
            _queue_ops(parts, op, call, ret, ref)
            continue
        key = op.get("key")
        value = op.get("invoke_value")
        cval = op.get("value")
        if f == "cas":
            if ctype == "fail":
                out = False  # the compare did not match (porcupine's etcd semantics)
            else:
                out = True if ctype == "ok" else UNKNOWN
            parts[key].append(Operation(call, ret, ("cas", tuple(value)), out, ref))
            continue
        if ctype == "fail":
            continue  # certainly did not happen
        if f in ("read", "get"):
            out = cval if ctype == "ok" else UNKNOWN
            if model == "kv" and out is None:
                out = ""
            parts[key].append(Operation(call, ret, (f, None), out, ref))
        elif f in ("write", "put", "append"):
            parts[key].append(Operation(call, ret, (f, value), None, ref))
    return dict(parts)


def _is_mops(x: Any) -> bool:
    """Jepsen's encoding: a send/poll op whose value is a micro-op list, read like a txn."""
    return isinstance(x, list) and bool(x) and all(isinstance(m, list) and m and m[0] in ("send", "poll")
                                                   for m in x)


def _queue_ops(parts, op: dict, call, ret, ref) -> None:
    f, ctype = op["f"], op["type"]
    cval, ival = op.get("value"), op.get("invoke_value")
    if f in ("send", "poll") and (_is_mops(cval) or _is_mops(ival)):
        f = "txn"
    if f == "send":
        src = cval if ctype == "ok" and isinstance(cval, list) and len(cval) == 2 else ival
        mops = [["send", src[0], src[1]]] if isinstance(src, list) and len(src) == 2 else []
    elif f == "poll":
        mops = [["poll", cval]] if ctype == "ok" else []
        ends = op.get("ends")
        if mops and isinstance(cval, dict) and isinstance(ends, dict) and op.get("final") is True:
            mops = _final_read(parts, cval, ends, call, ret, ref)
    else:
        mops = cval if ctype == "ok" and isinstance(cval, list) else ival or []
    for mop in mops:
        if not isinstance(mop, list) or not mop:
            continue
        if mop[0] == "send" and len(mop) == 3:
            x = mop[2]
            if isinstance(x, list) and len(x) == 2:
                o, v = x
            else:
                o, v = None, x
            # An offset that is not a non-negative integer is unknown (Kafka's clients report -1 when not told).
            out = o if ctype == "ok" and isinstance(o, int) and not isinstance(o, bool) and o >= 0 else UNKNOWN
            parts[norm_key(mop[1])].append(Operation(call, ret, ("send", v), out, ref))
        elif mop[0] == "poll" and len(mop) == 2 and isinstance(mop[1], dict) and ctype == "ok":
            for k, pairs in mop[1].items():
                recs = tuple((p[0], p[1]) for p in pairs if isinstance(p, list) and len(p) == 2)
                if recs:
                    parts[norm_key(k)].append(Operation(call, ret, ("poll", recs), None, ref))


def _final_read(parts, value: dict, ends: dict, call, ret, ref) -> list:
    """Split an ok final read (``"final": true`` with ``"ends"``) into one ``final-poll`` per key that has an
    integer end offset; returns the micro-ops left for the ordinary poll rule (keys without an end offset).

    A final read is a fresh consumer that took the end offsets and then read every key from the beginning
    up to them (workloads/clients.py): it shows the whole log, so an empty result is a constraint ("the log
    is empty"), not the absence of one as for an ordinary poll, which reads an arbitrary range."""
    rest = {}
    for k in set(value) | set(ends):
        end = ends.get(k)
        pairs = value.get(k) or []
        if not isinstance(end, int) or isinstance(end, bool):
            if k in value:
                rest[k] = value[k]
            continue
        recs = tuple((p[0], p[1]) for p in pairs if isinstance(p, list) and len(p) == 2)
        parts[norm_key(k)].append(Operation(call, ret, ("final-poll", (recs, end)), None, ref))
    return [["poll", rest]] if rest else []


_ETCD = re.compile(r"^INFO\s+jepsen\.util\s+-\s+(\d+)\s+:(invoke|ok|fail|info)\s+:(read|write|cas)\s+(.*?)\s*$")


def read_etcd_log(text: str) -> dict[Any, list[Operation]]:
    """Porcupine's Jepsen etcd logs -> one partition of cas-register operations."""
    ops: list[Operation] = []
    open_: dict[int, tuple[int, tuple]] = {}
    for pos, line in enumerate(text.splitlines()):
        m = _ETCD.match(line)
        if not m:
            continue
        proc, typ, f, arg = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        if typ == "invoke":
            if f == "read" and arg == "nil":
                open_[proc] = (pos, ("read", None))
            elif f == "write" and arg.isdigit():
                open_[proc] = (pos, ("write", int(arg)))
            elif f == "cas" and re.fullmatch(r"\[\d+\s+\d+\]", arg):
                a, b = arg[1:-1].split()
                open_[proc] = (pos, ("cas", (int(a), int(b))))
            continue
        if proc not in open_:
            continue
        if typ == "ok" and f == "read" and (arg == "nil" or arg.isdigit()):
            call, inp = open_.pop(proc)
            ops.append(Operation(call, pos, inp, None if arg == "nil" else int(arg), call))
        elif typ == "ok" and f == "write" and arg.isdigit():
            call, inp = open_.pop(proc)
            ops.append(Operation(call, pos, inp, None, call))
        elif typ in ("ok", "fail") and f == "cas" and arg.startswith("["):
            call, inp = open_.pop(proc)
            ops.append(Operation(call, pos, inp, typ == "ok", call))
        elif typ == "fail" and f == "read" and arg == ":timed-out":
            call, inp = open_.pop(proc)
            ops.append(Operation(call, pos, inp, UNKNOWN, call))
        # anything else (e.g. ":info :write :timed-out") leaves the op open: it completes at the end
    for call, inp in open_.values():
        ops.append(Operation(call, INF, inp, UNKNOWN, call))
    return {None: ops}


def load(path: str, fmt: str, model: str) -> tuple[str, dict[Any, list[Operation]], list[dict] | None]:
    """Read ``path`` in ``fmt`` ("auto" guesses from the name/content); returns (model, partitions, ops)."""
    if fmt == "auto":
        with open(path, "rb") as fh:  # enough of the start to see the first non-blank text
            head = fh.read(4096).decode("utf-8", errors="replace")
            while not head.strip():
                more = fh.read(1 << 16)
                if not more:
                    break
                head += more.decode("utf-8", errors="replace")
        if path.endswith(".log") and "jepsen.util" in head[:2000]:
            fmt = "etcd-log"
        elif head.lstrip().startswith(("{:", "[{:", "[")) and not head.lstrip().startswith("[{\""):
            fmt = "edn"
        else:
            fmt = "jsonl"
    if fmt == "jsonl":
        ops = read_jsonl(path)
    elif fmt in ("etcd-log", "edn"):
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        if fmt == "etcd-log":
            return ("cas-register" if model == "auto" else model), read_etcd_log(text), None
        ops = read_edn(text)
    else:
        raise ValueError(f"unknown format {fmt!r}")
    if model == "auto":
        model = detect_model(ops)
    return model, to_partitions(ops, model), ops
