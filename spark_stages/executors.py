"""What Spark executors need, and a check that they have it before a job starts.

Executors run the project's code shipped with each job (prep/, schemas/, spark_stages/ zipped); they need
only the packages of the `executor` dependency group in pyproject.toml, at the driver's versions.

    python -m jobs.executor_env     # prints the pip command that installs the group on a node

Nothing here is imported at module level beyond the standard library: the check must reach the
executors even when their environment lacks everything else.
"""

import importlib
import importlib.metadata
import re
import sys

GROUP = "executor"
PROJECT = "tokenmill"


class ExecutorEnvironmentError(RuntimeError):
    """The executors' Python cannot run the job; the message says what is missing and how to add it."""


def group_requirements() -> list[str]:
    """The `executor` group as `name==version` at this (the driver's) environment's versions."""
    try:
        declared = importlib.metadata.requires(PROJECT) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    names = [re.split(r"[\s;<>=!~\[]", r, maxsplit=1)[0] for r in declared if f'extra == "{GROUP}"' in r]
    return [f"{name}=={importlib.metadata.version(name)}" for name in names]


def install_command() -> str:
    pins = group_requirements()
    if not pins:
        return f"pip install the [project.optional-dependencies] {GROUP} group of tokenmill's pyproject.toml"
    return "pip install " + " ".join(pins)


def _first_missing(modules: tuple[str, ...]) -> tuple[str, str, str, str] | None:
    """Runs on an executor: (module, what failed to import, the error, its Python) or None."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as e:
            return module, getattr(e, "name", None) or module, f"{type(e).__name__}: {e}", sys.executable
    return None


MISSING_FIELDS = ("module", "name", "error", "python")
CHECK_TASKS_MAX = 1024


def _missing_batches(batches, modules: tuple[str, ...]):
    """Runs on an executor, as an Arrow UDF: one row per batch when something is missing, else none."""
    import pyarrow as pa

    schema = pa.schema([(field, pa.string()) for field in MISSING_FIELDS])
    for _ in batches:
        missing = _first_missing(modules)
        yield pa.RecordBatch.from_pylist([dict(zip(MISSING_FIELDS, missing))] if missing else [], schema=schema)


def check_executors(spark, modules: tuple[str, ...]) -> None:
    """A task per core (up to CHECK_TASKS_MAX) imports `modules` (what the job's stages run): a missing
    package fails the job in seconds with its name, not an hour in. The tasks are Arrow UDFs like the
    stages' own, so the Python workers they start, with those modules imported, are the ones the first
    stage reuses (an RDD task would start workers of another pool: 1.7 s more per job on 2 cores). When
    even those cannot start (no pyarrow, another Python), one plain task says what is missing."""

    tasks = max(1, min(spark.sparkContext.defaultParallelism, CHECK_TASKS_MAX))
    schema = ", ".join(f"{field} string" for field in MISSING_FIELDS)
    try:
        rows = spark.range(0, tasks, 1, tasks).mapInArrow(lambda batches: _missing_batches(batches, modules),
                                                         schema).collect()
    except Exception as e:  # noqa: BLE001  (the plain task below says why, or this error does)
        _check_with_a_plain_task(spark, modules, e)
        return
    if rows:
        _raise_missing(tuple(rows[0][field] for field in MISSING_FIELDS))


def _check_with_a_plain_task(spark, modules: tuple[str, ...], arrow_error: Exception) -> None:
    try:
        missing = spark.sparkContext.parallelize([modules], 1).map(_first_missing).collect()[0]
    except Exception as e:  # the worker did not even start (another Python version, no such interpreter)
        message = _first_line(e)
        raise ExecutorEnvironmentError(f"the executors' Python cannot run tokenmill's tasks: {message}") from None
    if missing:
        _raise_missing(missing)
    raise ExecutorEnvironmentError(f"the executors cannot run tokenmill's Arrow tasks: {_first_line(arrow_error)}")


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _raise_missing(missing: tuple[str, str, str, str]) -> None:
    module, name, error, python = missing
    raise ExecutorEnvironmentError(
        f"executors cannot import {name!r} (needed by {module}; {error}) in {python}: every node needs the "
        f"'{GROUP}' dependency group: {install_command()}")
