import os
import subprocess
import sys

import pytest

from spark_stages.class_archive import CACHE_ENV, ClassArchive, _being_recorded, archive_key
from tests.conftest import REPO

# A job's whole life in a process of its own: its JVM starts, runs a query and exits with the process.
JOB = ("from spark_stages.session import get_spark; "
       "print(get_spark('archive-test', ['spark.master=local[1]']).range(1000).selectExpr('sum(id)').first()[0])")


def run_job(cache, class_log=None) -> subprocess.CompletedProcess:
    env = {**os.environ, CACHE_ENV: str(cache)}
    if class_log:  # the JVM's own record of where each class came from
        env["JAVA_TOOL_OPTIONS"] = f"-Xlog:class+load=info:file={class_log}"
    return subprocess.run([sys.executable, "-c", JOB], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.spark
def test_the_first_job_records_the_archive_the_next_maps_it_and_a_broken_one_is_ignored(tmp_path):
    cache = tmp_path / "jvm"
    first = run_job(cache)
    assert first.returncode == 0 and first.stdout.split()[-1] == "499500", first.stderr
    archives = list(cache.glob("spark-*.jsa"))
    assert len(archives) == 1 and not list(cache.glob("*.partial"))  # moved into place whole

    second = run_job(cache, tmp_path / "second.log")
    assert second.returncode == 0 and second.stdout.split()[-1] == "499500", second.stderr
    assert "shared objects file (top)" in (tmp_path / "second.log").read_text()  # classes from the archive

    archives[0].unlink()  # the JVM writes it read-only
    archives[0].write_bytes(b"not a class archive")
    third = run_job(cache, tmp_path / "third.log")
    assert third.returncode == 0 and third.stdout.split()[-1] == "499500", third.stderr
    assert "shared objects file (top)" not in (tmp_path / "third.log").read_text()
    assert "[cds" not in third.stdout + third.stderr  # refused without a word to the user


def test_partial_recordings_of_dead_processes_are_removed_and_live_ones_respected(tmp_path):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"spark-aaaa.{ended.stdout.strip()}.partial"
    live = tmp_path / f"spark-bbbb.{os.getpid()}.partial"
    dead.write_bytes(b"x")
    live.write_bytes(b"x")
    assert not _being_recorded(tmp_path, "spark-aaaa")
    assert not dead.exists() and live.exists()
    assert _being_recorded(tmp_path, "spark-bbbb")


def test_the_key_follows_the_java_and_the_classpath(monkeypatch, tmp_path):
    from spark_stages.java import ensure_java

    home = ensure_java()
    assert archive_key(home, {}) == archive_key(home, {"spark.master": "local[2]"})
    assert archive_key(home, {}) != archive_key(home, {"spark.jars": "extra.jar"})
    assert archive_key(home, {}) != archive_key(str(tmp_path), {})  # another Java
    monkeypatch.setenv(CACHE_ENV, "off")
    assert ClassArchive.for_launch(home, {}) is None
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    recording = ClassArchive.for_launch(home, {})
    assert recording.recording is not None and "-XX:ArchiveClassesAtExit" in recording.java_options()[0]
    recording.path.write_bytes(b"recorded")
    assert ClassArchive.for_launch(home, {}).java_options()[0] == f"-XX:SharedArchiveFile={recording.path}"
