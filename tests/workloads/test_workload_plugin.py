"""A second workload plugs in through ``workloads.registry`` and runs without any change to the runner.

``REACH`` is a tiny workload defined here: each op opens a TCP connection to the client's preferred
broker (``reach``), and its final phase connects to every broker once (``reach-all``). It shares nothing
with the queue workload but the ``Workload`` bundle.
"""

from __future__ import annotations

import json
import random
import socket
import socketserver
import threading

import pytest

from harness.context import RunContext
from harness.generator import FnGen, Once, Stagger, TimeLimit
from harness.history import HistoryWriter, pair_ops, read_history
from harness.interpreter import Interpreter
from harness.spec import RunSpec
from harness.workload import Workload
from workloads import queue, registry


class ReachClient:
    """Connects to Kafka listeners; a refused connect certainly changed nothing (``fail``)."""

    def __init__(self, servers: list[str], timeout_s: float):
        self.servers, self.timeout_s = servers, timeout_s

    def open(self, run, node):
        pass

    def _connect(self, server: str) -> None:
        host, port = server.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=self.timeout_s):
            pass

    def invoke(self, run, op):
        targets = self.servers if op["f"] == "reach-all" else self.servers[:1]
        try:
            for server in targets:
                self._connect(server)
        except OSError as exc:
            return {**op, "type": "fail", "error": f"{type(exc).__name__}: {exc}"}
        return {**op, "type": "ok", "value": targets}

    def close(self):
        pass


def reach_clients(spec, cluster, run, op_timeout_s):
    servers = cluster.bootstrap_servers()
    timeout_s = op_timeout_s or spec.op_timeout_s
    return lambda process: ReachClient(servers[process % len(servers):] + servers[:process % len(servers)],
                                       timeout_s)


def reach_generator(spec):
    return TimeLimit(Stagger(FnGen(lambda ctx: {"f": "reach", "value": None}), spec.rate), spec.time_limit_s)


def reach_final(spec, keys=None):
    return Once({"f": "reach-all", "value": None, "final": True})


REACH = Workload(name="reach", client_factory=reach_clients, generator=reach_generator,
                 final_generator=reach_final,
                 node_for=lambda cluster: (lambda process: cluster.brokers()[process % len(cluster.brokers())]))


@pytest.fixture
def reach_registered(monkeypatch):
    """``REACH`` in the registry for this test only."""
    monkeypatch.setitem(registry.WORKLOADS, REACH.name, REACH)
    return REACH


def test_the_registry_knows_the_queue_and_names_the_known_ones_on_a_miss():
    assert registry.workload_for("queue") is queue.WORKLOAD
    with pytest.raises(registry.UnknownWorkload, match="unknown workload 'nope'; known: queue"):
        registry.workload_for("nope")


def test_register_refuses_a_second_workload_under_a_taken_name(reach_registered):
    registry.register(REACH)  # the same object again: fine
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Workload(name="reach", client_factory=reach_clients, generator=reach_generator))


class _Listeners:
    """Brokers stand-in: TCP listeners that accept and close (what ``reach`` touches of a cluster)."""

    def __init__(self, n: int):
        self.servers = [socketserver.TCPServer(("127.0.0.1", 0), socketserver.BaseRequestHandler)
                        for _ in range(n)]
        for server in self.servers:
            threading.Thread(target=server.serve_forever, daemon=True).start()

    def bootstrap_servers(self):
        return [f"127.0.0.1:{s.server_address[1]}" for s in self.servers]

    def brokers(self):
        return [f"b{i}" for i in range(1, len(self.servers) + 1)]

    def close(self):
        for server in self.servers:
            server.shutdown()
            server.server_close()


def test_a_registered_workload_runs_through_the_interpreter(tmp_path, reach_registered):
    spec = RunSpec(workload="reach", rate=40.0, time_limit_s=0.5, op_timeout_s=2.0, concurrency=2)
    workload = registry.workload_for(spec.workload)
    cluster = _Listeners(3)
    history = HistoryWriter(tmp_path / "history.jsonl")
    run = RunContext(spec=spec, host=None, store_dir=tmp_path, rng=random.Random(3), cluster=cluster,
                     history=history)
    try:
        main = Interpreter(run, workload.client_factory(spec, cluster, run, None), spec.concurrency,
                           spec.op_timeout_s, node_for=workload.node_for(cluster))
        stats = main.run_phase(workload.generator(spec))
        final = Interpreter(run, workload.client_factory(spec, cluster, run, 1.0), 1, 2.0,
                            node_for=workload.node_for(cluster))
        final_stats = final.run_phase(workload.final_generator(spec, None), workers=1)
    finally:
        history.close()
        cluster.close()
    assert stats.by_f_type[("reach", "ok")] >= 5 and not stats.errors
    assert final_stats.by_f_type[("reach-all", "ok")] == 1
    pairs, problems = pair_ops(read_history(tmp_path / "history.jsonl").ops)
    assert not problems
    finals = [c for i, c in pairs if i.get("final")]
    assert [c["value"] for c in finals] == [cluster.bootstrap_servers()]
    assert {i["node"] for i, _ in pairs if i["f"] == "reach"} <= {"b1", "b2", "b3"}


@pytest.mark.jepsen
def test_a_registered_workload_drives_a_real_run(reach_registered, kraftcheck_run):
    """The runner, untouched, runs ``reach`` against a real cluster: main phase, heal, final phase."""
    outcome = kraftcheck_run(backend="local", workload="reach", time_limit_s=4, rate=20)
    results = json.loads((outcome.run_dir / "results.json").read_text())
    assert "harness_error" not in results, results.get("harness_error")
    spec = json.loads((outcome.run_dir / "spec.json").read_text())
    assert spec["workload"] == "reach"
    pairs, problems = pair_ops(read_history(outcome.run_dir / "history.jsonl").ops)
    assert not problems
    fs = {i["f"] for i, _ in pairs}
    assert fs == {"reach", "reach-all"}, fs  # no queue op anywhere
    assert sum(1 for i, c in pairs if i["f"] == "reach" and c["type"] == "ok") >= 20
    finals = [c for i, c in pairs if i.get("final") and c["type"] == "ok"]
    assert finals and len(finals[-1]["value"]) == 3
    print(f"verdict {results['valid']}; checkers "
          f"{ {k: v.get('valid') for k, v in results.get('checkers', {}).items()} }")
