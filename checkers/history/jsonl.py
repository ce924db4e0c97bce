"""A fast reader of ``history.jsonl`` with exactly the results of ``harness.history.iter_history``.

Reading a 1 M-op history with the standard ``json`` module costs about as much as checking it, so the
checkers read with orjson: the file is read as bytes in blocks of whole lines (``_line_blocks``), each
line parsed by orjson, and the schema check is an inlined version of ``harness.history.validate_op``
for the common case.
Whatever the fast path does not accept goes through the reference path, so the ops, their order, the
default fields and every malformed-line reason (``json``'s message) are the same:

* a line orjson rejects (bad JSON, invalid UTF-8, integers beyond 64 bits, NaN, Unicode-only
  whitespace) is decoded as text with ``errors="replace"`` and handed to ``json.loads``, as the reference;
* an op the inlined check does not accept is judged by ``validate_op`` itself (same reason string);
* a file with a carriage return anywhere is read by ``iter_history`` itself (text mode treats a lone
  ``\\r`` as a line break, which would change line numbers), and so is a file with a run of 19 or more
  digits (orjson turns integers beyond 64 bits into floats; ``json`` keeps them exact); when the fast
  path meets either only in a later block, what it reported by then is taken back.

Without orjson installed the reference reader is used.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

from harness.history import OP_TYPES, MalformedLine, iter_history, validate_op

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a project dependency
    orjson = None


_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))  # digits -> "0", anything else -> " "
_CHUNK = 1 << 20  # bytes of raw text read and checked at a time


def _has_big_int(data: bytes) -> bool:
    """Whether ``data`` has a run of 19 or more digits anywhere: orjson reads integers beyond 64 bits as
    floats where ``json`` keeps them exact, so such a file goes to the reference reader (a translate and
    a substring search, in chunks, far cheaper than parsing)."""
    run = b"0" * 19
    for start in range(0, len(data), _CHUNK):
        if run in data[start:start + _CHUNK + 18].translate(_DIGITS):
            return True
    return False


class NeedsReference(Exception):
    """The file has something only the reference reader reads right (a carriage return, a big integer)."""


def _line_blocks(fh, chunk: int):
    """Yield the file as lists of lines (without their newlines), about ``chunk`` bytes at a time.

    Reading in blocks instead of the whole file at once keeps only one block of raw text in memory: at
    1 M ops the whole text and its split lines were 450 MB that the process touched once and freed, and
    on this kind of machine page faults on fresh memory cost as much as parsing. Raises
    ``NeedsReference`` for a block with a carriage return or a run of 19 or more digits (a run cannot
    cross a newline, so checking each block of whole lines is exact)."""
    carry = b""
    while True:
        block = fh.read(chunk)
        if not block:
            break
        end = block.rfind(b"\n")
        if end < 0:
            carry += block
            continue
        whole = carry + block[:end] if carry else block[:end]
        carry = block[end + 1:]
        if b"\r" in whole or _has_big_int(whole):
            raise NeedsReference
        yield whole.split(b"\n")
    if b"\r" in carry or _has_big_int(carry):
        raise NeedsReference
    yield [carry]  # the text after the last newline (empty when the file ends with one)


def read_ops(path: str | os.PathLike, malformed: list[MalformedLine] | None = None,
             block_bytes: int = _CHUNK) -> list[dict]:
    """The valid ops of a JSONL history in file order (``iter_history``'s result as a list); bad lines are
    appended to ``malformed``. ``block_bytes``: how much raw text is read at a time."""
    path = str(path)
    if orjson is None:
        return list(iter_history(path, malformed))
    reported = len(malformed) if malformed is not None else 0
    try:
        return list(iter_ops(path, malformed, block_bytes))
    except NeedsReference:
        if malformed is not None:
            del malformed[reported:]  # what the fast path reported before it gave up
        return list(iter_history(path, malformed))


def iter_ops(path: str | os.PathLike, malformed: list[MalformedLine] | None = None,
             block_bytes: int = _CHUNK) -> Iterator[dict]:
    """``read_ops``'s ops one at a time, for a consumer that keeps only what it derives from them (the
    history is never all in memory). Raises ``NeedsReference``, possibly after ops were yielded, when
    the file needs the reference reader: the consumer then starts over with ``read_ops``."""
    for _, op, _ in iter_numbered(path, malformed, block_bytes):
        yield op


def iter_numbered(path: str | os.PathLike, malformed: list[MalformedLine] | None = None,
                  block_bytes: int = _CHUNK) -> Iterator[tuple[int, dict, bool]]:
    """``iter_ops`` with each op's line number and whether ``json`` read it (orjson refused the line:
    it may hold what orjson would not write back, such as NaN)."""
    path = str(path)
    if orjson is None:
        raise NeedsReference
    loads = orjson.loads
    types = OP_TYPES
    position = 0
    lineno = 0
    with open(path, "rb") as fh:
        for lines in _line_blocks(fh, block_bytes):
            for raw in lines:
                lineno += 1
                by_json = False
                try:
                    op = loads(raw)
                except orjson.JSONDecodeError:
                    text = raw.decode("utf-8", errors="replace").strip()
                    if not text:
                        continue
                    try:
                        op = json.loads(text)
                    except json.JSONDecodeError as exc:
                        if malformed is not None:
                            malformed.append(MalformedLine(path, lineno, f"invalid JSON ({exc.msg})"))
                        continue
                    by_json = True
                # Inlined validate_op for the common shape; anything else gets validate_op's own verdict.
                if not (type(op) is dict and op.get("type") in types and type(op.get("f")) is str
                        and type(op.get("time")) is int
                        and (type(op.get("process")) is int or op.get("process") == "nemesis")
                        and ("index" not in op or type(op["index"]) is int)):
                    reason = validate_op(op)
                    if reason is not None:
                        if malformed is not None:
                            malformed.append(MalformedLine(path, lineno, reason))
                        continue
                if "index" not in op:
                    op["index"] = position
                if "node" not in op:
                    op["node"] = None
                if "error" not in op:
                    op["error"] = None
                if "value" not in op:
                    op["value"] = None
                position += 1
                yield lineno, op, by_json
