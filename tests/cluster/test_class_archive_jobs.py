"""The JVM's class archive as a fresh machine meets it (spark_stages/class_archive.py): `make install`
records it and every later job maps it; a broken one is ignored; a job that finds none records one
as it exits. Each test starts several JVMs of their own (a minute each): with the cluster tests
(`make test-cluster`), where a machine's first runs are tested."""

import os
import subprocess
import sys
import time

import pytest

from spark_stages.class_archive import CACHE_ENV, UNUSED_DAYS
from tests.conftest import REPO

pytestmark = pytest.mark.cluster

# A job's whole life in a process of its own: its JVM starts, runs a query and exits with the process.
JOB = ("from spark_stages.session import get_spark; "
       "print(get_spark('archive-test', ['spark.master=local[1]']).range(1000).selectExpr('sum(id)').first()[0])")


def run_job(cache, class_log=None) -> subprocess.CompletedProcess:
    env = {**os.environ, CACHE_ENV: str(cache)}
    if class_log:  # the JVM's own record of where each class came from
        env["JAVA_TOOL_OPTIONS"] = f"-Xlog:class+load=info:file={class_log}"
    return subprocess.run([sys.executable, "-c", JOB], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


def record(cache) -> subprocess.CompletedProcess:
    """The recorder, as `make install` runs it."""
    return subprocess.run([sys.executable, "-m", "spark_stages.class_archive"], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env={**os.environ, CACHE_ENV: str(cache)})


def test_the_recorder_records_the_archive_jobs_map_it_and_a_broken_one_is_ignored(tmp_path):
    cache = tmp_path / "jvm"
    cache.mkdir()
    # Archives of another Java or Spark: one unused for longer than UNUSED_DAYS, one mapped yesterday.
    unused, recent = cache / "spark-0000000000000000.jsa", cache / "spark-1111111111111111.jsa"
    for archive, age in ((unused, UNUSED_DAYS + 1), (recent, 1)):
        archive.write_bytes(b"another key's archive")
        os.utime(archive, (time.time() - age * 86400,) * 2)
    assert record(cache).returncode == 0
    archives = sorted(set(cache.glob("spark-*.jsa")) - {recent})
    assert len(archives) == 1 and not list(cache.glob("*.partial"))  # moved into place whole
    assert not unused.exists() and recent.exists()  # removed as the new one was recorded

    os.utime(archives[0], (time.time() - 86400,) * 2)
    second = run_job(cache, tmp_path / "second.log")
    assert second.returncode == 0 and second.stdout.split()[-1] == "499500", second.stderr
    assert "shared objects file (top)" in (tmp_path / "second.log").read_text()  # classes from the archive
    assert time.time() - archives[0].stat().st_mtime < 600  # marked as used

    archives[0].unlink()  # the JVM writes it read-only
    archives[0].write_bytes(b"not a class archive")
    third = run_job(cache, tmp_path / "third.log")
    assert third.returncode == 0 and third.stdout.split()[-1] == "499500", third.stderr
    assert "shared objects file (top)" not in (tmp_path / "third.log").read_text()
    assert "[cds" not in third.stdout + third.stderr  # refused without a word to the user


def test_a_job_without_an_archive_runs_without_one_and_has_it_recorded_after_it(tmp_path):
    """Recording slows the JVM that records (44 s for the sample's dedup against 23): no job records while
    it runs; the one that found none starts the recorder as it exits."""
    cache = tmp_path / "jvm"
    first = run_job(cache, tmp_path / "first.log")
    assert first.returncode == 0 and first.stdout.split()[-1] == "499500", first.stderr
    assert "shared objects file (top)" not in (tmp_path / "first.log").read_text()  # no archive mapped ...
    deadline = time.time() + 300
    while not list(cache.glob("spark-*.jsa")) and time.time() < deadline:  # ... and one recorded after it
        time.sleep(1)
    second = run_job(cache, tmp_path / "second.log")
    assert second.returncode == 0 and "shared objects file (top)" in (tmp_path / "second.log").read_text()


