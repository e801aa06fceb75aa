"""The model sharded over the ranks (FSDP2) and its optimizer, as the loop builds them.

The model is created on the meta device, each block and the root sharded with one MixedPrecisionPolicy
(bf16 parameters, fp32 gradient reduction), then materialized and initialized. With `cpu_offload`,
FSDP2's CPUOffloadPolicy keeps the sharded parameters, their gradients and the optimizer state in host
memory (pinned where there is a GPU to copy to): each block's parameters are copied to the device for
its all-gather, its gradients back after the reduce-scatter, and AdamW steps on the CPU, which lets a
few devices hold a model whose state would not fit in their memory.
"""

from collections.abc import Callable

import torch
from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard

from trainer.config import TrainConfig, learning_rate
from trainer.model import Transformer, preset

# Peak dense bf16 FLOP/s by device name, for MFU (vendor datasheets, no sparsity).
PEAK_FLOPS = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "A10G": 125e12, "L4": 121e12}


def build_model(cfg: TrainConfig, vocab_size: int, device: torch.device) -> Transformer:
    """Created on the meta device, sharded block by block and at the root, then materialized."""
    with torch.device("meta"):
        model = Transformer(preset(cfg.model, vocab_size))
    # One policy for blocks and root: a root without it computes its layers in fp32 against bf16 blocks.
    policies = {"mp_policy": MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)}
    if cfg.cpu_offload:
        policies["offload_policy"] = CPUOffloadPolicy(pin_memory=torch.cuda.is_available())
    for i, block in enumerate(model.blocks):
        if cfg.activation_checkpointing:
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

            block = checkpoint_wrapper(block)
        if cfg.compile:
            block.compile()
        model.blocks[i] = block
        fully_shard(block, **policies)
    fully_shard(model, **policies)
    model.to_empty(device="cpu" if cfg.cpu_offload else device)  # offloaded shards live in host memory
    torch.manual_seed(cfg.seed)
    with torch.no_grad():
        model.init_weights()
    return model


def build_optimizer(model: torch.nn.Module, cfg: TrainConfig, lr_factor: Callable[[int], float] = lambda _: 1.0):
    """AdamW (weight decay on matrices only) and the schedule, times `lr_factor(step)` (the guard's)."""
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    vectors = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": matrices, "weight_decay": cfg.weight_decay},
                                   {"params": vectors, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: learning_rate(step, cfg) / cfg.lr * lr_factor(step))
    return optimizer, scheduler


def peak_flops(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None  # no table entry for CPUs: MFU is reported as null
    name = torch.cuda.get_device_name(device)
    return next((flops for key, flops in PEAK_FLOPS.items() if key in name), None)
