"""A harness that sets up a stand-in cluster and a partition, says "ready", then waits to be killed.

Used by the cleanup tests: ``python -m tests.harness.crash_harness STORE_DIR [partition]``.
"""

import json
import random
import sys
import time

from harness.context import RunContext
from harness.hosts.local import LocalHost
from nemesis.registry import build_package
from tests.nemesis.standin import StandInCluster


def main() -> None:
    """Start everything, print the run id and pids as JSON, sleep until killed."""
    host = LocalHost(sys.argv[1])
    cluster = StandInCluster(host)
    run = RunContext(spec={}, host=host, store_dir=host.base_dir, rng=random.Random(0), cluster=cluster)
    cluster.setup()
    value = {}
    if "partition" in sys.argv[2:]:
        pkg = build_package("partition", seed=1)
        pkg.setup(run)
        value = pkg.execute(run, {"f": "start-partition", "value": {"topology": "halves"}})["value"]
    pids = {n: host.pid(n) for n in cluster.nodes()}
    print(json.dumps({"run_id": host.run_id, "pids": pids, "partition": value}), flush=True)
    time.sleep(600)


if __name__ == "__main__":
    main()
