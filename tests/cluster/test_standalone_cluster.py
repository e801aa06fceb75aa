"""The pipeline on a real Spark standalone cluster, as users run it (`make test-cluster`): executors in
a virtual environment holding only the `executor` dependency group, `spark-submit jobs/pipeline.py`
from a folder outside the repository. Its tokenizer and shards are byte-identical to a local run's,
its Parquet outputs have the same content checksums, and so they stay when Python workers are
SIGKILLed mid-job or an executor's JVM is killed and the worker starts another."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.cluster.standalone import REPO, StandaloneCluster, executor_environment, kill
from tests.conftest import SAMPLE

pytestmark = pytest.mark.cluster
VOCAB = "4096"  # small: the point is equality, not the tokenizer's quality
RUN_SECONDS = 900
COMPARED = ("tokenizer/tokenizer.json", "tokenizer/bpe_same_size.json", "tokenizer/tokenizer_config.json",
            "shards/index.json")


@pytest.fixture(scope="module")
def executor_python() -> Path:
    return executor_environment(REPO / ".cluster" / "executor-venv")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local") / "out"
    done = subprocess.run([sys.executable, "-m", "jobs.pipeline", "--input", str(SAMPLE), "--output", str(out),
                           "--vocab-size", VOCAB], cwd=REPO, capture_output=True, text=True, timeout=RUN_SECONDS,
                          env={**os.environ, "PYTHONHASHSEED": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return out


class Run:
    """One `spark-submit jobs/pipeline.py` on the cluster, from a folder outside the repository."""

    def __init__(self, cluster: StandaloneCluster, executor_python: Path, folder: Path):
        self.cluster, self.out, self.events = cluster, folder / "out", folder / "events"
        self.events.mkdir(parents=True)
        self.command = [
            str(Path(sys.executable).parent / "spark-submit"), "--master", cluster.url, "--executor-memory", "4g",
            "--conf", f"spark.pyspark.python={executor_python}",
            "--conf", f"spark.pyspark.driver.python={sys.executable}",
            "--conf", "spark.eventLog.enabled=true", "--conf", "spark.eventLog.compress=false",
            "--conf", f"spark.eventLog.dir=file://{self.events}",
            str(REPO / "jobs" / "pipeline.py"), "--input", str(SAMPLE), "--output", str(self.out),
            "--vocab-size", VOCAB]
        self.cwd = folder
        self.killed: list[int] = []
        self.finished = threading.Event()  # watchers of a run that ended kill nothing

    def kill_when(self, marker: str, delay: float, victims) -> threading.Thread:
        """Once OUT/`marker` exists, waits `delay` seconds and SIGKILLs `victims()`."""
        def watch():
            while not (self.out / marker).exists():
                if self.finished.wait(0.1):
                    return
            if not self.finished.wait(delay):
                self.killed += kill(victims())

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        return thread

    def run(self, *watchers: threading.Thread) -> None:
        env = {**self.cluster.env, "PYTHONHASHSEED": "2"}  # not the local run's: nothing may depend on it
        child = subprocess.Popen(self.command, cwd=self.cwd, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            output, _ = child.communicate(timeout=RUN_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            output, _ = child.communicate()
            pytest.fail(f"spark-submit did not finish in {RUN_SECONDS} s:\n{output[-3000:]}")
        finally:  # also when interrupted: the driver and its JVM go with the test
            self.finished.set()
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        for watcher in watchers:
            watcher.join()
        assert child.returncode == 0, output[-5000:]

    def app_id(self) -> str:
        """This run's application id, from its event log (written from the driver's start on)."""
        ids = {m.group() for log in self.events.iterdir() if (m := re.search(r"app-\d+-\d+", log.name))}
        assert len(ids) == 1, f"one application per run, found {sorted(ids)}"
        return ids.pop()

    def executor_jvms(self) -> list[int]:
        return self.cluster.executor_jvms(self.app_id())

    def python_workers(self, python: Path) -> list[int]:
        return self.cluster.python_workers(python, self.app_id())

    def events_of(self, kind: str) -> list[dict]:
        logs = self.events.rglob("events_*")  # Spark 4: a folder per application, of rolled files
        tag = f'"Event":"{kind}"'  # the log is mostly query plans: parse only the lines asked for
        return [json.loads(line) for log in logs for line in log.read_text().splitlines() if tag in line]

    def failed_tasks(self) -> list[dict]:
        return [e for e in self.events_of("SparkListenerTaskEnd") if e["Task End Reason"]["Reason"] != "Success"]


def assert_same_outputs(local: Path, cluster: Path) -> None:
    shards = sorted(p.name for p in (local / "shards").glob("shard-*.arrow"))
    assert shards and shards == sorted(p.name for p in (cluster / "shards").glob("shard-*.arrow"))
    for relative in (*COMPARED, *(f"shards/{name}" for name in shards)):
        assert (local / relative).read_bytes() == (cluster / relative).read_bytes(), f"{relative} differs"
    for stage in ("clean", "dedup"):
        ours, theirs = (json.loads((root / stage / "stats.json").read_text()) for root in (local, cluster))
        assert ours["checksums"] == theirs["checksums"], f"{stage}: other rows or order"
        assert ours["kept"] == theirs["kept"] and ours["input"] == theirs["input"]
    assert not list(cluster.rglob("_staging")) and not list(cluster.rglob("*.tmp"))


def test_the_cluster_writes_what_a_local_run_writes(cluster, executor_python, local_run, tmp_path):
    run = Run(cluster, executor_python, tmp_path)
    run.run()
    assert_same_outputs(local_run, run.out)
    assert not run.failed_tasks()


def test_python_workers_killed_mid_job_change_nothing(cluster, executor_python, local_run, tmp_path):
    run = Run(cluster, executor_python, tmp_path)
    def workers():
        return run.python_workers(executor_python)
    # While the cleaning tasks run (their output is being written), and in the tokenizer's EM rounds.
    run.run(run.kill_when("clean/_staging", 2.0, workers), run.kill_when("dedup/stats.json", 8.0, workers))
    assert run.killed, "no Python worker was running when the kills came"
    assert run.failed_tasks(), "the kills hit no running task"
    assert_same_outputs(local_run, run.out)


def test_a_killed_executor_jvm_is_restarted_and_changes_nothing(cluster, executor_python, local_run, tmp_path):
    run = Run(cluster, executor_python, tmp_path)
    # In dedup's stages: persisted frames, shuffle files and checkpoints of the lost executor are gone.
    run.run(run.kill_when("dedup/_staging", 6.0, run.executor_jvms))
    assert len(run.killed) == 1
    assert run.events_of("SparkListenerExecutorRemoved") and len(run.events_of("SparkListenerExecutorAdded")) >= 2
    assert_same_outputs(local_run, run.out)
