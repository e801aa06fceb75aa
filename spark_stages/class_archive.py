"""A class-data-sharing (CDS) archive of the driver JVM's classes, for jobs started from Python.

A local job's JVM (python -m jobs.X) loads, parses and verifies tens of thousands of Spark classes on
its way up and while it plans its first queries: seconds of every job's fixed cost. Java's dynamic CDS
archive maps those classes ready-parsed instead. Recording one slows the JVM that records it (the
first dedup of the sample took 44 s recording, 23 s without an archive, 16 s mapping one), so no job
records it: `make install` does (`python -m spark_stages.class_archive`: a small job of the kinds of
work the jobs do, recorded, renamed into place when complete, so no job ever maps a partial one), and
a job that finds none runs without and, as it exits, starts that recorder in the background at a
lower priority; later jobs map it. The JVM checks an archive against itself and its classpath and ignores one
that does not match, silently (its CDS logging is off), so a stale or foreign archive only costs the
lost speed. The file name carries a key of the Java, Spark and extra jars, so a change records a new one;
an archive no job has mapped for UNUSED_DAYS is removed when another is recorded (each is ~190 MB).

Under spark-submit the JVM is started before any of this runs: nothing changes there.
"""

import atexit
import fcntl
import hashlib
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from schemas.trust import UntrustedPath, private_folder

CACHE_ENV = "TOKENMILL_JVM_CACHE"  # the folder for archives (default ~/.cache/tokenmill/jvm), or "off"
EXIT_WAIT_SECONDS = 120  # the recording JVM writes its archive (~200 MB) as it exits
# Settings that change the driver's classpath, and so which archive fits it.
CLASSPATH_SETTINGS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")
UNUSED_DAYS = 30
QUIET = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]  # a refused or unrecordable archive is not the user's problem


def cache_dir() -> Path | None:
    setting = os.environ.get(CACHE_ENV, "")
    if setting.lower() == "off":
        return None
    return Path(setting or Path.home() / ".cache" / "tokenmill" / "jvm")


def archive_key(java_home: str, conf: dict[str, str]) -> str:
    """Changes with the Java runtime, the Spark jars and any extra jars of the session."""
    import pyspark

    home = Path(java_home).resolve()
    release = home / "release"
    jars = Path(pyspark.__file__).parent / "jars"
    parts = [str(home), release.read_text(errors="replace") if release.is_file() else "", pyspark.__version__,
             str(jars.resolve()), *sorted(p.name for p in jars.glob("*.jar")),
             *(f"{key}={conf.get(key, '')}" for key in CLASSPATH_SETTINGS)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def archive_path(java_home: str, conf: dict[str, str]) -> Path | None:
    """Where the archive of this Java and classpath is (or will be); None when archives are off."""
    folder = cache_dir()
    return None if folder is None else folder / f"spark-{archive_key(java_home, conf)}.jsa"


@dataclass(frozen=True)
class ClassArchive:
    path: Path  # the archive the JVM maps, once it exists
    recording: Path | None = None  # where this JVM records one at exit, when there is none yet
    lock: int | None = None  # a descriptor holding the archive's lock while this process records it

    @classmethod
    def for_launch(cls, java_home: str, conf: dict[str, str], record: bool = False) -> "ClassArchive | None":
        """The archive for a JVM about to start: mapped when there is one; else, with `record` (the
        recorder), recorded by this JVM unless another process is recording it; else None (this one runs
        without). The lock is the kernel's: it goes with its process, so a killed recorder leaves nothing
        that blocks the next one."""
        path = archive_path(java_home, conf)
        if path is None:
            return None
        try:  # the archive is class data the JVM maps as code: only from a folder of this user's alone
            private_folder(path.parent, "the JVM class archive folder")
        except UntrustedPath as e:
            warnings.warn(f"{e}; the job runs without a class archive", stacklevel=2)
            return None
        except OSError:  # nowhere to record: run without
            return None
        if path.is_file():
            _mark_used(path)
            return cls(path)
        if not record:
            return None
        try:
            lock = os.open(path.with_suffix(".lock"), os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o644)
        except OSError:  # nowhere to record: run without
            return None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lock)
            return None
        if path.is_file():  # recorded while this process waited for the lock
            os.close(lock)
            return cls(path)
        recording = path.with_suffix(".partial")
        recording.unlink(missing_ok=True)  # a killed recorder's
        return cls(path, recording, lock)

    def java_options(self) -> list[str]:
        if self.recording is not None:
            return [f"-XX:ArchiveClassesAtExit={self.recording}", *QUIET]
        return [f"-XX:SharedArchiveFile={self.path}", *QUIET]

    def keep_at_exit(self, jvm_process) -> None:
        """When recording: at Python's exit, end the JVM (it exits when its stdin closes), wait for it to
        write the archive, and move the archive into place."""
        if self.recording is not None and jvm_process is not None and jvm_process.stdin is not None:
            atexit.register(_finish, jvm_process, self)


def _finish(jvm_process, archive: ClassArchive) -> None:
    from pyspark import SparkContext

    try:
        if SparkContext._active_spark_context is not None:  # stopped first: its threads expect the JVM
            SparkContext._active_spark_context.stop()
        jvm_process.stdin.close()
        code = jvm_process.wait(timeout=EXIT_WAIT_SECONDS)
        if code == 0 and archive.recording.is_file():
            os.replace(archive.recording, archive.path)
            _remove_unused(archive.path.parent)
        else:
            archive.recording.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001  (at exit: a failure here must not mask the job's result)
        pass
    finally:
        os.close(archive.lock)


def _mark_used(path: Path) -> None:
    """An archive's modification time is when a job last mapped it (access times are often not kept)."""
    try:
        os.utime(path)
    except OSError:  # a cache shared read-only: it is simply never pruned
        pass


def _remove_unused(folder: Path) -> None:
    """Archives of other Javas, Sparks or jars that no job has mapped for UNUSED_DAYS. A JVM that maps one
    meanwhile keeps its pages (the file goes when it is unmapped); one that starts after runs without."""
    for old in folder.glob("spark-*.jsa"):
        try:
            if time.time() - old.stat().st_mtime > UNUSED_DAYS * 86400:
                old.unlink()
                old.with_suffix(".lock").unlink(missing_ok=True)
        except OSError:
            pass


def record_in_background() -> None:
    """Starts the recorder (this module as a program) detached and at the lowest priority, its output
    dropped: for a job that found no archive, as it exits."""
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    try:
        subprocess.Popen([sys.executable, "-m", "spark_stages.class_archive"], env=env, cwd=root,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, preexec_fn=_lowest_priority)
    except OSError:  # no archive this time: only the speed is lost
        pass


def _lowest_priority() -> None:
    """In the recorder, before it runs: the least CPU beside jobs. A new session is a scheduler group of
    its own where the kernel groups by session (autogroup), and a group's share ignores its processes'
    nice values: the group's own is set too."""
    os.nice(19)
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("19")
    except OSError:
        pass


def record(master: str = "local[2]") -> bool:
    """Records the archive of this Java and classpath by a small job of the work the jobs do (a Python
    task over Arrow batches, a shuffle, a window, Parquet written and read back); waits until it is in
    place. Says whether one was recorded (False: archives off, one exists, or another recorder runs)."""
    import tempfile

    import pyarrow as pa

    from spark_stages.session import get_spark

    spark = get_spark("tokenmill-class-archive", [f"spark.master={master}"], record_archive=True)
    recording = getattr(spark, "_tokenmill_archive", None)
    if recording is None:
        spark.stop()
        return False
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    with tempfile.TemporaryDirectory() as folder:
        frame = spark.range(0, 20_000, 1, 4).mapInArrow(
            lambda batches: (pa.RecordBatch.from_pydict({"id": b["id"], "text": [str(i) for i in b["id"].to_pylist()]})
                             for b in batches), "id long, text string")
        frame = frame.withColumn("n", F.count("*").over(Window.partitionBy(F.col("id") % 7)))
        frame.repartition(3, "n").sortWithinPartitions("id").write.parquet(f"{folder}/out")
        spark.read.parquet(f"{folder}/out").groupBy("n").agg(F.sum("id")).toArrow()
    _finish(getattr(spark.sparkContext._gateway, "proc", None), recording)
    atexit.unregister(_finish)
    return recording.path.is_file()


if __name__ == "__main__":
    from spark_stages import class_archive  # this file as the module the session imports, not a second copy

    class_archive.record()
