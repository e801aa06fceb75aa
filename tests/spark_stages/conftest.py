import contextlib
import io
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="session")
def spark():
    """One local Spark for the whole run: starting one takes about ten seconds."""
    from spark_stages.session import get_spark

    session = get_spark("tokenmill-tests", ["spark.master=local[2]", "spark.sql.shuffle.partitions=2"])
    yield session
    session.stop()


# What another cluster would run with: more shuffle partitions, none coalesced away on small data.
OTHER_CLUSTER = {"spark.sql.shuffle.partitions": "5", "spark.sql.adaptive.coalescePartitions.enabled": "false"}


def spark_settings(spark, settings: dict[str, str]):
    """Runtime SQL settings for the duration of a block (the session is shared by the whole run)."""
    from spark_stages.session import session_conf

    return session_conf(spark, settings, override=True)


def spark_submit(job: str, *args: str, cwd) -> subprocess.CompletedProcess:
    """Runs `spark-submit jobs/<job>.py ARGS` as a user would, in local[1]."""
    from spark_stages.java import ensure_java

    spark_submit_bin = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "JAVA_HOME": ensure_java()}
    return subprocess.run([spark_submit_bin, "--master", "local[1]", str(REPO / "jobs" / f"{job}.py"), *args],
                          cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def run_module(job: str, *args: str) -> subprocess.CompletedProcess:
    """Runs `python -m jobs.<job> ARGS` from the repository root."""
    return subprocess.run([sys.executable, "-m", f"jobs.{job}", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600)


def run_printing(stage, args: list[str]) -> tuple[int, str]:
    """(exit code, what it printed) of a job run in this process (spark_stages.runner.run_stage), on the run's
    Spark: no JVM of its own, as run_module starts."""
    from spark_stages.runner import run_stage

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = run_stage(stage, args)
    return code, printed.getvalue()
