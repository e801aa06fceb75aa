"""A real Spark standalone cluster on 127.0.0.1 for tests: one master and one worker started from the
installed pyspark's `spark-class`, executors in a Python environment of their own, and the means to
kill what users lose in production (Python workers, an executor's JVM). Every process it starts, and
every process those start, is stopped on exit, also when a test fails."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark

from spark_stages.executors import group_requirements
from spark_stages.java import ensure_java

SPARK_HOME = Path(pyspark.__file__).parent
REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children(pid: int) -> list[int]:
    """Every live descendant of `pid` (from /proc), deepest last."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in parents.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def kill(pids: list[int]) -> list[int]:
    killed = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except ProcessLookupError:
            pass
    return killed


def executor_environment(folder: Path) -> Path:
    """A virtual environment holding the `executor` dependency group alone, at the driver's versions
    (rebuilt when those change); returns its python."""
    pins = group_requirements()
    assert pins, "tokenmill is not installed: the executor group is unknown"
    python, stamp = folder / "bin" / "python", folder / "requirements.txt"
    if not (python.exists() and stamp.exists() and stamp.read_text().split() == pins):
        for command in ([sys.executable, "-m", "venv", "--clear", str(folder)],
                        [str(python), "-m", "pip", "install", "-q", *pins]):
            done = subprocess.run(command, capture_output=True, text=True)
            assert done.returncode == 0, f"{' '.join(command)}:\n{done.stderr[-3000:]}"
        stamp.write_text("\n".join(pins) + "\n")
    return python


class StandaloneCluster:
    """`with StandaloneCluster(folder) as cluster:` one master, `workers` workers of `cores` cores each
    (`worker` is the first)."""

    def __init__(self, folder: Path, cores: int = 2, memory: str = "6g", workers: int = 1):
        self.folder, self.cores, self.memory, self.workers = folder, cores, memory, workers
        self.env = {**os.environ, "JAVA_HOME": ensure_java(), "SPARK_HOME": str(SPARK_HOME),
                    "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(folder / "logs")}
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen] = []

    def _start(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")
        process = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], env=self.env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        return process

    def __enter__(self) -> "StandaloneCluster":
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                        "--port", str(self.port), "--webui-port", str(free_port()))
            started = [self._start(f"worker{n or ''}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                   "--cores", str(self.cores), "--memory", self.memory,
                                   "--webui-port", str(free_port()), "--work-dir", str(self.folder / f"work{n or ''}"),
                                   self.url)
                       for n in range(self.workers)]
            self.worker = started[0]
            self._wait_for("master", "Registering worker", 120, self.workers)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_for(self, name: str, text: str, seconds: float, times: int = 1) -> None:
        deadline = time.monotonic() + seconds
        while (self.folder / f"{name}.log").read_text(errors="replace").count(text) < times:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                raise RuntimeError(f"the cluster did not start: {(self.folder / f'{name}.log').read_text()[-3000:]}")
            time.sleep(0.5)

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Master, worker, executors and their Python daemons (which leave the worker's process group)."""
        for process in self.processes:
            kill(children(process.pid)[::-1] + [process.pid])
        for process in self.processes:
            process.wait()

    def executor_jvms(self, app_id: str) -> list[int]:
        """The executor JVMs of application `app_id`: a finished application's executor may still be
        shutting down beside the next one's, and is not the next test's to kill."""
        return [pid for pid in children(self.worker.pid)
                if "org.apache.spark.executor.CoarseGrainedExecutorBackend" in (line := command_line(pid))
                and app_id in line]

    def python_workers(self, python: Path, app_id: str) -> list[int]:
        """The Python daemons of application `app_id`'s executors and the workers they forked."""
        return [pid for jvm in self.executor_jvms(app_id) for pid in children(jvm)
                if command_line(pid)[0] == str(python)]
