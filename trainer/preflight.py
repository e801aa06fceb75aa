"""What every rank checks before the first step, together: one all-gather, then one line naming the
rank and the value on a mismatch, and every rank stops (exit code 2).

- Every parameter that needs a gradient is in exactly one optimizer group, and the groups hold
  nothing else (a bias no group holds never trains; one held twice steps twice).
- Every parameter is finite after initialization or loading.
- The ranks agree on the torch, CUDA and NCCL versions, the shards (a checksum of each source's
  index), the tokenizer (its hash in the index) and the training configuration: a node on another
  NCCL hangs in its first all-reduce, one on other shards trains on other data.
"""

import dataclasses
import hashlib
import json

import torch
import torch.distributed as dist


def own_problems(model: torch.nn.Module, optimizer) -> list[str]:
    """This rank's problems with its model and optimizer."""
    names = {id(p): name for name, p in model.named_parameters()}
    held: dict[int, int] = {}
    problems = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            held[id(p)] = held.get(id(p), 0) + 1
            if id(p) not in names:
                problems.append(f"an optimizer group holds a tensor of shape {tuple(p.shape)} that is not a parameter")
    for name, p in model.named_parameters():
        if p.requires_grad and held.get(id(p), 0) != 1:
            problems.append(f"parameter {name} is in {held.get(id(p), 0)} optimizer groups (it must be in exactly one)")
        local = p.to_local() if hasattr(p, "to_local") else p
        if not torch.isfinite(local.detach()).all():
            problems.append(f"parameter {name} is not finite")
    return problems


def facts(loader, cfg) -> dict[str, str]:
    """What every rank must agree on."""
    nccl = ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "none"
    shards = hashlib.sha256()
    for shard_set in loader.sets:
        shards.update(json.dumps(shard_set.source.index.to_json(), sort_keys=True).encode())
    config = json.dumps(dataclasses.asdict(cfg), sort_keys=True, default=str)
    return {"torch": torch.__version__, "CUDA": str(torch.version.cuda), "NCCL": nccl,
            "shards index": shards.hexdigest()[:16],
            "tokenizer": loader.sets[0].source.index.tokenizer_sha256[:16],
            "training config": hashlib.sha256(config.encode()).hexdigest()[:16]}


def check_ranks(model, optimizer, loader, cfg) -> str | None:
    """None when every rank can train with every other; else the one line that says why not (the same on
    every rank)."""
    mine = (facts(loader, cfg), own_problems(model, optimizer))
    everyone: list = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    lines = [f"rank {r}: {problem}" for r, (_, problems) in enumerate(everyone) for problem in problems]
    first = everyone[0][0]
    for key, value in first.items():
        other = next((r for r, (seen, _) in enumerate(everyone) if seen[key] != value), None)
        if other is not None:
            lines.append(f"rank {other}: {key} {everyone[other][0][key]} differs from rank 0's {value}")
    return "; ".join(lines) or None
