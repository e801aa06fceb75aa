import pytest


@pytest.fixture(scope="session")
def spark():
    """One local Spark for the whole run: starting one takes about ten seconds."""
    from jobs.spark_session import get_spark

    session = get_spark("tokenmill-tests", ["spark.master=local[2]", "spark.sql.shuffle.partitions=2"])
    yield session
    session.stop()
