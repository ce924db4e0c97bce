"""The controller process in-process on loopback: registration, heartbeats, metadata pulls, durability (C1),
admin services; plus the real entry point's config handling (exit 2)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid

import pytest

from reference_impl.protocol.errors import Errors
from reference_impl.protocol.records import record_from_dict
from reference_impl.server import services as sv
from reference_impl.server.config import config_from_properties
from reference_impl.server.controller import Controller
from reference_impl.server.controller_link import ControllerLink
from reference_impl.server.local_cluster import free_port


def controller_config(tmp_path, port: int, **extra: str):
    props = {"node.id": "0", "process.roles": "controller", "listeners": f"127.0.0.1:{port}",
             "log.dirs": str(tmp_path / "ctl"), "broker.session.timeout.ms": "400", **extra}
    return config_from_properties(props)


async def start(config) -> tuple[Controller, asyncio.Task]:
    ctl = Controller(config)
    task = asyncio.create_task(ctl.run())
    for _ in range(100):
        if ctl.server._server is not None:
            break
        await asyncio.sleep(0.01)
    return ctl, task


async def stop(ctl: Controller, task: asyncio.Task) -> None:
    ctl.stop_event.set()
    await asyncio.wait_for(task, 10)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_register_unfence_pull_and_replay_after_restart(tmp_path):
    port = free_port()
    config = controller_config(tmp_path, port)

    async def scenario():
        ctl, task = await start(config)
        link = ControllerLink("127.0.0.1", port, "test")
        try:
            inc = str(uuid.uuid4())
            err, epoch = await link.register(1, "c", inc, "127.0.0.1", 9999, -1)
            assert err == Errors.NONE and epoch == 0  # C4: the epoch is the record's offset
            # C3: a different incarnation while the first is unfenced... is fenced-first here (still fenced)
            hb = await link.heartbeat(1, epoch, metadata_offset=-1, want_fence=True, want_shutdown=False)
            assert hb.error == Errors.NONE and hb.is_fenced
            hb = await link.heartbeat(1, epoch, metadata_offset=0, want_fence=False, want_shutdown=False)
            assert hb.error == Errors.NONE and not hb.is_fenced  # C5: caught up to its own record
            err2, _ = await link.register(1, "c", str(uuid.uuid4()), "127.0.0.1", 9999, -1)
            assert err2 == Errors.DUPLICATE_BROKER_REGISTRATION  # C3: unfenced, other incarnation
            chunk = await link.fetch_metadata(1, epoch, 0, max_wait_ms=0)
            kinds = [record_from_dict(r).__class__.__name__ for _, recs in chunk.batches for r in recs]
            assert kinds == ["RegisterBrokerRecord", "UnfenceBrokerRecord"] and chunk.end_offset == 2
            # Long poll: nothing new -> waits, then returns empty.
            t0 = asyncio.get_running_loop().time()
            empty = await link.fetch_metadata(1, epoch, 2, max_wait_ms=300)
            assert empty.batches == [] and asyncio.get_running_loop().time() - t0 >= 0.25
            # C6: without heartbeats the session (400 ms) expires and the broker is fenced.
            await asyncio.sleep(1.0)
            chunk = await link.fetch_metadata(1, epoch, 2, max_wait_ms=0)
            assert [r["type"] for _, recs in chunk.batches for r in recs] == ["FenceBrokerRecord"]
        finally:
            await link.close()
            await stop(ctl, task)
        # C1: everything answered was durable; a new controller replays it.
        ctl2, task2 = await start(config)
        try:
            assert ctl2.mlog.end_offset == 3
            assert ctl2.core.core.brokers[1].fenced and ctl2.core.core.brokers[1].epoch == 0
        finally:
            await stop(ctl2, task2)

    run(scenario())


def test_admin_services_create_reassign_list_cancel(tmp_path):
    port = free_port()
    config = controller_config(tmp_path, port, **{"broker.session.timeout.ms": "60000",
                                                  "min.insync.replicas": "2"})

    async def scenario():
        ctl, task = await start(config)
        link = ControllerLink("127.0.0.1", port, "test")
        admin = ctl.server.handlers[19].__self__.admin  # the AdminServices the wire handlers use
        try:
            for b in (1, 2, 3, 4):
                _, epoch = await link.register(b, "c", str(uuid.uuid4()), "127.0.0.1", 9000 + b, -1)
                await link.heartbeat(b, epoch, metadata_offset=10**6, want_fence=False, want_shutdown=False)
            [res] = await admin.create_topics([sv.NewTopic("t", assignments={0: (1, 2, 3)})], 1000, False)
            assert res.error == Errors.NONE and res.replication_factor == 3 and res.topic_id
            assert (await admin.create_topics([sv.NewTopic("t", 1, 3)], 1000, False))[0].error == \
                Errors.TOPIC_ALREADY_EXISTS
            # KIP-860: RF change refused when not allowed.
            [r] = await admin.alter_partition_reassignments([sv.Reassignment("t", 0, (1, 2))], False, 1000)
            assert r.error == Errors.INVALID_REPLICATION_FACTOR
            [r] = await admin.alter_partition_reassignments([sv.Reassignment("t", 0, (1, 2, 4))], True, 1000)
            assert r.error == Errors.NONE
            [ongoing] = await admin.list_partition_reassignments(None)
            assert (ongoing.adding, ongoing.removing) == ((4,), (3,))  # C18 grow phase
            [r] = await admin.alter_partition_reassignments([sv.Reassignment("t", 0, None)], True, 1000)
            assert r.error == Errors.NONE
            assert await admin.list_partition_reassignments(None) == []
            state = ctl.core.partition_state(res.topic_id, 0)
            assert state.replicas == [1, 2, 3] and state.isr == [1, 2, 3]  # C21: reverted
            [cfg] = await admin.describe_configs([(sv.RESOURCE_TOPIC, "t", ["min.insync.replicas"])])
            assert cfg.configs[0].value == "2"
            results = await admin.elect_leaders(0, [sv.TopicPartition("t", 0)], 1000)
            assert results[0].error == Errors.ELECTION_NOT_NEEDED
        finally:
            await link.close()
            await stop(ctl, task)

    run(scenario())


@pytest.mark.parametrize("module", ["controller", "broker"])
def test_entry_point_rejects_invalid_config_with_exit_2(tmp_path, module):
    path = tmp_path / "bad.properties"
    path.write_text("node.id=1\nprocess.roles=controller\nlisteners=127.0.0.1:1\nlog.dirs=/tmp/x\n"
                    "no.such.key=1\n")
    proc = subprocess.run([sys.executable, "-m", f"reference_impl.server.{module}", "--config", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "no.such.key" in proc.stderr


def test_controller_bug_switches(tmp_path, monkeypatch):
    """``metadata-no-fsync`` (C1) skips the fsync; ``unclean-without-opt-in`` (C12) enables unclean
    elections in the core although the config says false. Off by default."""
    import os

    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    normal = Controller(controller_config(tmp_path / "a", free_port()))
    assert normal.mlog.fsync and not normal.core.core.config.unclean_election
    normal.commit([record_from_dict({"type": "NoOpRecord"})])
    assert synced
    synced.clear()
    buggy = Controller(controller_config(tmp_path / "b", free_port(), **{"inject.bug": "metadata-no-fsync"}))
    buggy.commit([record_from_dict({"type": "NoOpRecord"})])
    assert not synced and buggy.mlog.end_offset == 1
    unclean = Controller(controller_config(tmp_path / "c", free_port(),
                                           **{"inject.bug": "unclean-without-opt-in"}))
    assert unclean.core.core.config.unclean_election
    for c in (normal, buggy, unclean):
        c.mlog.close()
        c.tracer.close()


def test_sighup_reload_commits_kip435_parallelism(tmp_path):
    """KIP-435's parallelism settings are dynamic: a reload commits changed ones as ConfigRecords."""
    port = free_port()
    path = tmp_path / "ctl.properties"
    base = (f"node.id=0\nprocess.roles=controller\nlisteners=127.0.0.1:{port}\nlog.dirs={tmp_path / 'd'}\n"
            "reassignment.mode=incremental\nreassignment.parallel.replica.count=2\n")
    path.write_text(base)
    from reference_impl.server.config import load_config

    async def scenario():
        ctl, task = await start(load_config(path))
        try:
            assert await ctl.reload_dynamic_config(str(path)) == []  # nothing changed
            path.write_text(base.replace("replica.count=2", "replica.count=3") +
                            "reassignment.parallel.leader.movements=1\n")
            changed = await ctl.reload_dynamic_config(str(path))
            assert changed == [("reassignment.parallel.replica.count", "3"),
                               ("reassignment.parallel.leader.movements", "1")]
            assert ctl.core.core.configuration.cluster_int("reassignment.parallel.replica.count", 0) == 3
            path.write_text(base + "reassignment.parallel.replica.count=0\n")  # invalid (and duplicate)
            assert await ctl.reload_dynamic_config(str(path)) == []
            types = [r["type"] for _, recs in ctl.mlog.read_from(0) for r in recs]
            assert types == ["ConfigRecord", "ConfigRecord"]
        finally:
            await stop(ctl, task)

    run(scenario())
