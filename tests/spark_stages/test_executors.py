"""The `executor` dependency group is exactly what executors import, and a job whose executors lack
part of it stops at start with the missing module and the group named."""

import ast
import importlib.metadata
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from spark_stages.executors import GROUP, group_requirements
from tests.conftest import REPO, SAMPLE

# Executors run prep/ and schemas/ (any import, lazy ones too) and import the stage modules of
# spark_stages/ (their module-level imports; what their functions import lazily runs on the driver).
# Spark brings its own pyspark and py4j.
EXECUTOR_SIDE = {"prep": "all", "schemas": "all", "spark_stages": "module level"}
FROM_SPARK = {"pyspark", "py4j"}


def _imports(tree: ast.AST, module_level_only: bool) -> set[str]:
    nodes = tree.body if module_level_only else ast.walk(tree)
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def executor_imports() -> set[str]:
    found = set()
    for package, scope in EXECUTOR_SIDE.items():
        for path in (REPO / package).rglob("*.py"):
            found |= _imports(ast.parse(path.read_text()), scope == "module level")
    local = {p.name for p in REPO.iterdir() if (p / "__init__.py").exists()}
    return {name for name in found if name not in sys.stdlib_module_names and name not in local | FROM_SPARK}


def test_the_executor_group_is_exactly_what_executors_import():
    distributions = importlib.metadata.packages_distributions()
    needed = {distributions[module][0].lower() for module in executor_imports()}
    declared = {pin.split("==")[0].lower() for pin in group_requirements()}
    assert declared == needed, f"'{GROUP}' group {sorted(declared)}; executors import {sorted(needed)}"


def python_without(module: str, folder: Path) -> Path:
    """An interpreter for executors that is this one minus `module` (as a node lacking the package)."""
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        "class Missing:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] == {module!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Missing())\n")
    wrapper = folder / "python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{folder}${{PYTHONPATH:+:$PYTHONPATH}}" exec {sys.executable} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper


@pytest.mark.spark
# xxhash: the shards stage needs it (schemas/shards.py); numba: the compiled kernels (prep/compiled.py);
# pyarrow: Spark's Arrow tasks, the check's own among them, cannot even start without it (the check then
# asks a plain Python task what is missing).
@pytest.mark.parametrize("package", ["xxhash", "numba", "pyarrow"])
def test_a_job_stops_at_start_when_executors_lack_a_package(tmp_path, package):
    python = python_without(package, tmp_path)
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "jobs.pipeline", "--input", str(SAMPLE), "--output", str(out),
                             "--conf", f"spark.pyspark.python={python}"],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr[-2000:]
    error = result.stderr.strip().splitlines()[-1]
    assert f"'{package}'" in error and f"'{GROUP}' dependency group" in error and "pip install" in error, error
    assert not out.exists()  # nothing ran: the check comes before the first stage
