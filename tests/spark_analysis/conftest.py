"""One local SparkSession for the Spark tests of this package (UI off, local[2], tiny shuffles)."""

import pytest


@pytest.fixture(scope="session")
def spark():
    from spark_analysis.session import get_session, stop_session

    session = get_session("local[2]", shuffle_partitions=2, ui=False)
    yield session
    stop_session()
