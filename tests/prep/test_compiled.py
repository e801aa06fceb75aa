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


def _import_compiled(tmp: Path, home: Path, **env) -> subprocess.CompletedProcess:
    """A fresh process importing the compiled kernels, the system's temporary folder at `tmp` and the home
    at `home`; it prints the numba cache folder it was given."""
    environment = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    return subprocess.run([sys.executable, "-c", "import os, prep.compiled; print(os.environ['NUMBA_CACHE_DIR'])"],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**environment, "TMPDIR": str(tmp), "HOME": str(home), **env})


def test_numba_cache_folders_planted_by_another_user_block_nothing(tmp_path, other_user):
    """numba reads its cache's index files with pickle: a folder another user made would run their code.
    The folders once used (/tmp/tokenmill-numba-UID, and /tmp/tokenmill-UID where home cannot hold the cache)
    were predictable: planted there, they stopped every job of this user."""
    tmp, home = shared_tmp(tmp_path / "tmp"), tmp_path / "home"
    planted = [tmp / f"tokenmill-numba-{os.getuid()}", tmp / f"tokenmill-{os.getuid()}"]
    for folder in planted:
        other_user.python(f"import os; os.mkdir({str(folder)!r}, 0o777); os.chmod({str(folder)!r}, 0o777)")
    result = _import_compiled(tmp, home)
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()) == home / ".cache" / "tokenmill" / "numba"  # found from the home only
    (tmp_path / "not-a-folder").write_text("")
    result = _import_compiled(tmp, tmp_path / "not-a-folder" / "home")  # no home to keep a cache in
    assert result.returncode == 0, result.stderr
    assert f"{planted[1]} belongs to uid {other_user.uid}" in result.stderr  # passed over, with a warning
    chosen = Path(result.stdout.strip())
    assert chosen.parent.parent == tmp and chosen.parent not in planted and not chosen.exists()  # its own, gone at exit
    assert all(folder.stat().st_uid == other_user.uid for folder in planted)  # theirs, left alone


@pytest.mark.parametrize("problem", ["others-write", "symlink"])
def test_numba_cache_folder_that_others_can_write_or_that_is_a_link_is_refused(tmp_path, problem):
    """In the user's own cache only the user (or root) can make it so: refused, naming it, rather than used."""
    folder = tmp_path / "home" / ".cache" / "tokenmill" / "numba"
    folder.parent.mkdir(parents=True, mode=0o700)
    if problem == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        folder.symlink_to(tmp_path / "elsewhere")
    else:
        folder.mkdir()
        folder.chmod(0o777)
    result = _import_compiled(tmp_path, tmp_path / "home")
    assert result.returncode != 0 and str(folder) in result.stderr
    assert ("symbolic link" if problem == "symlink" else "written by other users") in result.stderr


def test_numba_cache_folder_is_made_private_and_a_users_own_choice_is_kept(tmp_path):
    home = tmp_path / "home"
    result = _import_compiled(tmp_path, home)
    assert result.returncode == 0 and Path(result.stdout.strip()) == home / ".cache" / "tokenmill" / "numba"
    assert stat.S_IMODE(Path(result.stdout.strip()).stat().st_mode) == 0o700
    result = _import_compiled(tmp_path, home, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    assert Path(result.stdout.strip()) == tmp_path / "xdg" / "tokenmill" / "numba"
    chosen = tmp_path / "mine"
    chosen.mkdir(mode=0o777)
    chosen.chmod(0o777)
    result = _import_compiled(tmp_path, home, NUMBA_CACHE_DIR=str(chosen))
    assert result.returncode == 0 and result.stdout.strip() == str(chosen)  # the user's config is trusted
