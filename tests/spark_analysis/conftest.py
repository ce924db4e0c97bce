"""One local SparkSession for the Spark tests of this package (UI off, local[2], tiny shuffles).

Without the optional 'spark' extra (``pip install -e '.[spark]'``) the modules that import pyspark,
pandas or pyarrow are not collected; the pure ones (intervals, session arguments) still run."""

import importlib.util

import pytest

if any(importlib.util.find_spec(m) is None for m in ("pyspark", "pandas", "pyarrow")):
    collect_ignore = ["test_aggregate.py", "test_analyze_engine.py", "test_cycle_components.py",
                      "test_differential.py", "test_engine.py", "test_groups_spark.py", "test_parquet.py",
                      "test_standalone_cluster.py"]


@pytest.fixture(scope="session")
def spark():
    from spark_analysis.session import get_session, stop_session

    session = get_session("local[2]", shuffle_partitions=2, ui=False)
    yield session
    stop_session()
