"""Faults that cannot work refuse at setup with a clear message; composition undoes partial setups."""

from types import SimpleNamespace

import pytest

from harness.hosts import local
from harness.hosts.local import LocalHost
from nemesis import disk, net
from nemesis.base import NemesisUnsupported
from nemesis.compose import ComposedNemesis


def test_local_host_without_root_refuses_partitions_and_fsync_loss(tmp_path, state_env, monkeypatch):
    """The refusal and its hint come from the local host's abilities (the nemeses never ask for root)."""
    host = LocalHost(tmp_path)
    monkeypatch.setattr(local.os, "geteuid", lambda: 1000)
    run = SimpleNamespace(host=host, spec={}, node_env={}, cluster=None)
    try:
        with pytest.raises(NemesisUnsupported, match="need root.*--backend docker"):
            net.NetNemesis().setup(run)
        with pytest.raises(NemesisUnsupported, match="needs root.*--backend docker"):
            disk.DiskNemesis().setup(run)
    finally:
        host.teardown()


def test_a_host_without_abilities_is_refused():
    run = SimpleNamespace(host=SimpleNamespace(name="ssh"), spec={}, node_env={}, cluster=None)
    with pytest.raises(NemesisUnsupported, match="ssh host.*NetworkRules"):
        net.NetNemesis().setup(run)
    with pytest.raises(NemesisUnsupported, match="ssh host.*FuseMounts"):
        disk.DiskNemesis().setup(run)


class _Member:
    def __init__(self, fs, fail=False):
        self._fs, self.fail, self.torn_down = fs, fail, False

    def fs(self):
        return set(self._fs)

    def setup(self, run):
        if self.fail:
            raise NemesisUnsupported("cannot here")

    def teardown(self, run):
        self.torn_down = True


def test_composed_setup_failure_tears_down_members_already_set_up():
    ok, bad = _Member({"a"}), _Member({"b"}, fail=True)
    composed = ComposedNemesis({"ok": ok, "bad": bad})
    with pytest.raises(NemesisUnsupported, match="bad: cannot here"):
        composed.setup(None)
    assert ok.torn_down and not bad.torn_down


def test_two_members_may_not_claim_one_op():
    with pytest.raises(ValueError, match="handled by two"):
        ComposedNemesis({"x": _Member({"a"}), "y": _Member({"a"})})
