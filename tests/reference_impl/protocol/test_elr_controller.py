"""KIP-966 on the controller: ELR/LKELR upkeep (K1, K2, K5, K12), election order (K3), unclean
registration (K4), MinISR gating of completion (K6); docs/protocol-rules.md 5.1 (its KIP-966 outcome) and
section 6 scenarios 21-24."""

from reference_impl.protocol.elr import balanced_recovery_leader, elr_invariant_violations, next_elr

from .controller_helpers import NO_LEADER, ap, cluster, current, epoch, state, with_partition


def k966(brokers=(1, 2, 3), **config):
    return cluster(brokers, min_isr=2, elr_enabled=True, **config)


def restart(ctl, b, *, clean: bool):
    """Broker b restarts: a new registration with (clean) or without (unclean, K4) its marker epoch."""
    if not ctl.brokers[b].fenced:
        ctl.apply(ctl.fence_broker(b))
    marker = ctl.brokers[b].epoch if clean else -1
    return ctl.apply(ctl.register_broker(b, f"restart-{b}-{ctl.next_offset}", previous_broker_epoch=marker))


def unfence(ctl, b):
    return ctl.apply(ctl.heartbeat(b, epoch(ctl, b), want_fence=False, want_shutdown=False,
                                   metadata_offset=ctl.next_offset, now_ms=0))


def test_lrs_kip966_column_of_5_1():
    ctl = with_partition(k966(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    ctl.apply(ctl.fence_broker(2))
    assert current(ctl) == state([1, 2, 3], [1, 3], 1, 1, 2)
    ctl.apply(ctl.fence_broker(3))  # step 2: ISR {1}, ELR {3}
    assert current(ctl) == state([1, 2, 3], [1], 1, 1, 3, elr=[3])
    ctl.apply(ctl.fence_broker(1))  # step 3: ISR empty, ELR {1,3}, no leader
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 2, 4, elr=[3, 1])
    restart(ctl, 1, clean=False)    # step 4: 1 has no marker -> ELR {3}, LKELR {1}
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 2, 5, elr=[3], lkelr=[1])
    unfence(ctl, 1)                 # 1 is not electable: not in the ISR nor the ELR
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 2, 5, elr=[3], lkelr=[1])
    unfence(ctl, 2)                 # only 2 heals: still leaderless (2 never entered the ELR)
    assert current(ctl).leader == NO_LEADER
    unfence(ctl, 3)                 # step 5: 3 is elected from the ELR (K3)
    assert current(ctl) == state([1, 2, 3], [3], 3, 3, 6, lkelr=[1])
    ctl.apply(ap(ctl, [3, 2]))      # 2 rejoins: ISR >= MinISR clears ELR and LKELR (K1, K5)
    assert current(ctl) == state([1, 2, 3], [3, 2], 3, 3, 7)
    assert ctl.invariant_violations() == []


def test_scenario21_clean_elr_recovery():
    ctl = with_partition(k966(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    ctl.apply(ap(ctl, [1, 3]))      # 2 removed: ISR {1,3}, ELR empty
    assert current(ctl) == state([1, 2, 3], [1, 3], 1, 1, 2)
    ctl.apply(ap(ctl, [1]))         # 3 removed: ISR {1}, ELR {3}
    assert current(ctl) == state([1, 2, 3], [1], 1, 1, 3, elr=[3])
    ctl.apply(ctl.fence_broker(1))  # crash-lossy 1: 3 elected from the ELR; [T] 1 waits in the ELR
    assert current(ctl) == state([1, 2, 3], [3], 3, 2, 4, elr=[1])
    restart(ctl, 1, clean=False)    # 1's unclean registration purges it (K4)
    assert current(ctl) == state([1, 2, 3], [3], 3, 2, 5, lkelr=[1])
    unfence(ctl, 1)
    ctl.apply(ap(ctl, [3, 1]))      # 1 catches up
    assert current(ctl) == state([1, 2, 3], [3, 1], 3, 2, 6)


def test_scenario22_unclean_restarts_fill_the_last_known_elr():
    ctl = with_partition(k966(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    ctl.apply(ctl.fence_broker(1))
    assert current(ctl) == state([1, 2, 3], [2, 3], 2, 2, 2)
    ctl.apply(ctl.fence_broker(2))
    assert current(ctl) == state([1, 2, 3], [3], 3, 3, 3, elr=[2])
    ctl.apply(ctl.fence_broker(3))
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 4, 4, elr=[2, 3])
    restart(ctl, 1, clean=False)    # lossy, but in neither ISR nor ELR: no partition change
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 4, 4, elr=[2, 3])
    restart(ctl, 2, clean=False)    # intact but no marker
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 4, 5, elr=[3], lkelr=[2])
    restart(ctl, 3, clean=False)
    p = current(ctl)
    assert p == state([1, 2, 3], [], NO_LEADER, 4, 6, lkelr=[2, 3])
    assert len(p.last_known_elr) == ctl.min_isr("t")  # K8 / I8: the MinISR recovery quorum


def test_scenario23_clean_restart_of_elr_member_is_elected():
    ctl = with_partition(k966(), state([1, 2, 3], [1, 2, 3], 1, 1, 1))
    for b in (1, 2, 3):
        ctl.apply(ctl.fence_broker(b))
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 4, 4, elr=[2, 3])
    restart(ctl, 3, clean=True)     # with its marker: registration as in v3.5
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 4, 4, elr=[2, 3])
    unfence(ctl, 3)
    assert current(ctl) == state([1, 2, 3], [3], 3, 5, 5, elr=[2])


def test_scenario24_elr_cleared_when_isr_reaches_min_isr():
    ctl = with_partition(k966(), state([1, 2, 3], [1], 1, 2, 4, elr=[2]))
    ctl.apply(ap(ctl, [1, 3]))
    assert current(ctl) == state([1, 2, 3], [1, 3], 1, 2, 5)


def test_k3_isr_member_preferred_over_elr_member():
    ctl = with_partition(cluster((1, 2, 3, 4), min_isr=3, elr_enabled=True),
                         state([1, 2, 3, 4], [1, 4], 1, 1, 1, elr=[2]))
    ctl.apply(ctl.fence_broker(1))
    assert current(ctl) == state([1, 2, 3, 4], [4], 4, 2, 2, elr=[2, 1])


def test_k6_min_isr_gates_completion_with_elr():
    ctl = with_partition(k966((1, 2, 3, 4)), state([1, 2, 3], [1], 1, 1, 1, elr=[2]))
    ctl.apply(ctl.alter_partition_reassignments({("t", 0): [1, 2, 4]}))
    assert current(ctl) == state([1, 2, 4, 3], [1], 1, 1, 2, adding=[4], removing=[3], elr=[2])
    ctl.apply(ap(ctl, [1, 4]))      # final ISR {1,4} >= 2: completes, ELR cleared
    assert current(ctl) == state([1, 2, 4], [1, 4], 1, 2, 3)


def test_clear_elr_handler():
    ctl = with_partition(k966(), state([1, 2, 3], [1], 1, 2, 4, elr=[2], lkelr=[3]))
    ctl.apply(ctl.clear_elr())
    assert current(ctl) == state([1, 2, 3], [1], 1, 2, 5)


def test_next_elr_pure_rules():
    assert next_elr([1, 2, 3], [], [], [1], [1, 2, 3], 2) == ([2, 3], [])              # K2 [T]: all leavers
    assert next_elr([1], [2, 3], [], [1, 2], [1, 2, 3], 3) == ([3], [])                # K12
    assert next_elr([], [2, 3], [], [], [1, 2, 3], 2, unclean_shutdown=[2]) == ([3], [2])  # K4
    assert next_elr([1], [2], [3], [1, 2], [1, 2, 3], 2) == ([], [])                   # K1/K5
    assert next_elr([1], [2, 4], [], [1], [1, 2, 3], 2) == ([2], [])                   # ELR within replicas
    assert elr_invariant_violations([1, 2, 3], [1, 2], [2], [], 3) != []
    assert elr_invariant_violations([1, 2, 3], [1, 2], [], [3], 2) != []
    assert elr_invariant_violations([1, 2, 3], [1], [2], [3], 2) == []


def test_scenario22_balanced_recovery_elects_the_most_complete_lkelr_member_k7():
    ctl = with_partition(k966(), state([1, 2, 3], [], NO_LEADER, 4, 6, lkelr=[2, 3]))
    for b in (1, 2, 3):
        ctl.apply(ctl.fence_broker(b))
        restart(ctl, b, clean=True)
        unfence(ctl, b)
    assert current(ctl) == state([1, 2, 3], [], NO_LEADER, 4, 6, lkelr=[2, 3])  # nobody electable (K10)
    waiting = ctl.balanced_unclean_recovery(("t", 0), {2: (3, 12)})  # 3 has not answered yet
    assert waiting.records == [] and waiting.response.name == "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    res = ctl.balanced_unclean_recovery(("t", 0), {2: (3, 12), 3: (3, 0)})  # 3 lost its log
    assert res.response.ok
    ctl.apply(res)
    assert current(ctl) == state([1, 2, 3], [2], 2, 5, 7, recovery="RECOVERING")
    assert balanced_recovery_leader([2, 3], {2: (3, 8), 3: (3, 8)}, [2, 3]) == 2  # tie: LKELR order
    # The most complete member answered but is fenced (registered again, not unfenced yet): wait for it
    # rather than elect a member missing what only it holds (the simulator found the loss this avoids).
    assert balanced_recovery_leader([2, 3], {2: (3, 8), 3: (4, 0)}, [2]) is None
    assert balanced_recovery_leader([2, 3], {2: (3, 8), 3: (4, 0)}, [2, 3]) == 3
    assert balanced_recovery_leader([2, 3], {2: (3, 8), 3: (3, 8)}, [3]) == 3     # tie: a live one
