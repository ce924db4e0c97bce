"""The partition-change builder on its own (pure logic): "unchanged" by default, exact no-op detection,
C2 epochs, C6 v3.5 non-empty ISR, C11/K3 candidate order, C12 unclean, C17 completion rules."""

from reference_impl.protocol.partition_change import (
    CompletionRule,
    Election,
    PartitionChangeBuilder,
    preview,
    reassignment_completion,
)
from reference_impl.protocol.records import NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord

from .controller_helpers import state


def builder(p, live=(1, 2, 3, 4, 5), **kw):
    kw.setdefault("min_isr", 2)
    return PartitionChangeBuilder(p, "tid", 0, lambda b: b in live, **kw)


def test_nothing_requested_means_no_record():
    p = state([1, 2, 3], [1, 2, 3], 1, 1, 1)
    b = builder(p)
    assert b.build() is None and b.trace == []
    assert builder(p).set_target_isr([1, 2, 3]).build() is None
    assert p == state([1, 2, 3], [1, 2, 3], 1, 1, 1)  # the builder never mutates


def test_isr_only_change_record_has_only_the_isr():
    p = state([1, 2, 3], [1, 2, 3], 1, 1, 1)
    rec = builder(p).set_target_isr([1, 2]).build()
    assert rec == PartitionChangeRecord("tid", 0, isr=(1, 2))
    assert preview(p, rec) == state([1, 2, 3], [1, 2], 1, 1, 2)


def test_leader_change_bumps_leader_epoch_c2():
    p = state([1, 2, 3], [1, 2, 3], 1, 1, 1)
    rec = builder(p, live=(2, 3)).set_target_isr([2, 3]).build()
    assert rec == PartitionChangeRecord("tid", 0, leader=2, isr=(2, 3), leader_epoch_bump=True)


def test_v35_last_isr_member_stays_c6():
    p = state([1, 2, 3], [1], 1, 1, 3)
    rec = builder(p, live=(2, 3)).set_target_isr([]).build()
    assert rec == PartitionChangeRecord("tid", 0, leader=NO_LEADER, leader_epoch_bump=True)


def test_kip966_isr_may_empty_and_elr_member_elected_k3():
    p = state([1, 2, 3], [1], 1, 1, 3, elr=[3])
    rec = builder(p, live=(3,), elr_enabled=True).set_target_isr([]).build()
    # 3 (ELR, live) is elected and joins the ISR; 1 (fenced leaver) waits in the ELR.
    assert preview(p, rec) == state([1, 2, 3], [3], 3, 2, 4, elr=[1])


def test_preferred_election_and_keep_valid_leader():
    p = state([1, 2, 3], [1, 2, 3], 2, 2, 3)
    assert preview(p, builder(p).set_election(Election.PREFERRED).build()).leader == 1
    assert builder(p).build() is None  # ONLINE keeps a valid leader (C11)
    assert builder(p, live=(2, 3)).set_election(Election.PREFERRED).build() is None  # 1 not live: keep 2


def test_unclean_election_marks_recovering_c12():
    p = state([1, 2, 3], [1], NO_LEADER, 2, 4)
    assert builder(p, live=(3,)).build() is None
    rec = builder(p, live=(3,)).set_election(Election.UNCLEAN).build()
    assert preview(p, rec) == state([1, 2, 3], [3], 3, 3, 5, recovery="RECOVERING")


def test_named_unclean_leader_k7():
    # K7's recovery names the leader: it leads alone, RECOVERING, ELR/LKELR cleared, a new LE.
    p = state([1, 2, 3], [], NO_LEADER, 4, 6, elr=[2], lkelr=[1, 3])
    rec = builder(p, live=(1, 3), elr_enabled=True).set_election(Election.UNCLEAN).set_unclean_leader(3).build()
    assert rec == PartitionChangeRecord("tid", 0, leader=3, isr=(3,), elr=(), last_known_elr=(),
                                        leader_recovery_state="RECOVERING", leader_epoch_bump=True)
    assert preview(p, rec) == state([1, 2, 3], [3], 3, 5, 7, recovery="RECOVERING")
    # The builder's minimal record: fields already at their target are left out.
    p = state([1, 2, 3], [], NO_LEADER, 4, 6, lkelr=[2, 3])
    rec = builder(p, live=(2, 3), elr_enabled=True).set_election(Election.UNCLEAN).set_unclean_leader(3).build()
    assert rec == PartitionChangeRecord("tid", 0, leader=3, isr=(3,), last_known_elr=(),
                                        leader_recovery_state="RECOVERING", leader_epoch_bump=True)


def test_named_unclean_leader_yields_to_clean_candidates_and_needs_to_be_live():
    p = state([1, 2, 3], [2], NO_LEADER, 4, 6)
    rec = builder(p, live=(2, 3)).set_election(Election.UNCLEAN).set_unclean_leader(3).build()
    assert preview(p, rec).leader == 2  # an ISR member is a clean choice: no unclean election
    p = state([1, 2, 3], [], NO_LEADER, 4, 6, lkelr=[1])
    assert builder(p, live=(2,), elr_enabled=True).set_election(Election.UNCLEAN).set_unclean_leader(3).build() is None
    # Without an UNCLEAN election the name is not used at all.
    assert builder(p, live=(3,), elr_enabled=True).set_unclean_leader(3).build() is None


def test_completion_predicate_c17():
    assert reassignment_completion([1, 2, 3], [1, 2, 3], [], [], 2) is None  # nothing in progress
    assert reassignment_completion([1, 2, 3, 4], [1, 2, 4], [4], [3], 2) == ([1, 2, 4], [1, 2, 4])
    assert reassignment_completion([1, 2, 3, 4], [1, 2], [4], [3], 2) is None          # adding not in ISR
    assert reassignment_completion([1, 2, 3], [1, 3], [3], [1], 2) is None             # final ISR {3} < 2
    assert reassignment_completion([1, 2, 3], [1, 3], [3], [1], 2,
                                   CompletionRule.NON_EMPTY) == ([2, 3], [3])       # v3.5 prose
    assert reassignment_completion([1, 2], [1, 2], [], [1, 2], 1, CompletionRule.NON_EMPTY) is None  # empty


def test_trace_lists_seed001_stages_only_on_completion():
    p = state([1, 2, 3, 4], [1, 2], 1, 1, 3, adding=[4], removing=[3])
    b = builder(p).set_target_isr([1, 2, 4])
    rec = b.build()
    assert rec.leader == NO_LEADER_CHANGE and rec.leader_epoch_bump
    assert [label for label, _ in b.trace] == ["phase B: catch-up ISR", "B3: leader from the target ISR",
                                              "B4: ISR without removing", "final"]
    b2 = builder(p).set_target_isr([1])
    b2.build()
    assert [label for label, _ in b2.trace] == ["final"]
