"""The kraftcheck pytest plugin (entry point ``pytest11``: ``kraftcheck = harness.pytest_plugin``).

- Registers the ``jepsen`` marker (real fault-injection runs; the project's default ``addopts`` deselects
  them, ``pytest -m jepsen`` runs them).
- Options in the ``kraftcheck`` group: ``--kraftcheck-backend``, ``--kraftcheck-seed``,
  ``--kraftcheck-time-limit``, ``--kraftcheck-store``.
- Fixtures: ``kraftcheck_options`` (the options as spec keys), ``kraftcheck_run`` (a factory: call it with
  spec overrides, it runs one complete run and returns a ``RunOutcome``), ``kraftcheck_cluster`` (a
  running reference cluster for the test, torn down afterwards).
- A failing test that made runs gets a report section with each run's store path and replay command.

Heavy modules (the runner, kafka-python, docker) are imported inside fixtures, so loading the plugin costs
nothing for tests that do not use it.
"""

from __future__ import annotations

from typing import Any

import pytest

_OUTCOMES_ATTR = "_kraftcheck_outcomes"


def pytest_addoption(parser: Any) -> None:
    """The ``kraftcheck`` option group."""
    group = parser.getgroup("kraftcheck", "kraftcheck fault-injection runs")
    group.addoption("--kraftcheck-backend", choices=["local", "docker"], default=None,
                    help="backend for jepsen runs (default: local)")
    group.addoption("--kraftcheck-seed", type=int, default=None, help="seed for jepsen runs (default random)")
    group.addoption("--kraftcheck-time-limit", type=float, default=None,
                    help="main-phase seconds for jepsen runs (default: each test's own)")
    group.addoption("--kraftcheck-store", default=None, help="store root for runs (default: ./store)")


def pytest_configure(config: Any) -> None:
    """Register the markers (also when the project's ini is not in use)."""
    config.addinivalue_line("markers", "jepsen: real fault-injection runs against a cluster (pytest -m jepsen)")


@pytest.fixture
def kraftcheck_options(request: Any) -> dict[str, Any]:
    """Spec options from the command line (only those given)."""
    config = request.config
    options: dict[str, Any] = {}
    if config.getoption("--kraftcheck-backend"):
        options["backend"] = config.getoption("--kraftcheck-backend")
    if config.getoption("--kraftcheck-seed") is not None:
        options["seed"] = config.getoption("--kraftcheck-seed")
    if config.getoption("--kraftcheck-time-limit") is not None:
        options["time_limit_s"] = config.getoption("--kraftcheck-time-limit")
    return options


@pytest.fixture
def kraftcheck_store(request: Any, tmp_path_factory: Any) -> Any:
    """The store root for this session's runs (``--kraftcheck-store``, else a pytest temporary dir)."""
    from pathlib import Path

    chosen = request.config.getoption("--kraftcheck-store")
    return Path(chosen) if chosen else tmp_path_factory.mktemp("kraftcheck-store")


@pytest.fixture
def kraftcheck_run(request: Any, kraftcheck_options: dict, kraftcheck_store: Any):
    """Factory: ``kraftcheck_run(nemesis="kill", time_limit_s=20) -> RunOutcome``.

    Command-line seed and time limit override the test's arguments (so CI can shorten every run at once
    or replay a seed); the command-line backend applies to tests that do not name one themselves (a test
    written for the docker backend stays on docker).
    """
    import harness.runner as runner
    from harness.spec import build_spec

    outcomes: list[Any] = []
    setattr(request.node, _OUTCOMES_ATTR, outcomes)

    def run(**overrides: Any) -> Any:
        options = {"test_name": request.node.name.replace("/", "_")[:80]}
        options.update(overrides)
        options.update({k: v for k, v in kraftcheck_options.items()
                        if k != "backend" or "backend" not in overrides})
        spec = build_spec(options)
        outcome = runner.execute(spec, kraftcheck_store, progress=False)
        outcomes.append(outcome)
        return outcome

    return run


@pytest.fixture
def kraftcheck_cluster(request: Any, kraftcheck_options: dict, tmp_path: Any):
    """A running reference cluster (controller + brokers) on the chosen backend; torn down afterwards."""
    import random

    from harness.cluster import RefCluster
    from harness.context import RunContext
    from harness.runner import make_host
    from harness.spec import build_spec

    spec = build_spec({"time_limit_s": 1, **kraftcheck_options})
    host = make_host(spec, tmp_path)
    run = RunContext(spec=spec, host=host, store_dir=tmp_path, rng=random.Random(spec["seed"]))
    cluster = RefCluster(host, run, ready_timeout_s=spec["recovery_timeout_s"])
    run.cluster = cluster
    try:
        cluster.setup(spec)
        yield cluster
    finally:
        try:
            cluster.collect_logs(tmp_path / "nodes")
        finally:
            cluster.teardown()
            host.teardown()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any):
    """Add each run's store path and replay command to the report of a failing test."""
    outcome = yield
    report = outcome.get_result()
    runs = getattr(item, _OUTCOMES_ATTR, None)
    if report.failed and runs:
        lines = []
        for run in runs:
            lines.append(f"store:  {run.run_dir}")
            lines.append(f"verdict exit code: {run.exit_code}")
            lines.append(f"replay: {run.replay}")
        report.sections.append(("kraftcheck", "\n".join(lines)))
