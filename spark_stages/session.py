"""The one SparkSession factory every job uses.

Under spark-submit the session is whatever spark-submit configured (master, resources); run as
`python -m jobs.X` it is `local[*]`. `--conf key=value` works in both. The project's packages are
zipped and shipped to the executors, so a cluster needs only the `executor` dependency group there
(spark_stages/executors.py).
"""

import atexit
import os
import sys
import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from spark_stages.class_archive import ClassArchive, archive_path, record_in_background
from spark_stages.java import ensure_java

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHIPPED_PACKAGES = ("prep", "schemas", "spark_stages")  # what executors import of the project

ARROW_BATCH_RECORDS = "spark.sql.execution.arrow.maxRecordsPerBatch"
# Rows per Arrow batch Spark hands a Python worker (the setting above): a worker holds about one
# batch, so Spark's 10,000 documents made its memory grow with the partition up to that bound
# (decontaminate 300 -> 579 MB from 10 to 157 MB of text; 358-365 MB at 157-627 MB with 1,000).
# No stage's output depends on it.
PYTHON_BATCH_ROWS = 1000
DEFAULTS = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.adaptive.enabled": "true",
    # Let adaptive execution coalesce the shuffles of persisted stages too; without it a persisted
    # join keeps 200 partitions and every later Python stage pays for 200 small tasks.
    "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
    "spark.sql.parquet.compression.codec": "zstd",
    ARROW_BATCH_RECORDS: str(PYTHON_BATCH_ROWS),  # the clean stage's --batch-records overrides it there
    "spark.sql.session.timeZone": "UTC",
    # xxhash64 of a map (session.hashable: rows told apart by every column): Spark refuses one otherwise, and
    # a map as its JSON lost microseconds and wrote a binary key as a new Java object name every run
    "spark.sql.legacy.allowHashOnMapType": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "4g",
}


def parse_conf(pairs: list[str] | None) -> dict[str, str]:
    conf = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf {pair!r}: expected key=value")
        conf[key.strip()] = value
    return conf


def launched_by_spark_submit() -> bool:
    # spark-submit starts the JVM first and hands the Python driver its gateway port.
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _packages_zip() -> str:
    path = Path(tempfile.mkdtemp(prefix="tokenmill-")) / "tokenmill.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in SHIPPED_PACKAGES:
            for file in sorted((PROJECT_ROOT / package).rglob("*")):
                if file.is_file() and "__pycache__" not in file.parts:
                    zf.write(file, file.relative_to(PROJECT_ROOT))
    return str(path)


def get_spark(app_name: str, conf_pairs: list[str] | None = None, record_archive: bool = False):
    """The Spark session of a job (local[*] unless the conf or spark-submit says otherwise). A local
    driver maps the JVM class archive when there is one (spark_stages/class_archive.py); without one,
    `record_archive` records it (the recorder's own session), else the recorder starts at exit."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    conf = parse_conf(conf_pairs)
    archive = None
    if not launched_by_spark_submit():
        java_home = ensure_java()
        # Executors run the driver's Python unless told otherwise; spark-submit reads spark.pyspark.python
        # itself, a session started from Python only reads the environment.
        os.environ["PYSPARK_PYTHON"] = conf.get("spark.pyspark.python",
                                                os.environ.get("PYSPARK_PYTHON", sys.executable))
        if "spark.driver.extraJavaOptions" not in conf:  # the user's replace all of ours
            options = [f"-Dlog4j2.configurationFile=file:{Path(__file__).with_name('log4j2.properties')}"]
            if SparkContext._gateway is None:  # this session starts the driver JVM
                archive = ClassArchive.for_launch(java_home, conf, record=record_archive)
                options += archive.java_options() if archive else []
                if archive is None and not record_archive and archive_path(java_home, conf) is not None:
                    atexit.register(record_in_background)  # none yet: recorded after this job, not during it
            conf["spark.driver.extraJavaOptions"] = " ".join(options)
    builder = SparkSession.builder.appName(app_name)
    if not launched_by_spark_submit() and "spark.master" not in conf:
        builder = builder.master("local[*]")
    if conf.get("spark.master", "local" if not launched_by_spark_submit() else "").startswith("local"):
        # Spark's 200 shuffle partitions are sized for clusters; on one machine they are 200 tiny
        # tasks per shuffle. Output files never depend on this (jobs partition their outputs).
        conf.setdefault("spark.sql.shuffle.partitions", str(max(8, 4 * (os.cpu_count() or 1))))
    submitted = SparkConf()  # under spark-submit: what the user submitted, which defaults must not override
    for key, value in DEFAULTS.items():
        if not submitted.contains(key):
            builder = builder.config(key, value)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if archive is not None and archive.recording is not None:
        spark._tokenmill_archive = archive  # the recorder finishes it (class_archive.record)
        archive.keep_at_exit(getattr(SparkContext._gateway, "proc", None))
    spark.sparkContext.setLogLevel(conf.get("tokenmill.logLevel", "ERROR"))
    spark.sparkContext.addPyFile(_packages_zip())
    return spark


@contextmanager
def session_conf(spark, settings: dict[str, str], override: bool = False):
    """Runtime SQL settings for the queries run inside the block, then back to what they were. Without
    `override` a setting the session already has (the user's --conf) is kept."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        if override or before[key] is None:
            spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            spark.conf.unset(key) if value is None else spark.conf.set(key, value)


def spark_schema(arrow_schema: pa.Schema):
    """The Spark schema of an Arrow schema from schemas/: formats are defined once, in Arrow."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema)


def column(name: str):
    """The top-level column `name` as it is written: F.col reads "score_q.v" as field v of score_q."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def hashable(frame, leave_out: tuple[str, ...] = ()) -> list:
    """Every column of `frame` but `leave_out`, as Spark's xxhash64 takes them: a hash of them tells apart rows
    that agree on every other key (maps too: spark.sql.legacy.allowHashOnMapType, in DEFAULTS)."""
    return [column(name) for name in frame.columns if name not in leave_out]
