"""The bundled pretraining loop's entry: FSDP2 over the loader's batches, exact and elastic resume, guarded.

One process per device (gloo on CPU, NCCL on CUDA), started by torchrun (jobs/train.py), with the NCCL
settings of the configuration (trainer/nccl.py) and its collective timeout. Rank 0 takes the run folder
(trainer/run_folder.py), every rank opens the loader, and the Trainer (trainer/trainer.py) runs the loop:
at start the ranks check together that they can train together (trainer/preflight.py). A worker dies
with its torchrun agent. Checkpoints go to DIR/checkpoints/ (trainer/checkpoints.py); per-step metrics,
events and evaluations to DIR/metrics.jsonl (trainer/metrics.py).
"""

import datetime
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from loaders import ShardLoader
from loaders.mixture import sources_of
from loaders.shard_reader import ShardError
from schemas.mixture import MixtureError, parse_weights
from schemas.trust import is_url
from trainer import nccl
from trainer.config import TrainConfig, learning_rate
from trainer.errors import RunStopped
from trainer.parallel import build_model, build_optimizer
from trainer.run_folder import die_with_parent, run_folder
from trainer.trainer import Trainer

__all__ = ["RunStopped", "TrainConfig", "build_model", "build_optimizer", "learning_rate", "train"]


def train(cfg: TrainConfig) -> None:
    """The loop in this torchrun process; its process group is destroyed however the loop ends."""
    if "TORCHELASTIC_RUN_ID" in os.environ:  # under torchrun: an orphan of a killed agent would go on writing
        die_with_parent()
    # What the run writes is the user's alone, whatever their umask (002, where each user has a group of their
    # own, made checkpoints that --resume then refused as writable by others: trainer/checkpoints.py)
    os.umask(os.umask(0o022) | 0o022)
    if problem := launch_problem(os.environ):
        print(f"jobs.train: error: {problem}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    cuda = torch.cuda.is_available()
    nccl.apply(cfg.nccl)  # read by torch and NCCL when the process group starts
    dist.init_process_group(backend="nccl" if cuda else "gloo", timeout=datetime.timedelta(seconds=cfg.nccl.timeout_s))
    try:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
        if cuda:
            torch.cuda.set_device(device)
        _train(cfg, device)
    except RunStopped as e:
        print(f"jobs.train: error: {e}", file=sys.stderr, flush=True)
        raise SystemExit(e.code) from None
    finally:
        dist.destroy_process_group()


def launch_problem(environ) -> str | None:
    """What is wrong with the variables torchrun (or jobs/train.py alone) sets, or None: torch had failed on
    them with a traceback (MASTER_PORT=abc, 70000, a WORLD_SIZE that is no number, RANK without MASTER_ADDR)."""
    numbers = {}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"):
        value = environ.get(name)
        if value is None and name != "LOCAL_RANK":
            return f"{name} is not set (launch with torchrun, or without RANK for one process)"
        if value is not None and not (value.isascii() and value.isdigit() and len(value) <= 9):
            return f"{name}={value[:40]!r} is not a whole number"
        numbers[name] = int(value or 0)
    if not environ.get("MASTER_ADDR", "").strip():
        return "MASTER_ADDR is not set (launch with torchrun, or without RANK for one process)"
    if not 1 <= numbers["MASTER_PORT"] < 65536:
        return f"MASTER_PORT={numbers['MASTER_PORT']} is not a port"
    if not numbers["RANK"] < numbers["WORLD_SIZE"]:
        return f"RANK={numbers['RANK']} is not below WORLD_SIZE={numbers['WORLD_SIZE']}"
    return None


def _train(cfg: TrainConfig, device: torch.device) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if cfg.global_batch_size % world:
        raise RunStopped(f"global_batch_size {cfg.global_batch_size} is not a multiple of the {world} processes", 2)
    run_dir = Path(cfg.run_dir)
    try:
        shards = [source.location for source in sources_of(cfg.shards)]
    except MixtureError as e:
        raise RunStopped(str(e), 2) from None
    for folder in (Path(location).resolve() for location in shards if not is_url(location)):
        # checkpoints/, metrics.jsonl and the lock among the shards: a folder another run or job may replace
        if folder == run_dir.resolve() or folder in run_dir.resolve().parents:
            raise RunStopped(f"run_dir {run_dir} is the shards folder {folder} or lies inside it: a run writes its "
                             "checkpoints and metrics in a folder of its own", 2)
    with run_folder(run_dir, rank, cfg.wait_for_run_dir) as refused:
        if refused:
            raise RunStopped(refused, 2)
        try:
            loader = ShardLoader(cfg.shards, cfg.global_batch_size // world, rank=rank, world_size=world,
                                 seed=cfg.seed, num_workers=cfg.num_workers, device=device,
                                 weights=parse_weights(cfg.weights) or None)
        except (ShardError, MixtureError) as e:  # shards missing or refused, weights that name no source
            raise RunStopped(str(e), 2) from None
        try:
            Trainer(cfg, device, loader, run_dir).train()
        except ShardError as e:  # a row that fails its checks as it is read (an id past the vocabulary): the
            # shards are damaged, which no skip of positions repairs; `python -m schemas.validate` finds them all
            raise RunStopped(f"{e} (the shards are damaged: python -m schemas.validate {cfg.shards})", 2) from None
        finally:
            loader.close()
