"""The recovery checker: once every fault is healed, a final read must complete."""

from checkers.recovery import RecoveryChecker


def _op(i, process, f, type_, **extra):
    return {"index": i, "time": i, "process": process, "f": f, "type": type_, **extra}


def _final(i, type_, error=None):
    return [_op(i, 9, "poll", "invoke", final=True), _op(i + 1, 9, "poll", type_, final=True, error=error)]


def check(history):
    return RecoveryChecker().check({}, history, [])


def test_a_completed_final_read_is_recovery():
    history = [_op(0, "nemesis", "heal", "invoke"), _op(1, "nemesis", "heal", "ok"),
               *_final(2, "info", "timeout"), *_final(4, "ok")]
    assert check(history)["valid"] is True


def test_no_final_read_after_a_successful_heal_is_a_failure_to_recover():
    history = [_op(0, "nemesis", "heal", "invoke"), _op(1, "nemesis", "heal", "ok"),
               *_final(2, "info", "KafkaTimeoutError: Unable to bootstrap"), *_final(4, "info", "same")]
    result = check(history)
    assert result["valid"] is False and "did not recover" in result["reason"] and result["final_reads"] == 2
    assert "Unable to bootstrap" in result["errors"][0]


def test_without_faults_the_final_read_must_complete_too():
    assert check(_final(0, "info", "timeout"))["valid"] is False


def test_a_heal_that_did_not_complete_leaves_it_unknown():
    history = [_op(0, "nemesis", "heal", "invoke"), _op(1, "nemesis", "heal", "info"), *_final(2, "info")]
    assert check(history)["valid"] == "unknown"


def test_a_history_without_a_final_phase_is_not_checked():
    result = check([_op(0, 1, "send", "invoke"), _op(1, 1, "send", "ok")])
    assert result["valid"] is True and result["checked"] is False
