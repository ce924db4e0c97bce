"""fsync loss: lazyfs under node data dirs; power loss drops unsynced bytes and lowers the log end offset."""

import os
import random
import shutil
from pathlib import Path

import pytest

from nemesis.registry import build_package

pytestmark = [
    pytest.mark.jepsen,
    pytest.mark.skipif(not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None, reason="no FUSE"),
]

HELPER = Path(__file__).with_name("write_frames.py")


def test_power_loss_on_stand_in_nodes(any_run):
    run = any_run
    pkg = build_package("disk", seed=1)
    pkg.setup(run)  # mounts before the nodes start
    run.cluster.setup()
    disk = pkg.nemesis.members["disk"]
    try:
        mnt = disk.mounts["b1"]
        script = Path(run.host.node_dir("b1")) / "write_frames.py"
        script.write_text(HELPER.read_text())
        code, out = run.host.exec("b1", ["python3", str(script), mnt, "50"])
        assert code == 0, out
        written = int(out.strip().splitlines()[-1])
        done = pkg.execute(run, {"f": "power-loss", "value": {"nodes": ["b1"]}})
        value = done["value"]
        assert value["effective"] is True, value
        assert value["dropped_bytes"]["b1"] == written
        assert value["leo_before"]["b1"] == {"t-0": 50} and value["leo_after"]["b1"] == {"t-0": 0}
        assert value["leo_lowered"]["b1"] is True
        assert value["killed"]["b1"] and value["started"]["b1"] != value["killed"]["b1"]
        code, out = run.host.exec("b1", ["cat", os.path.join(mnt, "synced.bin")])
        assert out == "s" * 100  # what was fsynced survives
        heal = pkg.heal(run)
        assert heal["value"]["disk"]["effective"] is True
    finally:
        pkg.teardown(run)
    code, out = run.host.exec("b1", ["cat", "/proc/mounts"])
    assert f"kraftcheck-{run.host.run_id}" not in out


@pytest.mark.parametrize("backend", ["local", "docker"])
def test_power_loss_of_a_reference_broker(tmp_path, state_env, backend):
    """With flushing left to the OS, a broker's acknowledged data is only in lazyfs's memory: power
    loss drops it and the broker restarts with a lower log end offset."""
    from kafka import KafkaProducer

    from harness.cluster import RefCluster
    from harness.context import RunContext
    from harness.hosts import make_host
    from harness.spec import RunSpec

    if backend == "docker":
        from harness.image import ImageError, docker_client

        try:
            docker_client()
        except ImageError as exc:
            pytest.skip(str(exc))
    spec = RunSpec(time_limit_s=1, backend=backend, keys=1, seed=1)
    host = make_host(backend, tmp_path / "store")
    run = RunContext(spec=spec, host=host, store_dir=tmp_path / "store", rng=random.Random(1))
    pkg = build_package("disk", seed=1)
    cluster = RefCluster(host, run, ready_timeout_s=60)
    try:
        pkg.setup(run)
        run.cluster = cluster
        cluster.setup(spec)
        cluster.create_topic("pl", 1, 3)
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers(), acks="all")
        for i in range(200):
            producer.send("pl", b"v%d" % i, partition=0)
        producer.flush(30)
        producer.close()
        leader = cluster.broker_node(cluster.leaders("pl")[0])
        done = pkg.execute(run, {"f": "power-loss", "value": {"nodes": [leader]}})
        value = done["value"]
        assert value["effective"] is True, value
        assert value["dropped_bytes"][leader] > 0
        assert value["leo_before"][leader]["pl-0"] == 200
        assert value["leo_after"][leader]["pl-0"] < 200 and value["leo_lowered"][leader] is True
    finally:
        pkg.heal(run)
        cluster.teardown()
        pkg.teardown(run)
        host.teardown()
