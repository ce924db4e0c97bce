"""The live side of a run: what generators, clients and nemeses are handed while a run executes.

The spec (``harness.spec.RunSpec``: typed, frozen data, stored as ``spec.json``) describes a run;
``RunContext`` carries the live handles beside it (Jepsen: "the test is plain data; live handles live
beside it, never inside it"), and the facts a run learns as it goes (``environment``: the image tag,
what the system under test declares), which nothing may write into the spec.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.history import HistoryWriter
from harness.interfaces import Cluster, Host
from harness.spec import RunSpec


@dataclass
class RunContext:
    """Everything a running workload or nemesis may touch.

    ``node_env`` holds extra environment variables per node (e.g. LD_PRELOAD for the clock nemesis);
    nemeses fill it in ``setup`` (which runs before the cluster starts its nodes) and the cluster applies
    it on every start and restart. ``cleanup`` is a stack of callables run in reverse order at teardown.
    """

    spec: RunSpec
    host: Host
    store_dir: Path
    rng: random.Random
    cluster: Cluster | None = None
    sut: Any = None  # harness.clusters.SutChoice: the system under test, resolved from the spec
    planned_nodes: list[str] = field(default_factory=list)  # the nodes the run will start, known before any
    history: HistoryWriter | None = None
    node_env: dict[str, dict[str, str]] = field(default_factory=dict)
    cleanup: list[Any] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)  # facts beside the spec (spec.json's others)

    def log(self, message: str) -> None:
        """A harness log line (stderr and ``store_dir/harness.log``)."""
        line = f"[kraftcheck] {message}"
        print(line, file=sys.stderr, flush=True)
        try:
            with open(self.store_dir / "harness.log", "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError:
            pass
