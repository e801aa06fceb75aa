"""The bundled pretraining loop: FSDP2 over the loader's batches, exact and elastic resume.

    torchrun --nproc_per_node=N jobs/train.py --shards SHARDS --run-dir DIR [--model tiny|125m|1b]
        [--steps N] [--global-batch-size B] [--checkpoint-every N] [--resume] [--config FILE]

One process per device (gloo on CPU, NCCL on CUDA). Every step: a batch from ShardLoader, forward
with attention inside documents only, the loss averaged over the real tokens of all ranks, AdamW
with warmup then cosine decay, gradient clipping. Checkpoints (torch.distributed.checkpoint) go to
DIR/checkpoints/step-NNNNNNN, saved asynchronously on a gloo group of their own and written as
step-NNNNNNN.partial until complete; per-step metrics go to DIR/metrics.jsonl.
"""

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])  # the project, not jobs/ (see jobs/tokenize.py)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed.checkpoint as dcp  # noqa: E402
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict  # noqa: E402
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # noqa: E402

from jobs.model import Transformer, preset  # noqa: E402
from loaders import ShardLoader  # noqa: E402
from loaders.collate import IGNORE  # noqa: E402

# Peak dense bf16 FLOP/s by device name, for MFU (vendor datasheets, no sparsity).
PEAK_FLOPS = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "A10G": 125e12, "L4": 121e12}


@dataclass
class TrainConfig:
    shards: str = "out/sample/shards"  # a shards folder or URL (index.json + shard-*.arrow)
    run_dir: str = "out/train"  # checkpoints/ and metrics.jsonl
    model: str = "tiny"  # tiny | 125m | 1b (jobs/model.py)
    steps: int = 200  # optimizer steps in all, counted from the start of the run (a resume goes on)
    global_batch_size: int = 8  # rows per step over all ranks; kept when resuming at another world size
    lr: float = 3e-4  # peak learning rate
    min_lr_ratio: float = 0.1  # cosine decay ends at lr * this
    warmup_steps: int = 2000  # linear warmup
    weight_decay: float = 0.1  # AdamW, on matrices only
    grad_clip: float = 1.0  # max global gradient norm
    checkpoint_every: int = 100  # steps between checkpoints (and one at the end)
    keep_checkpoints: int = 3  # the newest K complete ones are kept
    resume: bool = False  # continue from the newest complete checkpoint in run_dir, if any
    seed: int = 0  # initialization and data order
    activation_checkpointing: bool = False  # recompute each block's activations in backward
    compile: bool = False  # torch.compile each block
    num_workers: int = 0  # the loader's decompression processes per rank
    loss_chunk_tokens: int = 0  # > 0: logits made this many tokens at a time (less memory, one more pass)


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to lr, then cosine decay to lr * min_lr_ratio at the last step."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def build_model(cfg: TrainConfig, vocab_size: int, device: torch.device) -> Transformer:
    """Created on the meta device, sharded block by block and at the root, then materialized."""
    with torch.device("meta"):
        model = Transformer(preset(cfg.model, vocab_size))
    # One policy for blocks and root: a root without it computes its layers in fp32 against bf16 blocks.
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for i, block in enumerate(model.blocks):
        if cfg.activation_checkpointing:
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

            block = checkpoint_wrapper(block)
        if cfg.compile:
            block.compile()
        model.blocks[i] = block
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    model.to_empty(device=device)
    torch.manual_seed(cfg.seed)
    with torch.no_grad():
        model.init_weights()
    return model


def build_optimizer(model: torch.nn.Module, cfg: TrainConfig):
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    vectors = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": matrices, "weight_decay": cfg.weight_decay},
                                   {"params": vectors, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: learning_rate(step, cfg) / cfg.lr)
    return optimizer, scheduler


class Checkpoints:
    """DIR/checkpoints/step-NNNNNNN: complete ones only (written as .partial, renamed by rank 0 once
    every rank's part and DCP's metadata are on disk)."""

    def __init__(self, run_dir: Path, keep: int, rank: int, device: torch.device):
        self.folder, self.keep, self.rank, self.device = run_dir / "checkpoints", keep, rank, device
        self.group = dist.new_group(backend="gloo")  # not the training group: no deadlock with its collectives
        self.pending: tuple[object, Path] | None = None
        if rank == 0:
            self.folder.mkdir(parents=True, exist_ok=True)
            for partial in self.folder.glob("*.partial"):  # a save that was killed: never loaded
                shutil.rmtree(partial, ignore_errors=True)
        dist.barrier()

    def latest(self) -> Path | None:
        done = sorted(p for p in self.folder.glob("step-*") if p.is_dir() and not p.name.endswith(".partial"))
        return done[-1] if done else None

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
        if self.rank == 0:  # the coordinator's part includes DCP's metadata, written after everyone's data
            os.replace(str(target) + ".partial", target)
            for old in sorted(p for p in self.folder.glob("step-*") if not p.name.endswith(".partial"))[:-self.keep]:
                shutil.rmtree(old, ignore_errors=True)

    def wait(self) -> None:
        self.poll(block=True)


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


def training_state(model, optimizer, scheduler, loader, step: int, rank: int, world: int) -> dict:
    """What a checkpoint holds. RNG states are per rank under rank-unique keys: DCP keeps one copy of
    a key saved by several ranks, so a shared key would hand every rank the same state."""
    model_state, optimizer_state = get_state_dict(model, optimizer)
    return {"model": model_state, "optimizer": optimizer_state, "scheduler": scheduler.state_dict(),
            "train": {"step": step, "world_size": world, "loader": loader.state_dict()},
            f"rng_rank{rank}": rng_state()}


def resume(checkpoint: Path, model, optimizer, scheduler, loader, rank: int, world: int) -> int:
    """Loads `checkpoint` (resharded by DCP when the world size changed); returns the step to run next."""
    state = training_state(model, optimizer, scheduler, loader, 0, rank, world)
    saved_keys = dcp.FileSystemReader(str(checkpoint)).read_metadata().state_dict_metadata
    if not any(key.startswith(f"rng_rank{rank}.") or key == f"rng_rank{rank}" for key in saved_keys):
        del state[f"rng_rank{rank}"]  # a rank the saving run did not have (resumed at a larger world size)
    dcp.load(state, checkpoint_id=str(checkpoint))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    # The learning rate of the next step from this run's schedule (--steps may have changed), computed
    # the way scheduler.step() does, so that an unchanged run resumes bit for bit.
    scheduler.last_epoch -= 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "scheduler.step() before optimizer.step()": intended here
        scheduler.step()
    loader.load_state_dict(state["train"]["loader"])
    if f"rng_rank{rank}" in state and state["train"]["world_size"] == world:
        set_rng_state(state[f"rng_rank{rank}"])
    return int(state["train"]["step"])


def train_step(model, optimizer, batch: dict, world: int, cfg: TrainConfig) -> tuple[float, float, int]:
    """(loss over the real tokens of every rank, gradient norm, sum of the global batch's token ids:
    a fingerprint of the data, the same at any world size)."""
    labels = batch["labels"]
    loss_sum = model(batch["input_ids"], batch["position_ids"], batch["cu_seqlens"], labels=labels,
                     loss_chunk_tokens=cfg.loss_chunk_tokens)
    counts = torch.stack([(labels != IGNORE).sum().double(), loss_sum.detach().double(),
                          batch["input_ids"].sum().double()])
    dist.all_reduce(counts)
    real_tokens = max(1.0, counts[0].item())
    # FSDP averages gradients over ranks: scale so the result is the gradient of the global mean.
    (loss_sum * world / real_tokens).backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    grad_norm = grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return counts[1].item() / real_tokens, grad_norm.item(), int(counts[2].item())


def peak_flops(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None  # no table entry for CPUs: MFU is reported as null
    name = torch.cuda.get_device_name(device)
    return next((flops for key, flops in PEAK_FLOPS.items() if key in name), None)


def train(cfg: TrainConfig) -> None:
    cuda = torch.cuda.is_available()
    dist.init_process_group(backend="nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if cfg.global_batch_size % world:
        raise SystemExit(f"--global-batch-size {cfg.global_batch_size} is not a multiple of the {world} processes")
    run_dir = Path(cfg.run_dir)
    loader = ShardLoader(cfg.shards, cfg.global_batch_size // world, rank=rank, world_size=world, seed=cfg.seed,
                         num_workers=cfg.num_workers, device=device)
    model = build_model(cfg, loader.source.index["embedding_size"], device)
    optimizer, scheduler = build_optimizer(model, cfg)
    checkpoints = Checkpoints(run_dir, cfg.keep_checkpoints, rank, device)
    step = 0
    if cfg.resume and (latest := checkpoints.latest()) is not None:
        step = resume(latest, model, optimizer, scheduler, loader, rank, world)
        if rank == 0:
            print(f"resumed from {latest} at step {step} ({world} processes)", flush=True)
    flops_per_token, peak = model.flops_per_token(loader.seq_len), peak_flops(device)
    metrics = open(run_dir / "metrics.jsonl", "a", encoding="utf-8") if rank == 0 else None
    while step < cfg.steps:
        started = time.perf_counter()  # before next(): the data wait is part of the step
        batch = next(loader)
        data_wait = time.perf_counter() - started
        loss, grad_norm, token_sum = train_step(model, optimizer, batch, world, cfg)
        lr = scheduler.get_last_lr()[0]
        scheduler.step()
        step += 1
        seconds = time.perf_counter() - started
        tokens_per_s = cfg.global_batch_size * loader.seq_len / seconds
        if step % cfg.checkpoint_every == 0 or step == cfg.steps:
            checkpoints.save(training_state(model, optimizer, scheduler, loader, step, rank, world), step)
        checkpoints.poll()
        if metrics:
            record = {"step": step, "loss": loss, "lr": lr, "grad_norm": grad_norm, "tokens_per_s": tokens_per_s,
                      "mfu": tokens_per_s * flops_per_token / (peak * world) if peak else None,
                      "data_wait_pct": 100 * data_wait / seconds, "token_sum": token_sum}
            metrics.write(json.dumps(record) + "\n")
            metrics.flush()
            mfu = f"{100 * record['mfu']:.1f}%" if peak else "n/a"
            print(f"step {step:6d} | loss {loss:.4f} | lr {lr:.2e} | grad norm {grad_norm:.3f} | "
                  f"{tokens_per_s:,.0f} tokens/s | MFU {mfu} | data wait {record['data_wait_pct']:.2f}%", flush=True)
    checkpoints.wait()
    # Each rank's data loading counters (decompressions here and on its node, cache hits, waits).
    (run_dir / f"loader-rank{rank}.json").write_text(json.dumps(loader.stats()) + "\n")
    loader.close()
    dist.destroy_process_group()


def parse_config(argv=None) -> TrainConfig:
    parser = argparse.ArgumentParser(description="FSDP2 pretraining on tokenmill shards (run under torchrun)")
    parser.add_argument("--config", help="a JSON or YAML file of TrainConfig fields; flags given override it")
    for field in dataclasses.fields(TrainConfig):
        flag = "--" + field.name.replace("_", "-")
        if field.type is bool:
            parser.add_argument(flag, action="store_true", default=None)
        else:
            parser.add_argument(flag, type=field.type, default=None)
    args = vars(parser.parse_args(argv))
    values, config_file = {}, args.pop("config")
    if config_file:
        import yaml

        values = yaml.safe_load(Path(config_file).read_text()) or {}
        unknown = set(values) - {f.name for f in dataclasses.fields(TrainConfig)}
        if unknown:
            raise SystemExit(f"unknown keys in the config file: {', '.join(sorted(unknown))}")
    values.update({key: value for key, value in args.items() if value is not None})
    return TrainConfig(**values)


if __name__ == "__main__":
    train(parse_config())
