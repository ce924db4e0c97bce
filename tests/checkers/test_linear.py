"""The linearizability engine: small known histories, crashed ops, the porcupine corpus, knossos parsing."""

import json
import os
import random
import subprocess
import sys
import time

import pytest

from checkers.linear.engine import check_partitions
from checkers.linear.formats import load, read_edn, to_partitions
from checkers.linear.knossos import parse_output, partition_to_edn, run_knossos
from checkers.linear.models import MODELS, UNKNOWN
from checkers.linear.wgl import INF, Operation, check_operations
from tests.support.synth import mutate, synth_history

# porcupine's test corpus (MIT; tests/data/porcupine/SOURCE.md says where it comes from).
CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "porcupine")
# porcupine_test.go (TestEtcdJepsen000..102): these files are linearizable, all others are not; 095 is absent
# from porcupine's tests (the etcd cluster failed to start).
ETCD_LINEARIZABLE = {2, 5, 7, 18, 25, 31, 38, 45, 48, 49, 51, 53, 56, 67, 75, 76, 80, 87, 92, 98, 100, 101, 102}
ETCD_FILES = [n for n in range(103) if n != 95]

reg = MODELS["register"]
cas = MODELS["cas-register"]


def W(call, ret, v):
    return Operation(call, ret, ("write", v), None)


def R(call, ret, v):
    return Operation(call, ret, ("read", None), v)


def test_classic_register_linearizable():
    # write 100 over [0,100]; read 100 over [25,75]; read 0 over [30,60]: read 0 may precede the write
    assert check_operations(reg, [W(0, 100, 100), R(25, 75, 100), R(30, 60, None)]).valid is True


def test_classic_register_not_linearizable():
    # read 200 over [10,30] then read 0 (initial) over [40,90]: the write cannot be undone
    res = check_operations(reg, [W(0, 100, 200), R(10, 30, 200), R(40, 90, None)])
    assert res.valid is False and res.reason == "no linearization"


def test_crashed_write_may_take_effect_or_not():
    crashed = Operation(0, INF, ("write", 1), None)
    assert check_operations(reg, [crashed, R(5, 6, 1)]).valid is True      # took effect
    assert check_operations(reg, [crashed, R(5, 6, None)]).valid is True   # or not (yet)
    # but once seen it cannot be unseen
    assert check_operations(reg, [crashed, R(5, 6, 1), R(7, 8, None)]).valid is False
    # and a value nobody wrote cannot be read
    assert check_operations(reg, [crashed, R(5, 6, 2)]).valid is False


def test_crashed_read_accepts_any_value():
    assert check_operations(reg, [W(0, 1, 1), Operation(2, INF, ("read", None), UNKNOWN)]).valid is True


def test_cas_register():
    ops = [W(0, 1, 0), Operation(2, 3, ("cas", (0, 5)), True), R(4, 5, 5)]
    assert check_operations(cas, ops).valid is True
    bad = [W(0, 1, 0), Operation(2, 3, ("cas", (0, 5)), False), R(4, 5, 0)]  # the compare would have matched
    assert check_operations(cas, bad).valid is False


def test_time_limit_gives_unknown_with_reason():
    # many concurrent writes and a read nobody wrote: exhaustive search; a deadline in the past stops it
    ops = [W(0, 100, i) for i in range(14)] + [R(50, 60, 99)]
    res = check_partitions("register", {None: ops}, time_limit_s=0.0)
    assert res["valid"] == "unknown" and "time limit" in res["reason"]


def test_kafka_log_model_on_synth_histories():
    ops = synth_history(300, seed=3, keys=3, p_gap=0.0)
    parts = to_partitions(ops, "kafka-log")
    assert check_partitions("kafka-log", parts, 30)["valid"] is True
    swapped, _ = mutate(ops, "swap-offsets", random.Random(2))
    assert check_partitions("kafka-log", to_partitions(swapped, "kafka-log"), 30)["valid"] is False


def test_kafka_log_read_of_unacknowledged_offset_is_fine_but_changed_value_is_not():
    ops = [Operation(0, 1, ("send", "a"), 0), Operation(2, 3, ("poll", ((0, "a"),)), None),
           Operation(4, INF, ("send", "b"), UNKNOWN), Operation(5, 6, ("poll", ((0, "a"), (1, "b"))), None)]
    assert check_operations(MODELS["kafka-log"], ops).valid is True
    ops.append(Operation(7, 8, ("poll", ((1, "c"),)), None))
    assert check_operations(MODELS["kafka-log"], ops).valid is False


def test_edn_input(tmp_path):
    text = "\n".join([
        '{:process 0, :type :invoke, :f :write, :value 1}',
        '{:process 0, :type :ok, :f :write, :value 1}',
        '{:process 1, :type :invoke, :f :read, :value nil}',
        '{:process 1, :type :ok, :f :read, :value 1}',
        '{:process 2, :type :invoke, :f :cas, :value [1 2]}',
        '{:process 2, :type :info, :f :cas, :value [1 2]}',
        '{:process 3, :type :invoke, :f :read, :value nil}',
        '{:process 3, :type :ok, :f :read, :value 2}'])
    ops = read_edn(text)
    assert ops[4] == {"process": 2, "type": "invoke", "f": "cas", "value": [1, 2], "index": 4, "time": 4}
    p = tmp_path / "h.edn"
    p.write_text(text)
    model, parts, _ = load(str(p), "auto", "auto")
    assert model == "cas-register"
    assert check_partitions(model, parts)["valid"] is True


@pytest.mark.parametrize("n", [0, 2, 5, 10, 18, 31, 57, 99])
def test_etcd_corpus_sample(n):
    model, parts, _ = load(f"{CORPUS}/jepsen/etcd_{n:03d}.log", "auto", "auto")
    assert check_partitions(model, parts, 60)["valid"] is (n in ETCD_LINEARIZABLE)


@pytest.mark.slow
@pytest.mark.parametrize("n", ETCD_FILES)
def test_etcd_corpus_all(n):
    model, parts, _ = load(f"{CORPUS}/jepsen/etcd_{n:03d}.log", "auto", "auto")
    assert check_partitions(model, parts, 120)["valid"] is (n in ETCD_LINEARIZABLE)


@pytest.mark.parametrize("name", ["c01-ok", "c01-bad", "c10-ok", "c10-bad", "c50-bad"])
def test_porcupine_kv(name):
    model, parts, _ = load(f"{CORPUS}/kv/{name}.txt", "auto", "auto")
    assert model == "kv"
    assert check_partitions(model, parts, 60)["valid"] is name.endswith("-ok")


@pytest.mark.slow
def test_porcupine_kv_c50_ok():
    model, parts, _ = load(f"{CORPUS}/kv/c50-ok.txt", "auto", "auto")
    assert check_partitions(model, parts, 120)["valid"] is True


def test_executable_exit_codes(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "checkers.linear", f"{CORPUS}/jepsen/etcd_002.log"],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and json.loads(ok.stdout)["valid"] is True
    bad = subprocess.run([sys.executable, "-m", "checkers.linear", f"{CORPUS}/kv/c01-bad.txt"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and json.loads(bad.stdout)["valid"] is False
    missing = subprocess.run([sys.executable, "-m", "checkers.linear", str(tmp_path / "none.jsonl")],
                             capture_output=True, text=True)
    assert missing.returncode == 255


RECORDED_KNOSSOS = """/tmp/a.edn\ttrue
/tmp/b.edn\tfalse
/tmp/c.edn\t:unknown
Oh jeez, I'm sorry. Something went wrong.
"""


def test_knossos_output_parsing():
    assert parse_output(RECORDED_KNOSSOS) == {"/tmp/a.edn": True, "/tmp/b.edn": False, "/tmp/c.edn": "unknown"}


def test_knossos_edn_export_round_trips_through_our_reader():
    ops = [W(0, 3, 1), Operation(1, INF, ("cas", (1, 2)), UNKNOWN), R(4, 5, 2)]
    edn = partition_to_edn(ops)
    back = read_edn(edn)
    assert [(o["type"], o["f"]) for o in back] == [("invoke", "write"), ("invoke", "cas"), ("ok", "write"),
                                                 ("invoke", "read"), ("ok", "read"), ("info", "cas")]
    parts = to_partitions(back, "cas-register")
    assert check_partitions("cas-register", parts)["valid"] is True


def test_knossos_adapter_with_a_stand_in_command(tmp_path):
    """Knossos is not installed here: a stand-in prints knossos.cli's output format for each file."""
    script = tmp_path / "fake_knossos.py"
    script.write_text("import sys\nfiles=[a for a in sys.argv[1:] if a.endswith('.edn')]\n"
                      "print('\\n'.join(f + '\\tfalse' for f in files))\n")
    res = run_knossos([sys.executable, str(script)], "register", {None: [W(0, 1, 1)]}, 30)
    assert res["valid"] is False and res["engine"] == "knossos"
    assert run_knossos([sys.executable, str(script)], "kafka-log", {}, 30)["valid"] == "unknown"
    gone = run_knossos([str(tmp_path / "no-such-knossos")], "register", {None: [W(0, 1, 1)]}, 30)
    assert gone["valid"] == "unknown" and "cannot run knossos" in gone["reason"]


def test_linear_checker_subprocess_in_check_run(tmp_path):
    from checkers.analysis import check_run
    path = tmp_path / "h.jsonl"
    with open(path, "w") as fh:
        for op in synth_history(100, seed=4, p_gap=0.0):
            fh.write(json.dumps(op) + "\n")
    t = time.monotonic()
    res = check_run({}, str(path), None)
    assert res["checkers"]["linear"]["valid"] is True, res["checkers"]["linear"]
    assert time.monotonic() - t < 30
    assert os.path.exists(path)


def test_kafka_log_prepare_canonicalises_crashed_sends():
    m = MODELS["kafka-log"]
    crashed_read = Operation(0, INF, ("send", "x"), UNKNOWN)
    crashed_unread = Operation(1, INF, ("send", "y"), UNKNOWN)
    ops = [crashed_read, crashed_unread, Operation(2, 3, ("send", "z"), 1),
           Operation(4, 5, ("poll", ((0, "x"), (1, "z"))), None)]
    prepared = m.prepare(ops)
    assert [op.inp for op in prepared][0] == ("send", "x")
    assert prepared[0].out == 0                      # forced to the offset it was read at
    assert all(op.inp != ("send", "y") for op in prepared)  # no hole: the unread crash is dropped
    assert check_operations(m, ops).valid is True
    # with a hole at offset 0 the unread crashed send is kept: it may be the one that filled it
    holey = [crashed_unread, Operation(2, 3, ("send", "z"), 1)]
    assert len(m.prepare(holey)) == 2
    assert check_partitions("kafka-log", {0: holey})["valid"] is True


def test_linear_checker_defers_to_the_profile(tmp_path):
    from checkers.linear.runner import LinearChecker
    ops = synth_history(60, seed=5, keys=1, p_gap=0.0)
    swapped, _ = mutate(ops, "swap-offsets", random.Random(1))
    strict = LinearChecker(time_limit_s=30).check({}, swapped, [])
    assert strict["valid"] is False and strict["status"] == "forbidden" and strict.get("counted", True)
    lossy = LinearChecker(time_limit_s=30).check({"acks": 1}, swapped, [])
    assert lossy["valid"] is False and lossy["status"] == "allowed" and lossy["counted"] is False


def _lrs_history(final_value: dict, ends: dict | None) -> list[dict]:
    """Last Replica Standing (v3.5) shape: three acknowledged sends at offsets 0-2 of key 0, then a final
    read (fresh process, from the beginning) that returns ``final_value`` with end offsets ``ends``."""
    ops: list[dict] = []

    def emit(op):
        op.update(index=len(ops), time=len(ops) * 10)
        ops.append(op)

    for o, v in enumerate((1, 2, 3)):
        emit({"type": "invoke", "process": 0, "f": "send", "value": [0, v]})
        emit({"type": "ok", "process": 0, "f": "send", "value": [0, [o, v]]})
    emit({"type": "invoke", "process": "nemesis", "f": "kill", "value": None})
    emit({"type": "info", "process": "nemesis", "f": "kill", "value": None})
    emit({"type": "invoke", "process": 1, "f": "poll", "value": None, "final": True})
    comp = {"type": "ok", "process": 1, "f": "poll", "value": final_value, "final": True}
    if ends is not None:
        comp["ends"] = ends
    emit(comp)
    return ops


def test_kafka_log_empty_final_read_after_acknowledged_sends_is_not_linearizable():
    # The blind spot seen in the LRS v3.5 reproduction: the final read reads key 0 from the beginning up to
    # its end offset 0 and returns nothing, after three sends were acknowledged at offsets 0-2.
    lost = check_partitions("kafka-log", to_partitions(_lrs_history({"0": []}, {"0": 0}), "kafka-log"), 30)
    assert lost["valid"] is False, lost
    assert lost["keys"]["0"]["valid"] is False
    # The same shape with the records present is linearizable.
    kept = _lrs_history({"0": [[0, 1], [1, 2], [2, 3]]}, {"0": 3})
    assert check_partitions("kafka-log", to_partitions(kept, "kafka-log"), 30)["valid"] is True
    # A final read that stops short of its end offset, or skips an offset below it, is not a full read.
    short = _lrs_history({"0": [[0, 1], [1, 2]]}, {"0": 3})
    assert check_partitions("kafka-log", to_partitions(short, "kafka-log"), 30)["valid"] is False
    gap = _lrs_history({"0": [[0, 1], [2, 3]]}, {"0": 3})
    assert check_partitions("kafka-log", to_partitions(gap, "kafka-log"), 30)["valid"] is False
    # Without end offsets a final read is an ordinary poll (a range of the log): nothing read is no proof.
    plain = _lrs_history({"0": []}, None)
    assert check_partitions("kafka-log", to_partitions(plain, "kafka-log"), 30)["valid"] is True


def test_kafka_log_final_read_may_precede_a_crashed_send():
    # A crashed (info) send nobody read may take effect after the final read's end offsets were taken.
    ops = _lrs_history({"0": [[0, 1], [1, 2], [2, 3]]}, {"0": 3})
    ops[-2:-2] = [{"type": "invoke", "process": 2, "f": "send", "value": [0, 9], "index": -1, "time": 0}]
    for i, op in enumerate(ops):
        op["index"] = i
    assert check_partitions("kafka-log", to_partitions(ops, "kafka-log"), 30)["valid"] is True


def test_linear_checker_on_the_lrs_shape_defers_to_the_profile():
    from checkers.linear.runner import LinearChecker
    ops = _lrs_history({"0": []}, {"0": 0})
    strict = LinearChecker(time_limit_s=30).check({"variant": "kip966"}, ops, [])
    assert strict["valid"] is False and strict["status"] == "forbidden"


def _gaps(ops):
    """Check one partition with the gap-tolerant log (prepare renumbers, as check_partitions does)."""
    model = MODELS["kafka-log-gaps"]
    return check_operations(model, model.prepare(ops)).valid


def test_log_with_gaps_accepts_skipped_offsets_that_the_dense_log_refuses():
    ops = [Operation(0, 1, ("send", "a"), 0), Operation(2, 3, ("send", "b"), 2),  # 1: a commit marker
           Operation(4, 5, ("poll", ((0, "a"), (2, "b"))), None),
           Operation(6, 7, ("final-poll", (((0, "a"), (2, "b")), 4)), None)]
    assert _gaps(ops) is True
    assert check_partitions("kafka-log", {0: ops}, 10)["valid"] is False


@pytest.mark.parametrize("case", ["offset-goes-back", "changed-value", "final-read-misses-one",
                                  "append-below-a-seen-end", "lost-prefix", "phantom-record"])
def test_log_with_gaps_still_refuses(case):
    a, b = Operation(0, 1, ("send", "a"), 3), Operation(2, 3, ("send", "b"), 7)
    ops = {
        # b was invoked after a was acknowledged, yet got a lower offset
        "offset-goes-back": [a, Operation(2, 3, ("send", "b"), 1)],
        "changed-value": [a, b, Operation(4, 5, ("poll", ((3, "a"), (7, "c"))), None)],
        "final-read-misses-one": [a, b, Operation(4, 5, ("final-poll", (((7, "b"),), 9)), None)],
        # the final read saw the log end at 9; c, invoked afterwards, cannot land below it
        "append-below-a-seen-end": [a, b, Operation(4, 5, ("final-poll", (((3, "a"), (7, "b")), 9)), None),
                                    Operation(6, 7, ("send", "c"), 8)],
        "lost-prefix": [a, b, Operation(4, 5, ("final-poll", ((), 0)), None)],
        "phantom-record": [a, Operation(2, 3, ("poll", ((5, "x"),)), None)],
    }[case]
    assert _gaps(ops) is False


def test_log_with_gaps_places_crashed_sends_by_what_was_read():
    ops = [Operation(0, 1, ("send", "a"), 10), Operation(2, INF, ("send", "b"), UNKNOWN),
           Operation(3, INF, ("send", "lost"), UNKNOWN),  # never read: dropped
           Operation(4, 5, ("final-poll", (((10, "a"), (12, "b")), 13)), None)]
    assert _gaps(ops) is True
    ops[-1] = Operation(4, 5, ("final-poll", (((10, "a"),), 13)), None)  # b was read before, not now
    ops.insert(2, Operation(3, 4, ("poll", ((12, "b"),)), None))
    assert _gaps(ops) is False


def test_queue_histories_with_transactions_get_the_log_with_gaps():
    ops = synth_history(300, seed=4, keys=2, p_txn=0.3, p_gap=0.2)
    from checkers.linear.formats import detect_model

    assert detect_model(ops) == "kafka-log-gaps"
    assert detect_model([op for op in ops if op["f"] != "txn"]) == "kafka-log"
    parts = to_partitions(ops, "kafka-log-gaps")
    assert check_partitions("kafka-log-gaps", parts, 30)["valid"] is True
    assert check_partitions("kafka-log", parts, 30)["valid"] is False  # the gaps are real
    swapped, _ = mutate(ops, "swap-offsets", random.Random(2))
    assert check_partitions("kafka-log-gaps", to_partitions(swapped, "kafka-log-gaps"), 30)["valid"] is False


def test_jsonl_is_read_as_the_other_checkers_read_it(tmp_path):
    # Same ops as checkers.history.jsonl.read_ops: a torn line and an op without a valid time are skipped
    # (kraftcheck check reports them), the rest is checked.
    from checkers.history.jsonl import read_ops

    ops = synth_history(60, seed=2, keys=1)
    lines = [json.dumps(op) for op in ops]
    lines.insert(5, '{"type": "ok", "process": 0, "f": "send"')
    lines.insert(9, json.dumps({"type": "ok", "process": 1, "f": "poll", "time": "soon", "value": {"0": [[0, 99]]}}))
    path = tmp_path / "h.jsonl"
    path.write_text("\n".join(lines) + "\n")
    model, parts, got = load(str(path), "auto", "auto")
    assert got == read_ops(path) and len(got) == len(ops)
    assert model == "kafka-log-gaps" and check_partitions(model, parts, 30)["valid"] is True


class _NoShortcut:
    """The same model without ``observes``: the search then tries every order."""

    def __init__(self, model):
        self.model = model
        self.name = model.name

    def init(self):
        return self.model.init()

    def step(self, state, inp, out):
        return self.model.step(state, inp, out)


def test_taking_observers_first_never_changes_a_verdict():
    # Random small cas-register histories with crashed ops: the search that takes reads and failed cas
    # ops as soon as they are legal agrees with the exhaustive one, on both verdicts.
    rng = random.Random(17)
    verdicts = set()
    for _ in range(400):
        ops = []
        for _ in range(rng.randint(4, 10)):
            call = rng.randint(0, 40)
            ret = INF if rng.random() < 0.15 else call + rng.randint(1, 15)
            kind = rng.choice(["read", "read", "write", "cas"])
            if kind == "read":
                ops.append(Operation(call, ret, ("read", None), UNKNOWN if ret == INF else rng.choice([None, 0, 1, 2])))
            elif kind == "write":
                ops.append(Operation(call, ret, ("write", rng.randint(0, 2)), None))
            else:
                ops.append(Operation(call, ret, ("cas", (rng.randint(0, 2), rng.randint(0, 2))),
                                     UNKNOWN if ret == INF else rng.choice([True, False])))
        fast = check_operations(cas, ops).valid
        assert fast == check_operations(_NoShortcut(cas), ops).valid
        verdicts.add(fast)
    assert verdicts == {True, False}


def _precedes(a: Operation, b: Operation) -> bool:
    """Real-time order as the search reads it: ``a`` completed before ``b`` was invoked (at the same
    instant too, unless ``a`` itself took no time)."""
    return a.ret < b.call or (a.ret == b.call and a.ret != a.call)


def _linearizable_by_definition(model, ops: list[Operation]) -> bool:
    """Some order of all ops that respects real-time order is a legal run of ``model``: every op placed
    next must have no unplaced op that precedes it. Exhaustive, memoised on (placed set, state) only."""
    n = len(ops)
    before = [[j for j in range(n) if j != i and _precedes(ops[j], ops[i])] for i in range(n)]
    failed = set()

    def extend(placed: frozenset, state) -> bool:
        if len(placed) == n:
            return True
        if (placed, state) in failed:
            return False
        for i in range(n):
            if i not in placed and all(j in placed for j in before[i]):
                ok, new_state = model.step(state, ops[i].inp, ops[i].out)
                if ok and extend(placed | {i}, new_state):
                    return True
        failed.add((placed, state))
        return False

    return extend(frozenset(), model.init())


def _random_cas_history(rng: random.Random) -> list[Operation]:
    ops = []
    for _ in range(rng.randint(3, 9)):
        call = rng.randint(0, 30)
        ret = INF if rng.random() < 0.3 else call + rng.randint(0, 12)  # 0: an op that takes no time
        kind = rng.choice(["read", "write", "write", "cas"])
        if kind == "read":
            ops.append(Operation(call, ret, ("read", None), UNKNOWN if ret == INF else rng.choice([None, 0, 1])))
        elif kind == "write":  # few values: crashed writes of the same value (interchangeable) are common
            ops.append(Operation(call, ret, ("write", rng.randint(0, 1)), UNKNOWN if ret == INF else None))
        else:
            ops.append(Operation(call, ret, ("cas", (rng.randint(0, 1), rng.randint(0, 1))),
                                 UNKNOWN if ret == INF else rng.choice([True, False])))
    return ops


def test_search_agrees_with_the_definition_on_random_histories():
    # The search's shortcuts (observers taken at once, interchangeable crashed ops tried once, the
    # memo) against an exhaustive search of the definition, on histories with crashed ops, ops of zero
    # duration and repeated values; both verdicts must occur, and crashed twins must be common.
    rng = random.Random(23)
    verdicts = []
    with_twins = 0
    for _ in range(600):
        ops = _random_cas_history(rng)
        crashed = [(op.inp, op.out) for op in ops if op.ret == INF]
        with_twins += len(set(crashed)) < len(crashed)
        got = check_operations(cas, ops).valid
        assert got == _linearizable_by_definition(cas, ops), ops
        verdicts.append(got)
    assert verdicts.count(True) > 60 and verdicts.count(False) > 60 and with_twins > 60


def test_an_op_of_zero_duration_is_linearized_between_its_neighbours():
    # Invoked and completed at the same instant: it can still be linearized (its completion comes after
    # its own invocation), and an op that completed at that instant precedes it.
    assert check_operations(reg, [W(0, 5, 1), W(5, 5, 2), R(6, 7, 2)]).valid is True
    assert check_operations(reg, [W(0, 5, 1), W(5, 5, 2), R(6, 7, 1)]).valid is False


@pytest.mark.parametrize("name", ["register", "cas-register", "kv"])
def test_wanted_state_names_exactly_the_states_where_an_observer_is_legal(name):
    # The search skips an observer by ``wants != state`` without calling step: that must never skip a
    # legal op, and where a model names no single state the op must be left to step.
    model = MODELS[name]
    read = "get" if name == "kv" else "read"
    states = [None, 0, 1, 2, True, 1.0, "", "a", "ab", (1,)]
    checked = 0
    for out in states + [UNKNOWN]:
        wanted = model.wanted_state((read, None), out)
        for state in states:
            legal = model.step(state, (read, None), out)[0]
            if wanted is None:
                assert out is UNKNOWN
            else:
                checked += 1
                assert legal == (wanted[0] == state), (out, state)
    assert checked > 50
    if name == "cas-register":  # a failed cas observes, but is legal in many states: none named
        assert model.wanted_state(("cas", (1, 2)), False) is None


def test_unknown_output_survives_pickling_as_the_singleton():
    import pickle
    op = pickle.loads(pickle.dumps(Operation(0, INF, ("send", 5), UNKNOWN)))
    assert op.out is UNKNOWN
