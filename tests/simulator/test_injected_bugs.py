"""Single-rule breaks of the protocol core are found by the simulator within a bounded number of schedules.

Each test patches one guard of the core (the way ``--inject-bug`` breaks one rule in the servers), runs
KIP-966 schedules from seed 0 and expects a violation within ``LIMIT`` seeds; the unpatched core runs the
same seeds without any violation (``test_the_correct_core_passes_the_same_seeds``), so each detection is
the patch's doing.
"""

from __future__ import annotations

import dataclasses

import pytest

import simulator.broker_node
from reference_impl.protocol.controller import Controller
from reference_impl.protocol.replica import LEADER, PartitionReplica
from reference_impl.protocol.replica_messages import ReplicaConfig
from simulator import SimOptions, search, simulate

LIMIT = 80
OPTIONS = SimOptions(variant="kip966")


def _hwm_ignores_isr(self: PartitionReplica) -> None:
    """L3 broken: the leader's HWM follows its own LEO."""
    if self.role == LEADER and self.log.log_end_offset > self.high_watermark:
        self._set_hwm(self.log.log_end_offset)
        self._complete_acks()


def _no_truncation(self: PartitionReplica, response) -> None:
    """F3 broken: a follower told its log diverged keeps it."""


def _registration_always_clean(original):
    """K4 broken: every re-registration presents the previous epoch, as if the shutdown had been clean."""
    def register_broker(self, broker_id, incarnation_id, **kw):
        existing = self.brokers.get(broker_id)
        if existing is not None:
            kw["previous_broker_epoch"] = existing.epoch
        return original(self, broker_id, incarnation_id, **kw)
    return register_broker


def _replica_config_without_l4(**kw) -> ReplicaConfig:
    """L4 broken: the replicas run the v3.5 HWM rule (no MinISR gate) under a KIP-966 controller."""
    return dataclasses.replace(ReplicaConfig(**kw), variant="v3.5")


BREAKS = {
    "L3 hwm-ignores-isr": (PartitionReplica, "_maybe_advance_hwm", _hwm_ignores_isr),
    "F3 no-truncation": (PartitionReplica, "_truncate_diverged", _no_truncation),
    "K4 unclean-registration-looks-clean": (Controller, "register_broker",
                                            _registration_always_clean(Controller.register_broker)),
    "L4 no-min-isr-gate": (simulator.broker_node, "ReplicaConfig", _replica_config_without_l4),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_single_rule_break_is_found(monkeypatch, name):
    owner, attr, replacement = BREAKS[name]
    monkeypatch.setattr(owner, attr, replacement)
    found = search(0, LIMIT, OPTIONS)
    assert found is not None and found.finding is not None, f"{name}: nothing found in {LIMIT} schedules"


def test_the_correct_core_passes_the_same_seeds():
    for seed in range(LIMIT):
        result = simulate(seed, OPTIONS)
        assert result.finding is None, (seed, result.finding)
