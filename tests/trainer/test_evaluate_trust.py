"""jobs.evaluate loads a checkpoint only after the check --resume makes: one another user owns, or others can
write, is refused with one line naming it, and nothing of it is read (its metadata is a pickle: code)."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.shard_fixtures import write_text_shards
from tests.trainer.test_checkpoints import planted_checkpoint


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    write_text_shards(folder, seq_len=256)
    return folder


@pytest.mark.parametrize("planted_by", ["another user's folder", "another user's file", "others-write"])
def test_evaluate_refuses_a_checkpoint_that_is_not_the_users_alone(shards, sample_dir, tmp_path, request, planted_by):
    marker = tmp_path / "ran"
    checkpoint = planted_checkpoint(tmp_path / "run", marker)
    if planted_by == "others-write":
        (checkpoint / ".metadata").chmod(0o666)
        refused = checkpoint / ".metadata"
    else:
        uid = request.getfixturevalue("other_user").uid
        refused = checkpoint if planted_by == "another user's folder" else checkpoint / ".metadata"
        os.chown(refused, uid, uid)
    done = subprocess.run(
        [sys.executable, "-m", "jobs.evaluate", "--run-dir", str(tmp_path / "run"), "--shards", str(shards),
         "--tokenizer", str(shards / "tokenizer.json"), "--input", str(sample_dir / "debian-reference.en*")],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert not marker.exists()  # the pickle was never read
    assert done.returncode != 0 and done.stdout == "", done.stdout
    assert len(done.stderr.strip().splitlines()) == 1 and str(refused) in done.stderr, done.stderr[-3000:]
