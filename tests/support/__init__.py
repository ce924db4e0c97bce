"""Test support shared by the tests and the benchmarks: seeded generators of queue histories.

``synth``: valid histories built in memory and the mutations that break them (the checkers' tests, the
Spark differential tests, ``bench/bench_checkers.py`` and ``bench/bench_linear.py``); ``synth_stream``:
histories of millions of ops written as they are simulated (``bench/bench_spark.py``). Nothing in the
installed packages imports them; the benchmarks put the repository root on ``sys.path`` and import them
as ``tests.support``.
"""
