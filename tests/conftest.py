import gzip
import json
from pathlib import Path

import pytest
import zstandard

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    return SAMPLE


def write_lines(path: Path, lines: list, compress: str | None = None, mkdir: bool = False) -> Path:
    """Writes records (dicts become JSON, bytes and str are written as they are) one per line."""
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join((json.dumps(x).encode() if isinstance(x, dict) else x if isinstance(x, bytes) else x.encode())
                    + b"\n" for x in lines)
    if compress == "gz":
        data = gzip.compress(data)
    elif compress == "zst":
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path
