"""checkers.history.jsonl.read_ops returns exactly what harness.history.iter_history returns."""

import json

import pytest

from checkers.history.jsonl import read_ops
from harness.history import iter_history
from tests.support.synth import synth_history


def _both(path, block_bytes=1 << 20):
    bad_ref, bad_fast = [], []
    ref = list(iter_history(path, bad_ref))
    fast = read_ops(path, bad_fast, block_bytes)
    return ref, fast, bad_ref, bad_fast


def test_same_ops_on_a_synthetic_history(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(op) + "\n" for op in synth_history(300, seed=7)))
    ref, fast, bad_ref, bad_fast = _both(path)
    assert fast == ref and len(fast) > 500
    assert [list(op) for op in fast] == [list(op) for op in ref]  # same keys in the same order
    assert bad_ref == bad_fast == []


LINES = [
    '{"type": "invoke", "process": 0, "f": "send", "time": 1, "value": [0, 1]}',  # no index: position
    '',
    '   ',
    '{"type": "ok", "process": 0, "f": "send", "time": 2, "value": [0, [0, 1]], "index": 7}',
    '{"type": "ok", "process": 0, "f": "send", "time": 2',                          # torn line
    '{"type": "bogus", "process": 0, "f": "send", "time": 3}',                      # bad type
    '{"type": "ok", "process": true, "f": "send", "time": 3}',                      # bad process
    '{"type": "ok", "process": "nemesis", "f": 5, "time": 3}',                      # bad f
    '{"type": "ok", "process": 1, "f": "poll", "time": 3.5}',                       # bad time
    '{"type": "ok", "process": 1, "f": "poll", "time": 4, "index": "x"}',           # bad index
    '{"type": "ok", "process": 1, "f": "poll", "time": 4, "index": true}',          # bool index: valid
    '[1, 2]',                                                                       # not an object
    '{"type": "info", "process": 1, "f": "poll", "time": 5, "value": NaN}',         # json accepts NaN
    '{"type": "info", "process": 1, "f": "poll", "time": 6, "value": 1e400}',          # json: inf
    '{"type": "ok", "process": 2, "f": "poll", "time": 7, "value": "caf\u00e9", "x": 1, "x": 2}',
    '\u00a0',                                                                        # Unicode-only space
    '{"type": "ok", "process": 2, "f": "poll", "time": 8, "value": "\\ud800"}',     # lone surrogate
]


@pytest.mark.parametrize("block_bytes", [1 << 20, 7, 64])
@pytest.mark.parametrize("ending", ["\n", ""])
def test_same_ops_and_malformed_reasons_on_odd_lines(tmp_path, ending, block_bytes):
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(LINES) + ending, encoding="utf-8")
    with open(path, "ab") as fh:
        fh.write(b'\n{"type": "ok", "process": 3, "f": "poll", "time": 9, "value": "\xff"}\n')  # bad UTF-8
    ref, fast, bad_ref, bad_fast = _both(path, block_bytes)  # small blocks: lines cross block ends
    assert json.dumps(fast) == json.dumps(ref)
    assert bad_fast == bad_ref and len(bad_ref) == 7


def test_carriage_returns_use_the_reference_reader(tmp_path):
    path = tmp_path / "cr.jsonl"
    path.write_bytes(b'{"type": "invoke", "process": 0, "f": "send", "time": 1}\r\n{"type": "ok"\r'
                     b'{"type": "ok", "process": 0, "f": "send", "time": 2}\n')
    ref, fast, bad_ref, bad_fast = _both(path)
    assert fast == ref and bad_fast == bad_ref and len(bad_ref) == 1


def test_integers_beyond_64_bits_stay_exact(tmp_path):
    # orjson would read this value as a float; the file goes to the reference reader instead.
    path = tmp_path / "big.jsonl"
    path.write_text('{"type": "ok", "process": 0, "f": "poll", "time": 1, "value": 123456789012345678901234567890}\n')
    ref, fast, bad_ref, bad_fast = _both(path)
    assert fast == ref and fast[0]["value"] == 123456789012345678901234567890


@pytest.mark.parametrize("block_bytes", [16, 200])
def test_a_late_block_that_needs_the_reference_reader_takes_back_what_was_reported(tmp_path, block_bytes):
    # A torn line in the first blocks is reported by the fast path, which then meets a carriage return
    # (or a big integer) further on: the reference reader reads the whole file and reports it once.
    head = '{"type": "ok", "process": 0, "f": "send", "time": 2\n' + "".join(
        json.dumps(op) + "\n" for op in synth_history(20, seed=3))
    for tail in ('{"type": "ok", "process": 0, "f": "poll", "time": 1}\r\n',
                 '{"type": "ok", "process": 0, "f": "poll", "time": 1, "value": 12345678901234567890123}'):
        path = tmp_path / "late.jsonl"
        path.write_text(head + tail)
        ref, fast, bad_ref, bad_fast = _both(path, block_bytes)
        assert fast == ref and bad_fast == bad_ref and len(bad_ref) == 1 and bad_ref[0].line == 1


def test_lines_longer_than_a_block(tmp_path):
    ops = synth_history(50, seed=4)
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(op) + "\n" for op in ops))
    ref, fast, bad_ref, bad_fast = _both(path, 5)
    assert fast == ref and len(fast) == len(ops) and bad_fast == bad_ref == []


def test_iter_ops_yields_read_ops_one_at_a_time_and_gives_up_late(tmp_path):
    from checkers.history.jsonl import NeedsReference, iter_ops

    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(op) + "\n" for op in synth_history(40, seed=5)))
    assert list(iter_ops(path, block_bytes=64)) == read_ops(path)
    with open(path, "a") as fh:
        fh.write('{"type": "ok", "process": 0, "f": "poll", "time": 1}\r\n')
    seen = []
    with pytest.raises(NeedsReference):
        for op in iter_ops(path, block_bytes=64):
            seen.append(op)
    assert seen  # ops came before the carriage return was met
