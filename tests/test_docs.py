"""Every command the README and docs/ show still runs as written: each job's flags are flags it has,
each `make` target exists, each `python -m` module exists."""

import re
import subprocess
import sys
from functools import cache

import pytest

from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
JOB = re.compile(r"(?:python -m jobs\.(\w+)|spark-submit [^\n`]*?jobs/(\w+)\.py|torchrun [^\n`]*?jobs/(train)\.py)"
                 r"([^\n`]*(?:\\\n[^\n`]*)*)")
FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w.-]*)")


def commands() -> list[tuple[str, str, str]]:
    """(page, job, the flags' text) of every job command shown."""
    found = []
    for page in PAGES:
        for match in JOB.finditer(page.read_text(encoding="utf-8")):
            job = next(g for g in match.groups()[:3] if g)
            if not job.isupper():  # jobs.NAME: a placeholder
                found.append((page.name, job, match.group(4)))
    return found


@cache
def help_text(job: str) -> str:
    command = [sys.executable, str(REPO / "jobs" / "train.py")] if job == "train" else [sys.executable, "-m",
                                                                                          f"jobs.{job}"]
    return subprocess.run([*command, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=True).stdout


def test_the_pages_show_commands_of_every_job():
    shown = {job for _, job, _ in commands()}
    assert {"clean", "dedup", "train_tokenizer", "shards", "pipeline", "train"} <= shown


@pytest.mark.parametrize("page, job, text", commands(), ids=lambda x: x if isinstance(x, str) and len(x) < 30 else "")
def test_each_flag_shown_is_a_flag_of_its_job(page, job, text):
    known = set(FLAG.findall(help_text(job)))
    for flag in FLAG.findall(text):
        if flag.startswith("--sources.") and job == "pipeline":  # --sources.NAME.SECTION.KEY: that section's KEY
            assert "--" + flag.split(".", 2)[-1] in known, f"{page}: the pipeline has no {flag}"
            continue
        assert flag in known or flag.replace("--no-", "--", 1) in known, f"{page}: {job} has no {flag}"


def test_each_make_target_and_module_shown_exists():
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"`make ([\w-]*\w)\b(?!-)", text) + re.findall(r"^make ([\w-]+)", text, re.M):
            assert target in targets, f"{page.name}: no make target {target}"
        for module in re.findall(r"python -m ((?:benchmarks|schemas|prep|spark_stages|loaders|trainer)\.\w+)", text):
            assert (REPO / (module.replace(".", "/") + ".py")).is_file(), f"{page.name}: no module {module}"
