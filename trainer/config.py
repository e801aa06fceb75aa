"""The training run's settings (`jobs/train.py`'s flags, `--config` YAML, `--print-config`) and its
learning-rate schedule. Each section's settings live next to the code they set."""

import math
from dataclasses import dataclass, field

from trainer.benchmarks import BenchmarksConfig
from trainer.dashboards import DashboardConfig
from trainer.guard import GuardConfig
from trainer.heldout import HeldOutConfig
from trainer.model import PRESETS
from trainer.nccl import NcclConfig
from trainer.stragglers import StragglerConfig

MAX_GLOBAL_BATCH = 1 << 24  # rows per step: 16M rows of 128 tokens are 2G tokens, past any run's batch
MAX_WORKERS = 256  # decompression processes per rank: past the cores of any node


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
    checkpoint_checksums: bool = True  # check every file's checksum before loading a checkpoint (false: sizes)
    resume: bool = False  # continue from the newest checkpoint in run_dir that loads, if any
    seed: int = 0  # initialization and data order
    activation_checkpointing: bool = False  # recompute each block's activations in backward
    compile: bool = False  # torch.compile each block
    cpu_offload: bool = False  # parameters, gradients and optimizer state in (pinned) host memory (FSDP2)
    num_workers: int = 0  # the loader's decompression processes per rank
    loss_chunk_tokens: int = 0  # > 0: logits made this many tokens at a time (less memory, one more pass)
    wait_for_run_dir: bool = False  # when another run holds run_dir: wait for it (false: refuse, exit code 2)
    guard: GuardConfig = field(default_factory=GuardConfig)
    heldout: HeldOutConfig = field(default_factory=HeldOutConfig)
    eval: BenchmarksConfig = field(default_factory=BenchmarksConfig)
    stragglers: StragglerConfig = field(default_factory=StragglerConfig)
    nccl: NcclConfig = field(default_factory=NcclConfig)
    dashboards: DashboardConfig = field(default_factory=DashboardConfig)

    def __post_init__(self):
        problems = [what for bad, what in (
            (self.steps < 1, "steps must be at least 1"),
            (not 0 <= self.warmup_steps < self.steps, f"warmup_steps ({self.warmup_steps}) must be below steps "
                                                      f"({self.steps}): the run would never leave warmup"),
            # (10**12 rows asked numpy for 1.8 PiB at start, a traceback)
            (not 1 <= self.global_batch_size <= MAX_GLOBAL_BATCH,
             f"global_batch_size must be in 1-{MAX_GLOBAL_BATCH}"),
            # (written so that NaN fails: NaN <= 0 is false, and grad_clip NaN made every weight NaN in a step)
            (not 0 < self.lr < math.inf or not 0 <= self.min_lr_ratio <= 1,
             "lr must be positive and finite and min_lr_ratio in [0, 1]"),
            (not 0 <= self.weight_decay < math.inf, "weight_decay must be finite and not negative"),
            (self.checkpoint_every < 1 or self.keep_checkpoints < 1, "checkpoint_every and keep_checkpoints must be "
                                                                    "at least 1"),
            (not 0 < self.grad_clip < math.inf, "grad_clip must be positive and finite"),
            (self.model not in PRESETS, f"model must be one of {', '.join(PRESETS)}, got {self.model!r}"),
            (self.num_workers < 0 or self.loss_chunk_tokens < 0, "num_workers and loss_chunk_tokens cannot be "
                                                                 "negative"),
            # (a million was taken, and every rank asked for a million decompression processes)
            (self.num_workers > MAX_WORKERS, f"num_workers must be at most {MAX_WORKERS} per rank")) if bad]
        if problems:
            raise ValueError("; ".join(problems))


def learning_rate(step: int, cfg: TrainConfig) -> float:
    """Linear warmup to lr, then cosine decay to lr * min_lr_ratio at the last step (`step` from 0)."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))
