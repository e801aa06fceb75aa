"""A checkpoint another user could have planted is never loaded (a checkpoint is code)."""

import os
import pickle
from pathlib import Path

import pytest

from schemas.trust import UntrustedPath
from trainer.checkpoints import check_checkpoint, resume


class Planted:
    """What unpickling runs: DCP's .metadata is a pickle (a checkpoint is code)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "ran"))


def planted_checkpoint(folder: Path, marker: Path) -> Path:
    checkpoint = folder / "checkpoints" / "step-0000010"
    checkpoint.mkdir(parents=True)
    (checkpoint / ".metadata").write_bytes(pickle.dumps(Planted(marker)))
    (checkpoint / "__0_0.distcp").write_bytes(b"\0" * 64)
    return checkpoint


@pytest.mark.parametrize("planted_by", ["folder", "file", "others-write", "link"])
def test_resume_refuses_a_checkpoint_another_user_owns_or_can_write(tmp_path, other_user, planted_by):
    marker = tmp_path / "ran"
    checkpoint = planted_checkpoint(tmp_path / "run", marker)
    if planted_by == "folder":
        os.chown(checkpoint, other_user.uid, other_user.uid)
    elif planted_by == "file":
        os.chown(checkpoint / ".metadata", other_user.uid, other_user.uid)
    elif planted_by == "others-write":
        checkpoint.parent.chmod(0o777)
    else:
        (checkpoint / "__0_0.distcp").unlink()
        (checkpoint / "__0_0.distcp").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UntrustedPath):
        resume(checkpoint, None, None, None, None, 0, 1)  # refused before anything is read
    assert not marker.exists()
    check_checkpoint(planted_checkpoint(tmp_path / "mine", marker))  # this user's own and private: accepted
