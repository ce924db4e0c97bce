"""The pytest plugin, tested with pytester (inner pytest sessions load it through its entry point)."""

pytest_plugins = ["pytester"]


def test_marker_and_options_are_registered(pytester):
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["*jepsen: real fault-injection runs*"])
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*kraftcheck*", "*--kraftcheck-backend*", "*--kraftcheck-seed*",
                                 "*--kraftcheck-time-limit*"])


def test_options_reach_the_fixture(pytester):
    pytester.makepyfile("""
        def test_opts(kraftcheck_options):
            assert kraftcheck_options == {"backend": "docker", "seed": 17, "time_limit_s": 4.5}
    """)
    result = pytester.runpytest("--kraftcheck-backend", "docker", "--kraftcheck-seed", "17",
                                "--kraftcheck-time-limit", "4.5")
    result.assert_outcomes(passed=1)


def test_a_failing_run_prints_store_and_replay_command(pytester):
    # The runner is replaced inside the inner session only: this checks the plugin's reporting, not runs.
    pytester.makepyfile("""
        import kraftcheck.runner as runner
        from pathlib import Path

        def fake_execute(spec, store_root, progress=True, report=True, out=None, environment=None):
            return runner.RunOutcome(Path(store_root) / "queue" / "RUN", 1, {"valid": False})

        def test_run(kraftcheck_run, monkeypatch):
            monkeypatch.setattr(runner, "execute", fake_execute)
            outcome = kraftcheck_run(time_limit_s=1, seed=99)
            assert outcome.exit_code == 0
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*kraftcheck*", "*store:*queue/RUN*", "*verdict: invalid (exit code 1)*",
                                 "*replay: kraftcheck run --replay *spec.json*"])


def test_passing_tests_print_nothing_extra(pytester):
    pytester.makepyfile("""
        def test_ok(kraftcheck_options):
            assert kraftcheck_options == {}
    """)
    result = pytester.runpytest("-rA")
    result.assert_outcomes(passed=1)
    assert "replay:" not in result.stdout.str()


def test_importing_the_plugin_loads_nothing_heavy():
    # pytest imports the plugin in every session of any project where kraftcheck is installed: it must not
    # pull in checkers, nemeses, reports, workloads, Spark or a Kafka client at import time.
    import subprocess
    import sys

    heavy = ("checkers", "nemesis", "reports", "workloads", "spark_analysis", "simulator", "reference_impl",
             "kafka", "confluent_kafka", "aiokafka", "pyspark", "pandas", "pyarrow", "docker", "matplotlib",
             "kraftcheck.runner", "harness.cluster")
    code = ("import sys, kraftcheck.pytest_plugin\n"
            f"heavy = {heavy!r}\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
