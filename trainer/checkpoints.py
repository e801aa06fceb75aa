"""Checkpoints of the training loop: asynchronous, complete or absent, and exact to resume from.

DIR/checkpoints/step-NNNNNNN holds the model, optimizer, scheduler, step, world size, the loader's
state (its skips included), the training guard's and each rank's RNG states
(torch.distributed.checkpoint). A save is written as step-NNNNNNN.partial on a gloo group of its own
and renamed by rank 0 once every rank's part and DCP's metadata are on disk; the ranks decide that
together at a step boundary. Loading reshards the model and optimizer when the world size changed.

A checkpoint is code: DCP reads its metadata with pickle, as torch.load reads any PyTorch checkpoint.
So whatever loads one (resume(), jobs.evaluate) first calls check_checkpoint: only a checkpoint folder of
this user's that nobody else can write (owner and mode of the folder, its parent and every file in it:
schemas/trust.py), never one from elsewhere.
"""

import json
import os
import random
import shutil
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

from schemas.trust import check_private


class Checkpoints:
    """DIR/checkpoints/step-NNNNNNN: complete ones only (written as .partial, renamed by rank 0 once
    every rank's part and DCP's metadata are on disk)."""

    def __init__(self, run_dir: Path, keep: int, rank: int, device: torch.device):
        self.folder, self.keep, self.rank, self.device = run_dir / "checkpoints", keep, rank, device
        self.group = dist.new_group(backend="gloo")  # not the training group: no deadlock with its collectives
        self.pending: tuple[object, Path] | None = None
        # the newest complete checkpoint this run saved or resumed from (every rank knows it: poll decides
        # together): what a rollback goes back to, never another run's left in the folder
        self.ours: Path | None = None
        if rank == 0:
            self.folder.mkdir(parents=True, exist_ok=True)
            for partial in self.folder.glob("*.partial"):  # a save that was killed: never loaded
                shutil.rmtree(partial, ignore_errors=True)
        dist.barrier()

    def latest(self) -> Path | None:
        return latest_checkpoint(self.folder.parent)

    def save(self, state: dict, step: int) -> None:
        self.wait()
        target = self.folder / f"step-{step:07d}"
        future = dcp.async_save(state, checkpoint_id=str(target) + ".partial", process_group=self.group)
        self.pending = (future, target)

    def poll(self, block: bool = False) -> None:
        """Finishes the pending save once every rank's part is written (or waits for that). Every rank
        calls this at the same step and they decide together: a rank alone in a barrier while the
        others enter a training collective would deadlock."""
        if self.pending is None:
            return
        future, target = self.pending
        if block:
            future.result()
        everyone_done = torch.tensor([int(future.done())], device=self.device)  # NCCL takes device tensors
        dist.all_reduce(everyone_done, op=dist.ReduceOp.MIN)
        if not everyone_done.item():
            return
        future.result()  # re-raises a failed save
        self.pending = None
        self.ours = target
        if self.rank == 0:  # the coordinator's part includes DCP's metadata, written after everyone's data
            os.replace(str(target) + ".partial", target)
            for old in sorted(p for p in self.folder.glob("step-*") if not p.name.endswith(".partial"))[:-self.keep]:
                shutil.rmtree(old, ignore_errors=True)

    def ours_on_disk(self) -> Path | None:
        """After the pending save: `ours`, renamed into place by rank 0 before any rank goes on."""
        self.wait()
        dist.barrier(group=self.group)
        return self.ours

    def wait(self) -> None:
        self.poll(block=True)


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint of a run, if any."""
    done = sorted(p for p in (run_dir / "checkpoints").glob("step-*") if p.is_dir() and not p.name.endswith(".partial"))
    return done[-1] if done else None


def rng_state() -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def training_state(model, optimizer, scheduler, loader, step: int, rank: int, world: int,
                   guard_json: str = "") -> dict:
    """What a checkpoint holds. RNG states are per rank under rank-unique keys: DCP keeps one copy of
    a key saved by several ranks, so a shared key would hand every rank the same state."""
    model_state, optimizer_state = get_state_dict(model, optimizer)
    return {"model": model_state, "optimizer": optimizer_state, "scheduler": scheduler.state_dict(),
            "train": {"step": step, "world_size": world, "loader_json": json.dumps(loader.state_dict()),
                      "guard_json": guard_json},
            f"rng_rank{rank}": rng_state()}


def check_checkpoint(checkpoint: Path) -> None:
    """UntrustedPath unless the checkpoint, the folder holding it and everything in it are this user's
    own and nobody else can write them: unpickling a planted file would run another user's code."""
    check_private(checkpoint.parent, "the checkpoints folder")
    check_private(checkpoint, "the checkpoint")
    for path in sorted(checkpoint.rglob("*")):
        check_private(path, "a checkpoint's file", folder=path.is_dir() and not path.is_symlink())


def resume(checkpoint: Path, model, optimizer, scheduler, loader, rank: int, world: int,
           allow_new_weights: bool = False, keep_skips: bool = False) -> tuple[int, str]:
    """Loads `checkpoint` (resharded by DCP when the world size changed) after check_checkpoint; returns
    the step to run next and the training guard's state (trainer/guard.py) as saved. allow_new_weights:
    the loader's mixture weights may differ from the checkpoint's; keep_skips: the loader's skips from the
    checkpoint's position on stay (a rollback to this run's own checkpoint)."""
    check_checkpoint(checkpoint)
    state = training_state(model, optimizer, scheduler, loader, 0, rank, world)
    saved_keys = dcp.FileSystemReader(str(checkpoint)).read_metadata().state_dict_metadata
    if not any(key.startswith(f"rng_rank{rank}.") or key == f"rng_rank{rank}" for key in saved_keys):
        del state[f"rng_rank{rank}"]  # a rank the saving run did not have (resumed at a larger world size)
    if "train.guard_json" not in saved_keys:  # saved before the guard existed: it starts afresh
        del state["train"]["guard_json"]
    dcp.load(state, checkpoint_id=str(checkpoint))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    # The learning rate of the next step from this run's schedule (--steps may have changed), computed
    # the way scheduler.step() does, so that an unchanged run resumes bit for bit.
    scheduler.last_epoch -= 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "scheduler.step() before optimizer.step()": intended here
        scheduler.step()
    loader.load_state_dict(json.loads(state["train"]["loader_json"]), allow_new_weights, keep_skips)
    if f"rng_rank{rank}" in state and state["train"]["world_size"] == world:
        set_rng_state(state[f"rng_rank{rank}"])
    return int(state["train"]["step"]), state["train"].get("guard_json", "")
