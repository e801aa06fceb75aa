"""Text as code points for the compiled kernels: from Python strings and straight from Arrow's UTF-8."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from prep.compiled import code_points_of
from prep.ingest.inputs import expand_inputs
from prep.ingest.readers import Document, read_file
from tests.conftest import REPO, shared_tmp
from tests.fuzz_text import fuzz_strings, hostile_strings


def test_an_arrow_column_is_decoded_to_the_same_code_points_as_python_strings(sample_dir):
    sample = [r.text for f in expand_inputs(str(sample_dir)) for r in read_file(f) if isinstance(r, Document)]
    texts = sample[:300] + hostile_strings(3_000) + list(fuzz_strings()) + ["", "\U0010ffff"]
    expected, expected_starts = code_points_of(texts)
    for column in (pa.array(texts, pa.string()), pa.array(texts, pa.large_string()),
                   pa.array(["skipped"] + texts + ["too"]).slice(1, len(texts))):  # a slice: offsets not from 0
        code_points, starts = code_points_of(column)
        assert np.array_equal(code_points, expected) and np.array_equal(starts, expected_starts)


def test_a_null_text_in_an_arrow_column_is_refused():
    with pytest.raises(ValueError, match="1 null texts"):
        code_points_of(pa.array(["a", None]))


def _import_compiled(tmp: Path, **env) -> subprocess.CompletedProcess:
    """A fresh process importing the compiled kernels with the system's temporary folder at `tmp`."""
    environment = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    return subprocess.run([sys.executable, "-c", "import prep.compiled"], cwd=REPO, capture_output=True, text=True,
                          env={**environment, "TMPDIR": str(tmp), **env}, timeout=120)


def test_numba_cache_folder_planted_by_another_user_is_refused(tmp_path, other_user):
    """numba reads its cache's index files with pickle: a cache folder another user made would run their code."""
    tmp = shared_tmp(tmp_path / "tmp")
    planted = tmp / f"tokenmill-numba-{os.getuid()}"
    other_user.python(f"import os; os.mkdir({str(planted)!r}, 0o777); os.chmod({str(planted)!r}, 0o777)")
    result = _import_compiled(tmp)
    assert result.returncode != 0 and str(planted) in result.stderr and f"uid {other_user.uid}" in result.stderr


@pytest.mark.parametrize("problem", ["others-write", "symlink"])
def test_numba_cache_folder_that_others_can_write_or_that_is_a_link_is_refused(tmp_path, problem):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    folder = tmp / f"tokenmill-numba-{os.getuid()}"
    if problem == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "elsewhere")
    else:
        folder.mkdir()
        folder.chmod(0o777)
    result = _import_compiled(tmp)
    assert result.returncode != 0 and str(folder) in result.stderr
    assert ("symbolic link" if problem == "symlink" else "written by other users") in result.stderr


def test_numba_cache_folder_is_made_private_and_a_users_own_choice_is_kept(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    assert _import_compiled(tmp).returncode == 0
    assert stat.S_IMODE((tmp / f"tokenmill-numba-{os.getuid()}").stat().st_mode) == 0o700
    chosen = tmp_path / "mine"
    chosen.mkdir(mode=0o777)
    chosen.chmod(0o777)
    assert _import_compiled(tmp, NUMBA_CACHE_DIR=str(chosen)).returncode == 0  # the user's config is trusted
