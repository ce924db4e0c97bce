"""The interpreter: runs a generator's ops against real clients, recording the history.

One worker thread per logical process slot (``concurrency`` of them). A worker asks the generator (under one lock, so generators stay plain) for its next op, waits until the op's
scheduled time, records the invocation, executes it on its own client and records the completion.

Indeterminacy is first-class (Jepsen): an op that does not complete within ``op_timeout_s``, or whose
client raises, completes as ``info`` (it may or may not have taken effect) and its process is retired: the
slot continues under a fresh process id (old id + concurrency) with a fresh client, so no process ever
has two ops in flight and a history consumer may rely on "one invocation, then one completion, per
process". The timeout is enforced here, not trusted to the client library: each invocation runs on a
short-lived daemon thread; if it outlives its budget the worker records ``info`` and moves on, and the
abandoned thread closes its client whenever the library finally returns.

``fail`` comes only from clients, which return it only when the op certainly did not happen.

Faults are not the interpreter's business: the nemesis package (``nemesis.registry.NemesisPackage``)
runs its own seeded schedule on a thread of its own during the main phase and records its ops, process
``"nemesis"``, into the same history (``kraftcheck.runner``).
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.generator import PENDING, GenContext, Generator, strip_hints

IDLE_SLEEP_S = 0.02


@dataclass
class PhaseStats:
    """Counts of one phase: completions by type and by (f, type), and whether it ended on its own."""

    by_type: Counter = field(default_factory=Counter)
    by_f_type: Counter = field(default_factory=Counter)
    retired: int = 0
    finished: bool = True
    errors: list[str] = field(default_factory=list)


class Interpreter:
    """Executes phases of ops; see the module docstring for the execution model.

    ``client_factory(process)`` returns an opened ``Client`` for a process (called lazily on the worker
    thread); ``node_for(process)`` names the node its client prefers (recorded in the ``node`` field).
    ``on_complete(invoke, completion)`` is called for every completion (the progress bar listens).
    """

    def __init__(self, run: Any, client_factory: Callable[[int], Any], concurrency: int,
                 op_timeout_s: float, node_for: Callable[[int], str | None] | None = None,
                 on_complete: Callable[[dict, dict], None] | None = None, first_process: int = 0):
        self.run = run
        self.history = run.history
        self.client_factory = client_factory
        self.concurrency = concurrency
        self.op_timeout_s = op_timeout_s
        self.node_for = node_for or (lambda process: None)
        self.on_complete = on_complete
        self._gen_lock = threading.Lock()
        self._stop = threading.Event()
        self._processes = list(range(first_process, first_process + concurrency))  # slot -> process id
        self._clients: dict[int, Any] = {}
        self._clients_lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask every worker to stop after its current op (used on SIGINT/SIGTERM)."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        """Whether ``stop`` was called."""
        return self._stop.is_set()

    def close(self) -> None:
        """Close every client still open (never raises)."""
        with self._clients_lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            _close_quietly(client)

    def retire_all(self) -> None:
        """Give every slot a fresh process id (closing its client), as after an ``info``: the next phase's
        ops are not attributed to a process that may still have an op in flight."""
        for slot, process in enumerate(list(self._processes)):
            self._retire(slot, process, abandoned=False)

    # -- phases ----------------------------------------------------------------------------------

    def run_phase(self, gen: Generator, max_duration_s: float | None = None,
                  workers: int | None = None) -> PhaseStats:
        """Run ``gen`` on ``workers`` slots (default: all) until it is exhausted.

        ``max_duration_s`` bounds the phase in wall time: after it, workers are told to stop and the phase
        returns once they finish their in-flight op (each bounded by ``op_timeout_s``).
        """
        stats = PhaseStats()
        start = time.monotonic()
        phase_stop = threading.Event()
        threads = [threading.Thread(target=self._guarded, name=f"kraftcheck-worker-{slot}",
                                    args=(self._worker, slot, gen, start, phase_stop, stats), daemon=True)
                   for slot in range(workers or self.concurrency)]
        for t in threads:
            t.start()
        deadline = None if max_duration_s is None else start + max_duration_s
        for t in threads:
            while t.is_alive():
                if deadline is not None and time.monotonic() > deadline and not phase_stop.is_set():
                    phase_stop.set()
                    stats.finished = False
                t.join(0.1)
        if self._stop.is_set():
            stats.finished = False
        return stats

    def _guarded(self, body: Callable[..., None], *args: Any) -> None:
        """Run a worker body; a bug in the harness (generator, history) stops the phase and is reported."""
        *_, phase_stop, stats = args
        try:
            body(*args)
        except Exception:
            if self._stop.is_set():
                return  # interrupted: the history may already be closed under us
            stats.errors.append(traceback.format_exc())
            phase_stop.set()

    def _should_stop(self, phase_stop: threading.Event) -> bool:
        return self._stop.is_set() or phase_stop.is_set()

    def _next_op(self, gen: Generator, start: float, process: int) -> Any:
        with self._gen_lock:
            return gen.op(GenContext(time.monotonic() - start, process, self.run.rng))

    def _wait_until(self, start: float, at_s: float | None, phase_stop: threading.Event) -> bool:
        """Sleep until ``at_s`` into the phase; False if told to stop meanwhile."""
        if at_s is None:
            return not self._should_stop(phase_stop)
        while True:
            if self._should_stop(phase_stop):
                return False
            remaining = start + at_s - time.monotonic()
            if remaining <= 0:
                return True
            time.sleep(min(remaining, 0.1))

    # -- client workers --------------------------------------------------------------------------

    def _client(self, process: int) -> Any:
        with self._clients_lock:
            client = self._clients.get(process)
        if client is None:
            client = self.client_factory(process)
            with self._clients_lock:
                self._clients[process] = client
        return client

    def _retire(self, slot: int, process: int, abandoned: bool) -> None:
        """Never reuse a process whose op ended ``info``: the slot continues under a fresh id."""
        with self._clients_lock:
            client = self._clients.pop(process, None)
        if client is not None and not abandoned:
            _close_quietly(client)
        self._processes[slot] = process + self.concurrency

    def _worker(self, slot: int, gen: Generator, start: float, phase_stop: threading.Event,
                stats: PhaseStats) -> None:
        while not self._should_stop(phase_stop):
            process = self._processes[slot]
            op = self._next_op(gen, start, process)
            if op is None:
                return
            if op is PENDING:
                time.sleep(IDLE_SLEEP_S)
                continue
            if not self._wait_until(start, op.get("_at"), phase_stop):
                return
            invoke = dict(strip_hints(op), type="invoke", process=process)
            invoke.setdefault("value", None)
            invoke["node"] = self.node_for(process)
            invoke = self.history.append(invoke)
            completion, abandoned = self._execute(process, invoke)
            completion = self.history.append(completion)
            self._count(stats, invoke, completion)
            if completion["type"] == "info":
                stats.retired += 1
                self._retire(slot, process, abandoned)

    def _execute(self, process: int, invoke: dict) -> tuple[dict, bool]:
        """Run the op on the process's client with a hard time budget; return (completion, abandoned)."""
        box: dict[str, Any] = {}
        done = threading.Event()
        abandoned = threading.Event()

        def call() -> None:
            client = None
            try:
                client = self._client(process)
                box["completion"] = client.invoke(self.run, dict(invoke))
            except Exception as exc:  # an exception from a client is ambiguous: the op may have happened
                box["error"] = f"{type(exc).__name__}: {exc}"
            finally:
                done.set()
                if abandoned.is_set() and client is not None:
                    _close_quietly(client)

        threading.Thread(target=call, name=f"kraftcheck-op-{process}", daemon=True).start()
        if not done.wait(self.op_timeout_s):
            abandoned.set()
            if done.is_set():  # finished in the race window: use its answer after all
                abandoned.clear()
            else:
                return self._completion(invoke, "info", None, f"timeout: no completion within "
                                        f"{self.op_timeout_s:g} s"), True
        if "error" in box:
            return self._completion(invoke, "info", None, box["error"]), False
        return self._normalize(invoke, box.get("completion")), False

    def _completion(self, invoke: dict, type_: str, value: Any, error: str | None) -> dict:
        op = {k: v for k, v in invoke.items() if k not in ("index", "time")}
        op.update(type=type_, value=value, error=error)
        return op

    def _normalize(self, invoke: dict, completion: Any) -> dict:
        """Trust nothing from a client: same process and f as the invocation, a valid type."""
        if not isinstance(completion, dict) or completion.get("type") not in ("ok", "fail", "info"):
            return self._completion(invoke, "info", None, f"client returned an invalid completion: "
                                    f"{completion!r}"[:500])
        op = self._completion(invoke, completion["type"], completion.get("value"), completion.get("error"))
        for key, value in completion.items():
            if key not in ("index", "time", "type", "process", "f", "value", "error"):
                op[key] = value
        return op

    def _count(self, stats: PhaseStats, invoke: dict, completion: dict) -> None:
        with self._gen_lock:
            stats.by_type[completion["type"]] += 1
            stats.by_f_type[(completion["f"], completion["type"])] += 1
        if self.on_complete is not None:
            try:
                self.on_complete(invoke, completion)
            except Exception:  # a display problem must never disturb the run
                pass


def _close_quietly(client: Any) -> None:
    try:
        client.close()
    except Exception:
        pass
