"""A harness that sets up stand-in nodes with faults in place, says "ready", then waits to be killed.

Used by the cleanup tests: ``python -m tests.harness.crash_harness STORE_DIR BACKEND [partition] [disk]``
prints one JSON line (run id, node pids, fault evidence) once the faults hold.
"""

import json
import random
import sys
import time

from harness.context import RunContext
from harness.hosts import make_host
from harness.spec import RunSpec
from nemesis.registry import build_package
from tests.nemesis.standin import StandInCluster


def main() -> None:
    """Start everything, print the run id and pids as JSON, sleep until killed."""
    store, backend, faults = sys.argv[1], sys.argv[2], sys.argv[3:]
    host = make_host(backend, store)
    cluster = StandInCluster(host)
    run = RunContext(spec=RunSpec(), host=host, store_dir=host.base_dir, rng=random.Random(0), cluster=cluster)
    cluster.node_env = run.node_env
    pkg = build_package(",".join(faults) or "none", seed=1)
    pkg.setup(run)
    cluster.setup()
    out = {"run_id": host.run_id, "pids": {n: host.pid(n) for n in cluster.nodes()}}
    if "disk" in faults:
        out["mounts"] = dict(pkg.nemesis.members["disk"].mounts)
        out["disk"] = pkg.execute(run, {"f": "power-loss", "value": {"nodes": ["b2"]}})["value"]
    if "partition" in faults:
        out["partition"] = pkg.execute(run, {"f": "start-partition", "value": {"topology": "halves"}})["value"]
    print(json.dumps(out), flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
