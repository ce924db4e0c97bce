"""Faults that cannot work refuse at setup with a clear message; composition undoes partial setups."""

from types import SimpleNamespace

import pytest

from nemesis import disk, net
from nemesis.base import NemesisUnsupported
from nemesis.compose import ComposedNemesis


def _local_run():
    return SimpleNamespace(host=SimpleNamespace(name="local", run_id="r", node_gid=lambda n: 1), spec={},
                           node_env={}, cluster=None)


def test_partitions_and_fsync_loss_refuse_without_root(monkeypatch):
    monkeypatch.setattr(net.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(disk.os, "geteuid", lambda: 1000)
    with pytest.raises(NemesisUnsupported, match="need root.*--backend docker"):
        net.NetNemesis().setup(_local_run())
    with pytest.raises(NemesisUnsupported, match="needs root.*--backend docker"):
        disk.DiskNemesis().setup(_local_run())


def test_unknown_backend_is_refused():
    run = SimpleNamespace(host=SimpleNamespace(name="ssh"))
    with pytest.raises(NemesisUnsupported):
        net.NetNemesis().setup(run)
    with pytest.raises(NemesisUnsupported):
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
