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


def check_executors(spark, modules: tuple[str, ...]) -> None:
    """One small task imports `modules` (what the job's stages run) on an executor: a missing package
    fails the job in seconds with its name, not an hour in."""
    try:
        missing = spark.sparkContext.parallelize([modules], 1).map(_first_missing).collect()[0]
    except Exception as e:  # the worker did not even start (another Python version, no such interpreter)
        message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExecutorEnvironmentError(f"the executors' Python cannot run tokenmill's tasks: {message}") from None
    if missing:
        module, name, error, python = missing
        raise ExecutorEnvironmentError(
            f"executors cannot import {name!r} (needed by {module}; {error}) in {python}: every node needs the "
            f"'{GROUP}' dependency group: {install_command()}")
