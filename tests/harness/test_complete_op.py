"""The op completion rule (``harness.history.complete_op``) and its table ``COMPLETED_FIELDS``."""

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.history import (
    COMPLETED_FIELDS,
    FROM_COMPLETION,
    FROM_EITHER,
    FROM_INVOCATION,
    complete_op,
    completed_ops,
)

SEND = {"index": 4, "time": 100, "type": "invoke", "process": 2, "f": "send", "value": [1, 77], "node": "b1",
        "error": None}


def test_an_ok_completion_gives_what_came_back_and_keeps_what_was_asked():
    done = {**SEND, "index": 9, "time": 250, "type": "ok", "value": [1, [3, 77]], "hwm": {"1": 4}}
    op = complete_op(SEND, done)
    assert (op["index"], op["time"], op["type"], op["value"], op["hwm"]) == (9, 250, "ok", [1, [3, 77]], {"1": 4})
    assert (op["invoke_index"], op["invoke_time"], op["invoke_value"], op["complete_time"]) == (4, 100, [1, 77], 250)
    assert (op["process"], op["f"], op["node"]) == (2, "send", "b1")


def test_an_info_or_fail_completion_keeps_its_own_value_even_when_it_differs_from_the_invocation():
    for typ, value, error in (("info", None, "timeout"), ("fail", [1, 77], "RecordTooLarge"),
                              ("info", "garbled", "client returned nonsense")):
        op = complete_op(SEND, {**SEND, "index": 5, "time": 180, "type": typ, "value": value, "error": error})
        assert (op["type"], op["value"], op["error"], op["invoke_value"]) == (typ, value, error, [1, 77])


def test_an_op_never_completed_is_info_named_by_its_invocation_with_nothing_back():
    asked = {**SEND, "hwm": {"1": 3}, "ends": {"1": 3}, "error": "stale"}
    op = complete_op(asked, None)
    assert (op["index"], op["time"], op["type"]) == (4, 100, "info")
    assert (op["value"], op["error"], op["hwm"], op["ends"], op["rebalance_log"], op["complete_time"]) == (
        None, None, None, None, None, None)
    assert (op["invoke_index"], op["invoke_time"], op["invoke_value"]) == (4, 100, [1, 77])


def test_outcome_fields_come_from_the_completion_alone():
    asked = {**SEND, "f": "poll", "value": None, "hwm": {"1": 1}, "rebalance_log": [{"keys": [1]}]}
    op = complete_op(asked, {"index": 6, "time": 120, "type": "ok", "process": 2, "f": "poll",
                             "value": {"1": [[0, 77]]}})
    assert (op["hwm"], op["ends"], op["rebalance_log"], op["error"]) == (None, None, None, None)
    assert op["node"] == "b1"  # other fields: the invocation's where the completion has none


def test_final_and_seek_are_true_when_either_op_says_so_and_other_fields_are_the_completions():
    assign = {**SEND, "f": "assign", "value": [0, 1], "seek_to_beginning": True, "final": True, "key": "a"}
    op = complete_op(assign, {**assign, "index": 5, "time": 101, "type": "ok", "final": False,
                              "seek_to_beginning": None, "key": "b"})
    assert op["final"] is True and op["seek_to_beginning"] is True and op["key"] == "b"
    op = complete_op({**SEND, "f": "poll"}, {**SEND, "f": "poll", "index": 5, "type": "ok", "final": True})
    assert op["final"] is True and op.get("seek_to_beginning") is not True
    assert complete_op({**SEND, "final": "yes"}, None)["final"] is False  # only a JSON true marks an op


def test_the_invocations_f_names_an_op_whose_completion_disagrees():
    op = complete_op(SEND, {**SEND, "index": 5, "type": "ok", "f": "poll"})
    assert op["f"] == "send"


def test_neither_input_is_changed():
    invoke, completion = dict(SEND), {**SEND, "index": 5, "time": 130, "type": "info", "value": None}
    complete_op(invoke, completion)
    complete_op(invoke, None)
    assert invoke == SEND and completion == {**SEND, "index": 5, "time": 130, "type": "info", "value": None}


def test_completed_ops_pairs_by_process_and_completes_each_invocation_in_invocation_order():
    ops = [{**SEND, "index": 0, "time": 1}, {**SEND, "index": 1, "time": 2, "process": 3, "value": [1, 78]},
           {**SEND, "index": 2, "time": 3, "process": 3, "type": "ok", "value": [1, [0, 78]]},
           {**SEND, "index": 3, "time": 4, "type": "fail", "value": [1, 77], "error": "refused"}]
    got = [(op["index"], op["invoke_index"], op["type"], op["value"]) for op in completed_ops(ops)]
    assert got == [(3, 0, "fail", [1, 77]), (2, 1, "ok", [1, [0, 78]])]


# ---------------------------------------------------------------------------------- the table, generated
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["true", "x"]),
                    st.lists(st.integers(0, 3), max_size=2), st.dictionaries(st.sampled_from("12"), st.integers(0, 5),
                                                                            max_size=2))
_OPTIONAL = ("value", "error", "node", "final", "seek_to_beginning", "hwm", "ends", "rebalance_log", "key", "extra")


@st.composite
def _op(draw, type_):
    op = {"index": draw(st.integers(0, 50)), "time": draw(st.integers(0, 10**6)), "type": type_, "process": 1,
          "f": draw(st.sampled_from(["send", "poll", "assign", "read"]))}
    for name in draw(st.lists(st.sampled_from(_OPTIONAL), unique=True)):
        op[name] = draw(_VALUES)
    return op


def _by_table(invoke: dict, completion: dict | None) -> dict:
    """The completed op as ``COMPLETED_FIELDS`` states it, read literally."""
    out = {k: v for k, v in invoke.items()}
    out.update(completion or {})
    for name, (source, field, missing) in COMPLETED_FIELDS.items():
        if source == FROM_INVOCATION:
            out[name] = invoke.get(field)
        elif source == FROM_EITHER:
            out[name] = invoke.get(field) is True or (completion is not None and completion.get(field) is True)
        elif completion is not None:
            out[name] = completion.get(field)
        else:
            assert source == FROM_COMPLETION
            out[name] = invoke.get(field) if missing == FROM_INVOCATION else missing
    return out


@settings(max_examples=400, deadline=None)
@given(_op("invoke"), st.one_of(st.none(), st.sampled_from(["ok", "fail", "info"]).flatmap(_op)))
def test_complete_op_is_its_table(invoke, completion):
    if completion is not None:
        completion = {**completion, "process": invoke["process"]}  # a completion of the same process
    expected = _by_table(invoke, completion)
    op = complete_op(invoke, completion)
    eithers = [name for name, (source, _, _) in COMPLETED_FIELDS.items() if source == FROM_EITHER]
    for name in set(expected) | set(op):
        if name in eithers:
            assert (op.get(name) is True) == expected[name], name
        else:
            assert op.get(name) == expected.get(name), name  # an absent field reads as None
