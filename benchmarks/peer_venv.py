"""The peers a benchmark measures against, each in a virtual environment of its own under .bench/ (none of
them is a tokenmill dependency), made and installed the first time it is asked for."""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / ".bench"


def peer_python(name: str, packages: list[str], given: str | None = None) -> str:
    """`given`, or the Python of .bench/NAME with `packages` installed."""
    if given:
        return given
    python = BENCH / name / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(BENCH / name)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True)
    return str(python)
