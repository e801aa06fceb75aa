"""The bundled pretraining loop: FSDP2 over the loader's batches, exact and elastic resume, guarded.

One process per device (gloo on CPU, NCCL on CUDA), started by torchrun (jobs/train.py). At start the
ranks check together that they can train together (trainer/preflight.py) and rank 0 takes the run
folder (trainer/run_folder.py); a worker dies with its torchrun agent. Every step: a batch from
ShardLoader, forward with attention inside documents only, the loss averaged over the real tokens of
all ranks, AdamW with warmup then cosine decay, gradient clipping; the guard (trainer/guard.py) applies
nothing for a non-finite loss or gradient and rolls back past a loss spike. Checkpoints go to
DIR/checkpoints/ (trainer/checkpoints.py); per-step metrics and guard events to DIR/metrics.jsonl, with
each source's tokens and loss when the shards are a mixture (`--shards OUT/shards/mixture.json`).
"""

import json
import logging
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from loaders import ShardLoader
from loaders.collate import IGNORE
from loaders.shard_reader import ShardError
from schemas.mixture import MixtureError, parse_weights
from trainer.checkpoints import Checkpoints, resume, training_state
from trainer.dashboards import DashboardConfig, Dashboards
from trainer.guard import Guard, GuardConfig, GuardState, TooManyRollbacks
from trainer.heldout import HeldOut, HeldOutConfig
from trainer.model import PRESETS, Transformer, preset
from trainer.preflight import check_ranks
from trainer.run_folder import die_with_parent, run_folder

log = logging.getLogger(__name__)

LOADER_FIGURES_EVERY = 10  # steps between the loader's counters on the dashboards
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
    global_batch_size: int = 8  # rows per step over all ranks (a multiple of them); kept when resuming elsewhere
    lr: float = 3e-4  # peak learning rate
    min_lr_ratio: float = 0.1  # cosine decay ends at lr * this
    warmup_steps: int = 20  # linear warmup (fewer than steps)
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
    wait_for_run_dir: bool = False  # when another run holds run_dir: wait for it (false: refuse, exit code 2)
    guard: GuardConfig = field(default_factory=GuardConfig)
    heldout: HeldOutConfig = field(default_factory=HeldOutConfig)
    dashboards: DashboardConfig = field(default_factory=DashboardConfig)

    def __post_init__(self):
        problems = [what for bad, what in (
            (self.steps < 1, "steps must be at least 1"),
            (not 0 <= self.warmup_steps < self.steps, f"warmup_steps ({self.warmup_steps}) must be below steps "
                                                      f"({self.steps}): the run would never leave warmup"),
            (self.global_batch_size < 1, "global_batch_size must be at least 1"),
            (self.lr <= 0 or not 0 <= self.min_lr_ratio <= 1, "lr must be positive and min_lr_ratio in [0, 1]"),
            (self.checkpoint_every < 1 or self.keep_checkpoints < 1, "checkpoint_every and keep_checkpoints must be "
                                                                    "at least 1"),
            (self.grad_clip <= 0, "grad_clip must be positive"),
            (self.model not in PRESETS, f"model must be one of {', '.join(PRESETS)}, got {self.model!r}"),
            (self.num_workers < 0 or self.loss_chunk_tokens < 0, "num_workers and loss_chunk_tokens cannot be "
                                                                 "negative")) if bad]
        if problems:
            raise ValueError("; ".join(problems))


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
    event: str | None  # why nothing was applied: "nonfinite" or "spike" (trainer/guard.py); None: applied


def train_step(model, optimizer, batch: dict, world: int, cfg: TrainConfig, sources: int = 1,
               guard: Guard | None = None) -> Step:
    """One step; with a guard, the optimizer steps only when the loss is no spike and the loss and the
    gradient are finite (every rank has the same global figures, so every rank decides the same)."""
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
    loss = counts[1].item() / real_tokens
    event = guard.verdict(loss) if guard else None
    # FSDP averages gradients over ranks: scale so the result is the gradient of the global mean. The
    # backward runs whatever the verdict: FSDP's hooks expect it after a forward.
    (loss_sum * world / real_tokens).backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    grad_norm = (grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm).item()
    if event is None and guard is not None and not guard.gradient_ok(grad_norm):
        event = "nonfinite"
    if event is None:
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    rows, tokens, losses = counts[3:].view(3, sources).tolist()
    return Step(loss, grad_norm, int(counts[2].item()), [int(r) for r in rows], [int(t) for t in tokens],
                [loss / t if t else None for t, loss in zip(tokens, losses)], event)


def peak_flops(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None  # no table entry for CPUs: MFU is reported as null
    name = torch.cuda.get_device_name(device)
    return next((flops for key, flops in PEAK_FLOPS.items() if key in name), None)


class RunStopped(Exception):
    """The run cannot start or go on: one line says why (exit code 2 at start, 3 for the guard)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def train(cfg: TrainConfig) -> None:
    """The loop in this torchrun process; its process group is destroyed however the loop ends."""
    if "TORCHELASTIC_RUN_ID" in os.environ:  # under torchrun: an orphan of a killed agent would go on writing
        die_with_parent()
    # What the run writes is the user's alone, whatever their umask (002, where each user has a group of their
    # own, made checkpoints that --resume then refused as writable by others: trainer/checkpoints.py)
    os.umask(os.umask(0o022) | 0o022)
    cuda = torch.cuda.is_available()
    dist.init_process_group(backend="nccl" if cuda else "gloo")
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


def _train(cfg: TrainConfig, device: torch.device) -> None:
    rank, world = dist.get_rank(), dist.get_world_size()
    if cfg.global_batch_size % world:
        raise RunStopped(f"global_batch_size {cfg.global_batch_size} is not a multiple of the {world} processes", 2)
    run_dir = Path(cfg.run_dir)
    with run_folder(run_dir, rank, cfg.wait_for_run_dir) as refused:
        if refused:
            raise RunStopped(refused, 2)
        loader = ShardLoader(cfg.shards, cfg.global_batch_size // world, rank=rank, world_size=world, seed=cfg.seed,
                             num_workers=cfg.num_workers, device=device, weights=parse_weights(cfg.weights) or None)
        try:
            _run(cfg, device, loader, run_dir, rank, world)
        finally:
            loader.close()


def _run(cfg: TrainConfig, device: torch.device, loader: ShardLoader, run_dir: Path, rank: int, world: int) -> None:
    mixture = len(loader.sources) > 1
    model = build_model(cfg, loader.embedding_size, device)
    optimizer, scheduler = build_optimizer(model, cfg)
    checkpoints = Checkpoints(run_dir, cfg.keep_checkpoints, rank, device)
    guard = Guard(cfg.guard)
    step = 0
    # Before any collective a mismatched rank could hang in (the resume's load), and again after it
    # (the parameters loaded must be finite too).
    if problem := check_ranks(model, optimizer, loader, cfg):
        raise RunStopped(problem, 2)
    if cfg.resume and (latest := checkpoints.latest()) is not None:
        step, saved_guard = resume(latest, model, optimizer, scheduler, loader, rank, world, cfg.allow_new_weights)
        guard.state = GuardState.from_json(saved_guard)
        checkpoints.ours = latest
        log.info("resumed from %s at step %d (%d processes)", latest, step, world)
        if problem := check_ranks(model, optimizer, loader, cfg):
            raise RunStopped(problem, 2)
    index = loader.sets[0].source.index
    try:
        heldout = HeldOut(cfg.shards, cfg.heldout, rank, world, device, index.vocab_size, index.tokenizer_sha256) \
            if cfg.heldout.every else None
    except (ShardError, MixtureError, ValueError) as e:
        raise RunStopped(f"held-out shards: {e}", 2) from None
    if cfg.heldout.every and not heldout:
        log.warning("no held-out shards (SHARDS/heldout, mixture.json's, or heldout.heldout): no held-out loss")
    metrics = Metrics(run_dir / "metrics.jsonl" if rank == 0 else None, model.flops_per_token(loader.seq_len),
                      peak_flops(device), world, cfg.dashboards)
    with metrics:
        while step < cfg.steps:
            started = time.perf_counter()  # before next(): the data wait is part of the step
            batch = next(loader)
            data_wait = time.perf_counter() - started
            result = train_step(model, optimizer, batch, world, cfg, len(loader.sources), guard)
            if result.event == "spike":
                step = _roll_back(step + 1, result.loss, loader, model, optimizer, scheduler, checkpoints, guard,
                                  metrics, rank, world)
                continue
            lr = scheduler.get_last_lr()[0]
            scheduler.step()
            step += 1
            if result.event == "nonfinite":
                guard.not_applied()
                metrics.event("nonfinite", step, loss=result.loss, grad_norm=result.grad_norm)
            else:
                guard.applied(result.loss)
            saving = time.perf_counter()
            if step % cfg.checkpoint_every == 0 or step == cfg.steps:
                checkpoints.save(training_state(model, optimizer, scheduler, loader, step, rank, world,
                                                guard.state.to_json()), step)
            checkpoints.poll()
            saving = time.perf_counter() - saving
            seconds = time.perf_counter() - started
            per_source = {f"source_{key}": dict(zip(loader.sources, getattr(result, f"source_{key}")))
                          for key in ("rows", "tokens", "loss")} if mixture else {}
            metrics.write(step=step, loss=result.loss, lr=lr, grad_norm=result.grad_norm,
                          tokens_per_s=cfg.global_batch_size * loader.seq_len / seconds,
                          data_wait_pct=100 * data_wait / seconds, data_wait_ms=1000 * data_wait,
                          step_seconds=seconds, checkpoint_seconds=saving, token_sum=result.token_sum,
                          position=loader.served_position, applied=result.event is None, **per_source)
            if heldout and (step % cfg.heldout.every == 0 or step == cfg.steps):
                metrics.heldout(step, heldout.evaluate(model, loader.seq_len, loader.pad_id))
            if step % LOADER_FIGURES_EVERY == 0:
                metrics.loader(loader.stats(), step)
    checkpoints.wait()
    # Each rank's data loading counters (decompressions here and on its node, cache hits, waits).
    (run_dir / f"loader-rank{rank}.json").write_text(json.dumps({**loader.stats(), "guard": json.loads(
        guard.state.to_json())}) + "\n")


def _roll_back(step: int, loss: float, loader, model, optimizer, scheduler, checkpoints, guard: Guard, metrics,
               rank: int, world: int) -> int:
    """After a spike at `step`: every rank back to the newest checkpoint, the stretch that led to the spike
    skipped; returns the step to go on from. Without a checkpoint yet, the batch alone is passed over."""
    served = loader.served_position
    try:
        guard.rollback(step)
    except TooManyRollbacks as e:
        metrics.event("stopped", step, loss=loss, reason=str(e))
        raise RunStopped(str(e), 3) from None
    latest = checkpoints.ours_on_disk()  # the same on every rank, and this run's own
    if latest is None:  # nothing to go back to: the batch (already passed) is not applied, the run goes on
        back_to, (start, end) = step - 1, (served, served + loader.global_batch_size)
    else:
        # this run's own checkpoint: saved with the weights it runs with now, and the skips of earlier
        # rollbacks to it stay
        back_to, saved_guard = resume(latest, model, optimizer, scheduler, loader, rank, world,
                                      allow_new_weights=True, keep_skips=True)
        guard.restore(GuardState.from_json(saved_guard))
        start, end = guard.skip_stretch(served, loader.position, loader.global_batch_size)
        loader.skip(start, end)
    log.warning("loss spike at step %d (%.4f): back to step %d, positions [%d, %d) skipped", step, loss, back_to,
                start, end)
    # "spike" alone when there was no checkpoint to go back to: the batch is passed over, nothing rolled back
    metrics.event("rollback" if latest is not None else "spike", step, loss=loss, back_to=back_to, skipped=[start, end])
    return back_to


class Metrics:
    """One JSON object per step in DIR/metrics.jsonl (rank 0 only; appended on resume), a log line, and the
    dashboards (trainer/dashboards.py: TensorBoard, Prometheus)."""

    def __init__(self, path: Path | None, flops_per_token: float, peak: float | None, world: int,
                 dashboards: DashboardConfig | None = None):
        self.path, self.flops_per_token, self.peak, self.world = path, flops_per_token, peak, world
        self.dashboard_cfg, self.file, self.dashboards = dashboards, None, None

    def __enter__(self) -> "Metrics":
        if self.path is not None:
            self.file = open(self.path, "a", encoding="utf-8")
            if self.dashboard_cfg is not None:
                try:
                    self.dashboards = Dashboards(self.dashboard_cfg, self.path.parent)
                except OSError as e:  # the Prometheus port taken, the folder not writable
                    self.file.close()
                    raise RunStopped(f"dashboards: {e}", 2) from None
        return self

    def __exit__(self, *exc) -> None:
        if self.file is not None:
            self.file.close()
        if self.dashboards is not None:
            self.dashboards.close()

    def loader(self, stats: dict, step: int) -> None:
        if self.dashboards is not None:
            self.dashboards.loader(stats, step)

    def event(self, kind: str, step: int, **details) -> None:
        """A guard event: its own line in metrics.jsonl (`event`, `at_step`; no `step`, which names a step's
        record) and in the log."""
        log.warning("guard: %s at step %d %s", kind, step, details)
        if self.file is not None:
            self.file.write(json.dumps({"event": kind, "at_step": step, **details}) + "\n")
            self.file.flush()
        if self.dashboards is not None:
            self.dashboards.event(kind, step)

    def heldout(self, step: int, figures: dict) -> None:
        """The held-out figures by source: a line of their own (`heldout_at_step`) and a log line."""
        for name, f in figures.items():
            bpb = f" | {f['bits_per_byte']:.4f} ± {f['bits_per_byte_se']:.4f} bits/byte" if "bits_per_byte" in f else ""
            log.info("held out %s at step %d: loss %.4f ± %.4f over %d rows%s", name, step, f["loss"], f["loss_se"],
                     f["rows"], bpb)
        if self.file is not None:
            self.file.write(json.dumps({"heldout_at_step": step, "sources": figures}) + "\n")
            self.file.flush()
        if self.dashboards is not None:
            self.dashboards.heldout(step, figures)

    def write(self, **record) -> None:
        if self.file is None:
            return
        record["mfu"] = record["tokens_per_s"] * self.flops_per_token / (self.peak * self.world) if self.peak else None
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        if self.dashboards is not None:
            self.dashboards.step(record)
        mfu = f"{100 * record['mfu']:.1f}%" if self.peak else "n/a"
        log.info("step %6d | loss %.4f | lr %.2e | grad norm %.3f | %s tokens/s | MFU %s | data wait %.2f%%",
                 record["step"], record["loss"], record["lr"], record["grad_norm"], f"{record['tokens_per_s']:,.0f}",
                 mfu, record["data_wait_pct"])
