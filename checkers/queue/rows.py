"""The key table: a queue history's records as one row per (record, key), in Arrow and Parquet.

This is ``queue.parquet`` of a columnar history (``checkers.history.parquet``) and the table the Spark
engine checks key by key (``spark_analysis.keyed``). A row holds key ``key``'s part of one record
(``checkers.queue.keys.restrict``) in typed columns:

    key            int64   null for a record that concerns no key (kept so that counts are exact)
    op             int64   the record's op index; ``invoke_index`` the index of its invocation
    part           int32   the row's position among its record's rows (0: the first; counts use it)
    process        int64
    f, type        string  the record's ``f`` (as written) and completion type (``info`` when none)
    invoke_time, complete_time   int64 (``complete_time`` null when the op never completed)
    final, seek, txn             bool   as ``OpRec`` has them
    assigned       bool    ``assign``/``subscribe`` records: whether their key list names the key (such a
                           record has a row for every key of the history); null for other records
    rebalanced     bool    the key is named in the completion's ``rebalance_log``
    committed      bool    an ``info`` record one of whose sends an ok read returned (of any key: the
                           one fact of the whole history a key's rows need that they cannot tell)
    send_values, send_offsets    list<int64>  the record's sends to the key, in micro-op order
    read_offsets, read_values    list<int64>  its read sequence of the key (null: it read no such key)
    hwm            int64   the high watermark it saw for the key

Keys and values must be integers that fit in 64 bits (docs/history-schema.md says they are integers);
``NotColumnar`` says where one is not. Offsets that are not integers are null, as the checker reads them.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

import numpy as np
import pyarrow as pa

from checkers.queue.extract import SUBSCRIPTION_FS, OpRec

_I64 = pa.int64()
_LIST = pa.list_(pa.int64())
KEY_SCHEMA = pa.schema([
    ("key", _I64), ("op", _I64), ("part", pa.int32()), ("invoke_index", _I64), ("process", _I64),
    ("f", pa.string()), ("type", pa.string()), ("invoke_time", _I64), ("complete_time", _I64),
    ("final", pa.bool_()), ("seek", pa.bool_()), ("txn", pa.bool_()), ("assigned", pa.bool_()),
    ("rebalanced", pa.bool_()), ("committed", pa.bool_()),
    ("send_values", _LIST), ("send_offsets", _LIST), ("read_offsets", _LIST), ("read_values", _LIST),
    ("hwm", _I64),
])
KEY_COLUMNS = tuple(KEY_SCHEMA.names)
_MIN, _MAX = -(1 << 63), (1 << 63) - 1


class NotColumnar(ValueError):
    """A history the key table cannot hold (a key, value or number that is not a 64-bit integer)."""


def _key(k: Any, op: int) -> Any:
    if type(k) is not int or not _MIN <= k <= _MAX:
        raise NotColumnar(f"op {op}: key {k!r} is not a 64-bit integer (keys and values must be integers)")
    return k


def record_rows(r: OpRec, keys: list | None = None) -> list[tuple]:
    """The rows of record ``r`` (tuples in ``KEY_COLUMNS`` order, ``committed`` left False: it is a fact
    of the whole history). ``keys``: for an ``assign``/``subscribe`` record, the history's keys (one row
    each); other records get a row per key they concern, or one row with a null key.

    Keys are checked here; values and numbers are checked when the rows become a table
    (``rows_table``), where it costs less."""
    index = r.index
    head = (r.invoke_index, r.process, r.f, r.type, r.invoke_time, r.complete_time, r.final, r.seek, r.txn)
    if r.assign is not None:
        if not keys:
            return [(None, index, 0, *head, None, False, False, None, None, None, None, None)]
        named = set(r.assign)
        return [(k, index, part, *head, k in named, False, False, None, None, None, None, None)
                for part, k in enumerate(keys)]
    sends, reads, hwm = r.sends, r.reads, r.hwm
    if len(sends) == 1 and not reads and not hwm:  # the common case: one send
        k, v, o = sends[0]
        return [(_key(k, index), index, 0, *head, None, k in r.rebalanced, False, [v], [o], None, None, None)]
    by_key: dict[Any, tuple[list, list]] = {}
    for k, v, o in sends:
        got = by_key.get(k)
        if got is None:
            got = by_key[k] = ([], [])
        got[0].append(v)
        got[1].append(o)  # already null unless an integer (checkers.queue.extract)
    keys_here = dict.fromkeys(by_key)
    if reads:
        keys_here.update(dict.fromkeys(reads))
    if hwm:
        keys_here.update(dict.fromkeys(hwm))
    else:
        hwm = {}
    if not keys_here:
        return [(None, index, 0, *head, None, False, False, None, None, None, None, None)]
    rows = []
    for part, k in enumerate(keys_here):
        s = by_key.get(k)
        seq = reads.get(k)
        if seq is None:
            ro = rv = None
        elif seq:
            ro, rv = zip(*seq, strict=True)  # offsets are integers or None (checkers.queue.extract)
        else:
            ro = rv = ()
        rows.append((_key(k, index), index, part, *head, None, k in r.rebalanced, False,
                     s[0] if s else None, s[1] if s else None, ro, rv, hwm.get(k)))
    return rows


def rows_table(rows: list[tuple], schema: pa.Schema = KEY_SCHEMA) -> pa.Table:
    """Row tuples as a table of ``schema``; ``NotColumnar`` when a value or number is not a 64-bit integer.

    List columns are built from one flat list and offsets (several times faster than from nested lists),
    and the types of their elements are checked first: pyarrow would turn a float into an integer."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    arrays = []
    for values, field in zip(columns, schema, strict=True):
        try:
            arrays.append(_list_array(values, field) if pa.types.is_list(field.type)
                          else pa.array(values, type=field.type))
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise NotColumnar(_culprit(rows, schema, field.name) or f"{field.name}: {exc}") from None
    return pa.Table.from_arrays(arrays, schema=schema)


def _list_array(col: tuple, field: pa.Field) -> pa.Array:
    lens = [0 if x is None else len(x) for x in col]
    flat = list(chain.from_iterable(x for x in col if x))
    kinds = set(map(type, flat))
    if kinds - {int, type(None)} or (type(None) in kinds and "values" in field.name):
        raise pa.ArrowInvalid(f"not integers: {sorted(t.__name__ for t in kinds)}")
    offsets = np.zeros(len(col) + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    mask = pa.array([x is None for x in col], type=pa.bool_())
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat, type=field.type.value_type), mask=mask)


def _culprit(rows: list[tuple], schema: pa.Schema, name: str) -> str | None:
    """Which op holds the first value of column ``name`` that is not a 64-bit integer (for the message)."""
    i = schema.names.index(name)
    for row in rows:
        x = row[i]
        for v in (x if isinstance(x, tuple | list) else (x,)):
            if v is None and "values" not in name:
                continue
            if type(v) is not int or not _MIN <= v <= _MAX:
                what = name.replace("_", " ").rstrip("s")
                return f"op {row[1]}: {what} {v!r} is not a 64-bit integer (keys and values must be integers)"
    return None


def records_of_key(table: pa.Table) -> list[OpRec]:
    """One key's rows (sorted by ``op``, none with a null key) back as that key's records
    (``checkers.queue.keys.restrict`` of each record), ready for ``QueueAnalysis(None, recs=...)``."""
    n = table.num_rows
    if n == 0:
        return []
    col = {name: table.column(name) for name in KEY_COLUMNS}
    key = col["key"][0].as_py()
    ops, inv, proc = (col[c].to_pylist() for c in ("op", "invoke_index", "process"))
    fs, types = col["f"].to_pylist(), col["type"].to_pylist()
    t_inv, t_done = col["invoke_time"].to_pylist(), col["complete_time"].to_pylist()
    final, seek, txn = (col[c].to_pylist() for c in ("final", "seek", "txn"))
    assigned, rebalanced, hwm = (col[c].to_pylist() for c in ("assigned", "rebalanced", "hwm"))
    reads = _pairs(col["read_offsets"], col["read_values"])
    send_v, send_o = col["send_values"].to_pylist(), col["send_offsets"].to_pylist()
    only_key = frozenset((key,))
    out = []
    for i in range(n):
        r = OpRec(ops[i], inv[i], proc[i], fs[i], types[i], t_inv[i], t_done[i], final[i])
        r.seek, r.txn = seek[i], txn[i]
        if fs[i] in SUBSCRIPTION_FS:
            r.assign = [key] if assigned[i] else []
        else:
            if send_v[i] is not None:
                r.sends = [(key, v, o) for v, o in zip(send_v[i], send_o[i], strict=True)]
            if reads[i] is not None:
                r.reads = {key: reads[i]}
            if hwm[i] is not None:
                r.hwm = {key: hwm[i]}
            if rebalanced[i]:
                r.rebalanced = only_key
        out.append(r)
    return out


def _pairs(offsets: pa.ChunkedArray, values: pa.ChunkedArray) -> list[list | None]:
    """Per row, its read sequence as ``[[offset, value], ...]`` lists (what the checker's fast paths
    compare with), or None; built by numpy in C when no offset is null."""
    offsets = offsets.combine_chunks() if offsets.num_chunks != 1 else offsets.chunk(0)
    values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    flat_o, flat_v = offsets.flatten(), values.flatten()
    if flat_o.null_count:
        return [None if o is None else [[a, b] for a, b in zip(o, v, strict=True)]
                for o, v in zip(offsets.to_pylist(), values.to_pylist(), strict=True)]
    pairs = np.column_stack([flat_o.to_numpy(zero_copy_only=False),
                             flat_v.to_numpy(zero_copy_only=False)]).tolist()
    bounds = (values.offsets.to_numpy() - values.offsets[0].as_py()).tolist()
    valid = values.is_valid().to_pylist()
    return [pairs[bounds[i]:bounds[i + 1]] if valid[i] else None for i in range(len(values))]
