"""A checkpoint saved before mixtures (the loader's state as a flat dict of version 1) still resumes,
in one process (gloo, world 1)."""

import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict

from loaders.shard_loader import ShardLoader
from tests.shard_fixtures import write_shards
from trainer.checkpoints import resume, rng_state
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
