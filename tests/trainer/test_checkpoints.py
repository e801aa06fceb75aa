"""A checkpoint saved before mixtures (the loader's state as a flat dict of version 1) still resumes,
in one process (gloo, world 1); a checkpoint another user could have planted is never loaded."""

import os
import pickle
from pathlib import Path

import pytest
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict

from loaders.shard_loader import ShardLoader
from schemas.trust import UntrustedPath
from tests.shard_fixtures import write_shards
from trainer.checkpoints import check_checkpoint, resume, rng_state
from trainer.loop import TrainConfig, build_model, build_optimizer


def test_a_checkpoint_with_the_version_1_loader_state_resumes(tmp_path):
    write_shards(tmp_path / "shards")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        cfg = TrainConfig(shards=str(tmp_path / "shards"), global_batch_size=4, warmup_steps=2)
        loader = ShardLoader(cfg.shards, 4, shm_dir=str(tmp_path))
        model = build_model(cfg, loader.embedding_size, loader.device)
        optimizer, scheduler = build_optimizer(model, cfg)
        model_state, optimizer_state = get_state_dict(model, optimizer)
        version_1 = {"version": 1, "position": 12, "seed": 0, "shuffle_block_shards": 4, "global_batch_size": 4,
                     "epoch_size": loader.order.epoch_size}
        dcp.save({"model": model_state, "optimizer": optimizer_state, "scheduler": scheduler.state_dict(),
                  "train": {"step": 3, "world_size": 1, "loader": version_1}, "rng_rank0": rng_state()},
                 checkpoint_id=str(tmp_path / "step-0000003"))
        fresh = ShardLoader(cfg.shards, 4, shm_dir=str(tmp_path))
        assert resume(tmp_path / "step-0000003", model, optimizer, scheduler, fresh, 0, 1) == 3
        assert fresh.position == 12 and next(fresh)["sample_index"].tolist() == [12, 13, 14, 15]
        loader.close()
        fresh.close()
    finally:
        dist.destroy_process_group()


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
