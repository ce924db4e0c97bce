"""Unit tests of harness.store: layout, latest link, atomic JSON, resolving run directories."""

import os
from datetime import UTC, datetime

import pytest

from harness import store


def test_store_root_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv(store.STORE_ENV, str(tmp_path / "env"))
    assert store.store_root(tmp_path / "explicit") == (tmp_path / "explicit").resolve()
    assert store.store_root() == (tmp_path / "env").resolve()
    monkeypatch.delenv(store.STORE_ENV)
    monkeypatch.chdir(tmp_path)
    assert store.store_root() == (tmp_path / "store").resolve()


def test_run_dirs_are_unique_and_sortable(tmp_path):
    moment = datetime(2026, 11, 22, 11, 7, 33, 123456, tzinfo=UTC)
    a = store.new_run_dir(tmp_path, "queue", moment)
    b = store.new_run_dir(tmp_path, "queue", moment)
    assert a.name == "20261122T110733.123Z" and b.name == "20261122T110733.123Z-1"
    assert (a / "nodes").is_dir() and a.parent == tmp_path / "queue"


def test_latest_points_at_newest_run(tmp_path):
    a = store.new_run_dir(tmp_path, "queue")
    store.update_latest(tmp_path, a)
    b = store.new_run_dir(tmp_path, "other")
    link = store.update_latest(tmp_path, b)
    assert link.is_symlink() and not os.path.isabs(os.readlink(link))
    assert link.resolve() == b.resolve()


def test_write_json_is_atomic_and_readable(tmp_path):
    path = store.write_json(tmp_path / "x" / "results.json", {"valid": True, "n": 1})
    assert store.read_json(path) == {"valid": True, "n": 1}
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]  # no temporary file left


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_json_files_get_the_same_mode_as_the_streamed_history(tmp_path, umask):
    from harness.history import HistoryWriter

    old = os.umask(umask)
    try:
        results = store.write_json(tmp_path / store.RESULTS, {"valid": True})
        spec = store.write_json(tmp_path / store.SPEC, {})
        with HistoryWriter(tmp_path / store.HISTORY) as writer:
            writer.append({"type": "invoke", "process": 0, "f": "send", "value": None})
    finally:
        os.umask(old)
    mode = (tmp_path / store.HISTORY).stat().st_mode & 0o777
    assert mode == 0o666 & ~umask
    assert results.stat().st_mode & 0o777 == mode and spec.stat().st_mode & 0o777 == mode


def test_resolve_run_dir(tmp_path):
    run = store.new_run_dir(tmp_path, "queue")
    store.write_json(run / store.SPEC, {})
    store.update_latest(tmp_path, run)
    assert store.resolve_run_dir(run) == run.resolve()
    assert store.resolve_run_dir(run / store.SPEC) == run.resolve()
    assert store.resolve_run_dir(tmp_path) == run.resolve()
    assert store.list_runs(tmp_path) == [run]
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        store.resolve_run_dir(tmp_path / "queue")
