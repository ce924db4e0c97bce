"""The kraftcheck pytest plugin (entry point ``pytest11``: ``kraftcheck = kraftcheck.pytest_plugin``).

- Registers the ``jepsen`` marker (real fault-injection runs; the project's default ``addopts`` deselects
  them, ``pytest -m jepsen`` runs them).
- Options in the ``kraftcheck`` group: ``--kraftcheck-backend``, ``--kraftcheck-seed``,
  ``--kraftcheck-time-limit`` (generated from the spec's field table, ``harness.spec_cli``, like the
  options of ``kraftcheck run``) and ``--kraftcheck-store``.
- Fixtures: ``kraftcheck_options`` (the options as spec keys), ``kraftcheck_run`` (a factory: call it with
  spec overrides, it runs one complete run and returns a ``RunOutcome``), ``kraftcheck_cluster`` (a
  running reference cluster for the test, torn down afterwards).
- A failing test that made runs gets a report section with each run's store path, verdict (the runner's,
  ``harness.verdict``, with its exit code) and replay command.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from harness.spec import prepare_spec
from harness.spec_cli import option_arguments

# Only the option table is imported with the plugin: pytest loads this module in every session of every
# project where kraftcheck is installed, so the runner, the cluster and the Kafka clients are imported by
# the fixtures that use them.

_OUTCOMES_ATTR = "_kraftcheck_outcomes"
# How the plugin's defaults differ from a plain run's: a test may choose its own backend and time limit.
_DEFAULT_NOTES = {"backend": "the test's own, else local", "time_limit_s": "the test's own"}


def _plugin_flag(flag: str) -> str:
    return "--kraftcheck-" + flag.removeprefix("--")


def pytest_addoption(parser: Any) -> None:
    """The ``kraftcheck`` option group: the spec options the field table gives the plugin, and the store."""
    group = parser.getgroup("kraftcheck", "kraftcheck fault-injection runs")
    for _, flag, kwargs in option_arguments("pytest", _DEFAULT_NOTES):
        group.addoption(_plugin_flag(flag), **kwargs)
    group.addoption("--kraftcheck-store", default=None, help="store root for runs (default: a temporary "
                    "directory of the test session)")


def pytest_configure(config: Any) -> None:
    """Register the markers (also when the project's ini is not in use)."""
    config.addinivalue_line("markers", "jepsen: real fault-injection runs against a cluster (pytest -m jepsen)")


@pytest.fixture
def kraftcheck_options(request: Any) -> dict[str, Any]:
    """Spec options from the command line (only those given)."""
    options: dict[str, Any] = {}
    for name, flag, _ in option_arguments("pytest"):
        value = request.config.getoption(_plugin_flag(flag))
        if value is not None:
            options[name] = value
    return options


@pytest.fixture
def kraftcheck_store(request: Any, tmp_path_factory: Any) -> Any:
    """The store root for this session's runs (``--kraftcheck-store``, else a pytest temporary dir)."""

    chosen = request.config.getoption("--kraftcheck-store")
    return Path(chosen) if chosen else tmp_path_factory.mktemp("kraftcheck-store")


@pytest.fixture
def kraftcheck_run(request: Any, kraftcheck_options: dict, kraftcheck_store: Any):
    """Factory: ``kraftcheck_run(nemesis="kill", time_limit_s=20) -> RunOutcome``.

    Command-line seed and time limit override the test's arguments (so CI can shorten every run at once
    or replay a seed); the command-line backend applies to tests that do not name one themselves (a test
    written for the docker backend stays on docker).
    """

    outcomes: list[Any] = []
    setattr(request.node, _OUTCOMES_ATTR, outcomes)

    def run(**overrides: Any) -> Any:
        options = {"test_name": request.node.name.replace("/", "_")[:80]}
        options.update(overrides)
        options.update({k: v for k, v in kraftcheck_options.items()
                        if k != "backend" or "backend" not in overrides})
        from kraftcheck import runner

        spec, environment = prepare_spec(options)
        outcome = runner.execute(spec, kraftcheck_store, progress=False, environment=environment)
        outcomes.append(outcome)
        return outcome

    return run


@pytest.fixture
def kraftcheck_cluster(request: Any, kraftcheck_options: dict, tmp_path: Any):
    """A running reference cluster (controller + brokers) on the chosen backend; torn down afterwards."""
    from harness.clusters import make_cluster, resolve
    from harness.context import RunContext
    from kraftcheck.runner import make_host

    spec, environment = prepare_spec({"time_limit_s": 1, **kraftcheck_options})
    host = make_host(spec, tmp_path)
    sut = resolve(spec)
    run = RunContext(spec=spec, host=host, store_dir=tmp_path, rng=random.Random(spec.seed), sut=sut,
                     environment=environment)
    cluster = make_cluster(sut, host, run, spec.recovery_timeout_s)
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
            lines.append(f"verdict: {run.verdict} (exit code {run.exit_code})")
            lines.append(f"replay: {run.replay}")
        report.sections.append(("kraftcheck", "\n".join(lines)))
