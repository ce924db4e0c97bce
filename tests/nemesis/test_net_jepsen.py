"""Partitions on the local backend (root): connectivity lost while the rules hold, restored after heal."""

import os
import subprocess

import pytest

from harness.hosts.iptables import comment_tag
from nemesis.registry import build_package

pytestmark = [pytest.mark.jepsen, pytest.mark.skipif(os.geteuid() != 0, reason="needs root")]


def _tagged_rules(run):
    """Rules carrying the run's tag: on the host (local) or in every node's container (docker)."""
    tag = comment_tag(run.host.run_id)
    if run.host.name == "local":
        out = subprocess.run(["iptables", "-S"], capture_output=True, text=True, check=True).stdout
    else:
        out = "\n".join(run.host.exec(n, ["iptables", "-S"])[1] for n in run.cluster.nodes())
    return [line for line in out.splitlines() if tag in line]


@pytest.mark.parametrize("topology", ["isolate-one", "halves", "majorities-ring", "one-way",
                                      "isolate-controller", "clients-brokers", "isolate-leader"])
def test_partition_cuts_then_heals(any_run, topology):
    run = any_run
    run.cluster.setup()
    pkg = build_package("partition", seed=3)
    pkg.setup(run)
    try:
        done = pkg.execute(run, {"f": "start-partition", "value": {"topology": topology, "pick": 9}})
        value = done["value"]
        assert value["effective"] is True, value
        assert set(value["probes_during"].values()) == {"timeout"}
        assert len(_tagged_rules(run)) == value["rules"] > 0
        healed = pkg.execute(run, {"f": "stop-partition", "value": {}})
        assert healed["value"]["effective"] is True, healed["value"]
        assert set(healed["value"]["probes_after"].values()) == {"refused"}
        assert _tagged_rules(run) == []
    finally:
        pkg.teardown(run)
    assert _tagged_rules(run) == []


_LATE_SENDER = (
    "import os,socket,sys,time\n"
    "s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=5)\n"
    "print('connected',flush=True)\n"
    "while not os.path.exists(sys.argv[3]):time.sleep(0.05)\n"
    "s.sendall(b'late');s.close()\n"  # unacknowledged: the closed socket is orphaned, the kernel retransmits
)


def test_a_request_sent_before_closing_does_not_leak_through_the_cut(local_run, tmp_path):
    """A client that times out closes its socket with the request unacknowledged; the kernel keeps
    retransmitting it from an orphaned socket that no longer has an owner. Those packets must be dropped
    like the rest of the edge, or a request sent during a cut arrives seconds later (a heartbeat that
    unfences an isolated broker)."""
    import socket
    import threading
    import time

    run = local_run
    run.cluster.setup()
    receiver = socket.socket()
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    receiver.bind((run.host.ip("b2"), 19999))
    receiver.listen(1)
    go = tmp_path / "go"
    sender = threading.Thread(target=run.host.exec, args=("b1", ["python3", "-c", _LATE_SENDER, run.host.ip("b2"),
                                                                "19999", str(go)]), kwargs={"timeout_s": 60})
    sender.start()
    conn, _ = receiver.accept()
    conn.settimeout(9.0)
    pkg = build_package("partition", seed=3)
    pkg.setup(run)
    try:
        done = pkg.execute(run, {"f": "start-partition", "value": {"edges": [["b1", "b2"]]}})
        assert done["value"]["effective"] is True, done["value"]
        go.write_text("go")
        sender.join(30)
        started = time.monotonic()
        try:
            leaked = conn.recv(16)
        except TimeoutError:
            leaked = b""
        assert leaked == b"", f"data crossed the cut after {time.monotonic() - started:.1f} s"
    finally:
        pkg.teardown(run)
        conn.close()
        receiver.close()
