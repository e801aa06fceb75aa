"""The bundled pretraining loop: FSDP2 over the loader's batches, exact and elastic resume.

One process per device (gloo on CPU, NCCL on CUDA), started by torchrun (jobs/train.py). Every step:
a batch from ShardLoader, forward with attention inside documents only, the loss averaged over the
real tokens of all ranks, AdamW with warmup then cosine decay, gradient clipping. Checkpoints go to
DIR/checkpoints/ (trainer/checkpoints.py); per-step metrics to DIR/metrics.jsonl, with each source's
tokens and loss when the shards are a mixture (`--shards OUT/shards/mixture.json`).
"""

import json
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from loaders import ShardLoader
from loaders.collate import IGNORE
from schemas.mixture import parse_weights
from trainer.checkpoints import Checkpoints, resume, training_state
from trainer.model import Transformer, preset

log = logging.getLogger(__name__)

# Peak dense bf16 FLOP/s by device name, for MFU (vendor datasheets, no sparsity).
PEAK_FLOPS = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "A10G": 125e12, "L4": 121e12}


@dataclass
class TrainConfig:
    shards: str = "out/sample/shards"  # a shards folder or URL (index.json + shard-*.arrow), or a mixture.json
    weights: str = ""  # NAME=WEIGHT,...: a mixture's weights instead of those in its mixture.json
    allow_new_weights: bool = False  # resume a checkpoint saved with other weights (each source goes on from there)
    run_dir: str = "out/train"  # checkpoints/ and metrics.jsonl
    model: str = "tiny"  # tiny | 125m | 1b (trainer/model.py)
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


class Step(NamedTuple):
    loss: float  # over the real tokens of every rank
    grad_norm: float
    token_sum: int  # the global batch's token ids summed: a fingerprint of the data, the same at any world size
    source_rows: list[int]  # rows of each source in the global batch
    source_tokens: list[int]  # real tokens of each source in the global batch
    source_loss: list[float | None]  # their mean loss (None: the source had no token in this batch)


def train_step(model, optimizer, batch: dict, world: int, cfg: TrainConfig, sources: int = 1) -> Step:
    labels = batch["labels"]
    row_loss = model(batch["input_ids"], batch["position_ids"], batch["cu_seqlens"], labels=labels,
                     loss_chunk_tokens=cfg.loss_chunk_tokens)
    loss_sum = row_loss.sum()
    row_tokens = (labels != IGNORE).sum(-1).double()
    by_source = torch.zeros(3, sources, dtype=torch.float64, device=labels.device).index_add_(
        1, batch["source"], torch.stack([torch.ones_like(row_tokens), row_tokens, row_loss.detach().double()]))
    counts = torch.cat([torch.stack([row_tokens.sum(), loss_sum.detach().double(), batch["input_ids"].sum().double()]),
                        by_source.flatten()])
    dist.all_reduce(counts)  # one reduction for the step's figures and every source's
    real_tokens = max(1.0, counts[0].item())
    # FSDP averages gradients over ranks: scale so the result is the gradient of the global mean.
    (loss_sum * world / real_tokens).backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    grad_norm = grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    rows, tokens, losses = counts[3:].view(3, sources).tolist()
    return Step(counts[1].item() / real_tokens, grad_norm.item(), int(counts[2].item()), [int(r) for r in rows],
                [int(t) for t in tokens], [loss / t if t else None for t, loss in zip(tokens, losses)])


def peak_flops(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None  # no table entry for CPUs: MFU is reported as null
    name = torch.cuda.get_device_name(device)
    return next((flops for key, flops in PEAK_FLOPS.items() if key in name), None)


def train(cfg: TrainConfig) -> None:
    """The loop in this torchrun process; its process group is destroyed however the loop ends."""
    cuda = torch.cuda.is_available()
    dist.init_process_group(backend="nccl" if cuda else "gloo")
    try:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
        if cuda:
            torch.cuda.set_device(device)
        _train(cfg, device)
    finally:
        dist.destroy_process_group()


def _train(cfg: TrainConfig, device: torch.device) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if cfg.global_batch_size % world:
        raise SystemExit(f"--global-batch-size {cfg.global_batch_size} is not a multiple of the {world} processes")
    run_dir = Path(cfg.run_dir)
    loader = ShardLoader(cfg.shards, cfg.global_batch_size // world, rank=rank, world_size=world, seed=cfg.seed,
                         num_workers=cfg.num_workers, device=device, weights=parse_weights(cfg.weights) or None)
    mixture = len(loader.sources) > 1
    try:
        model = build_model(cfg, loader.embedding_size, device)
        optimizer, scheduler = build_optimizer(model, cfg)
        checkpoints = Checkpoints(run_dir, cfg.keep_checkpoints, rank, device)
        step = 0
        if cfg.resume and (latest := checkpoints.latest()) is not None:
            step = resume(latest, model, optimizer, scheduler, loader, rank, world, cfg.allow_new_weights)
            log.info("resumed from %s at step %d (%d processes)", latest, step, world)
        metrics = Metrics(run_dir / "metrics.jsonl" if rank == 0 else None, model.flops_per_token(loader.seq_len),
                          peak_flops(device), world)
        with metrics:
            while step < cfg.steps:
                started = time.perf_counter()  # before next(): the data wait is part of the step
                batch = next(loader)
                data_wait = time.perf_counter() - started
                result = train_step(model, optimizer, batch, world, cfg, len(loader.sources))
                lr = scheduler.get_last_lr()[0]
                scheduler.step()
                step += 1
                if step % cfg.checkpoint_every == 0 or step == cfg.steps:
                    checkpoints.save(training_state(model, optimizer, scheduler, loader, step, rank, world), step)
                checkpoints.poll()
                seconds = time.perf_counter() - started
                per_source = {f"source_{key}": dict(zip(loader.sources, getattr(result, f"source_{key}")))
                              for key in ("rows", "tokens", "loss")} if mixture else {}
                metrics.write(step=step, loss=result.loss, lr=lr, grad_norm=result.grad_norm,
                              tokens_per_s=cfg.global_batch_size * loader.seq_len / seconds,
                              data_wait_pct=100 * data_wait / seconds, token_sum=result.token_sum, **per_source)
        checkpoints.wait()
        # Each rank's data loading counters (decompressions here and on its node, cache hits, waits).
        (run_dir / f"loader-rank{rank}.json").write_text(json.dumps(loader.stats()) + "\n")
    finally:
        loader.close()


class Metrics:
    """One JSON object per step in DIR/metrics.jsonl (rank 0 only; appended on resume) and a log line."""

    def __init__(self, path: Path | None, flops_per_token: float, peak: float | None, world: int):
        self.path, self.flops_per_token, self.peak, self.world = path, flops_per_token, peak, world
        self.file = None

    def __enter__(self) -> "Metrics":
        if self.path is not None:
            self.file = open(self.path, "a", encoding="utf-8")
        return self

    def __exit__(self, *exc) -> None:
        if self.file is not None:
            self.file.close()

    def write(self, **record) -> None:
        if self.file is None:
            return
        record["mfu"] = record["tokens_per_s"] * self.flops_per_token / (self.peak * self.world) if self.peak else None
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        mfu = f"{100 * record['mfu']:.1f}%" if self.peak else "n/a"
        log.info("step %6d | loss %.4f | lr %.2e | grad norm %.3f | %s tokens/s | MFU %s | data wait %.2f%%",
                 record["step"], record["loss"], record["lr"], record["grad_norm"], f"{record['tokens_per_s']:,.0f}",
                 mfu, record["data_wait_pct"])
