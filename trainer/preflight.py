"""What every rank checks before the first step, together: one all-gather, then one line naming the
rank and the value on a mismatch, and every rank stops (exit code 2).

- Every parameter that needs a gradient is in exactly one optimizer group, and the groups hold
  nothing else (a bias no group holds never trains; one held twice steps twice).
- Every parameter is finite after initialization or loading.
- The ranks agree on the torch, CUDA and NCCL versions, the NCCL library each actually loaded (its path
  and the version it reports at run time: trainer/nccl.py), the NCCL settings of its environment, the
  shards (a checksum of each source's index), the tokenizer (its hash in the index) and the training
  configuration: a node on another NCCL hangs in its first all-reduce, one on other shards trains on
  other data.
- Each rank's host and GPU driver are gathered too, for the record and for naming slow ranks; ranks on
  other drivers are only warned of (the driver API is backward compatible; clusters upgrade node by node).
"""

import dataclasses
import hashlib
import json
import socket
from typing import NamedTuple

import torch
import torch.distributed as dist

from trainer import nccl


class StartChecks(NamedTuple):
    problem: str | None  # the one line that says why the ranks cannot train together (the same on every rank)
    ranks: list[dict]  # each rank's facts, host and driver, by rank
    warnings: list[str]  # what differs without stopping the run


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
    version = ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "none"
    library, runtime = nccl.loaded_nccl()
    shards = hashlib.sha256()
    for shard_set in loader.sets:
        shards.update(json.dumps(shard_set.source.index.to_json(), sort_keys=True).encode())
    config = json.dumps(dataclasses.asdict(cfg), sort_keys=True, default=str)
    settings = nccl.settings()
    return {"torch": torch.__version__, "CUDA": str(torch.version.cuda), "NCCL": version,
            "NCCL library": f"{library} ({runtime})",
            "NCCL settings": " ".join(f"{k}={v}" for k, v in settings.items()) or "none",
            "shards index": shards.hexdigest()[:16],
            "tokenizer": loader.sets[0].source.index.tokenizer_sha256[:16],
            "training config": hashlib.sha256(config.encode()).hexdigest()[:16]}


def check_ranks(model, optimizer, loader, cfg) -> StartChecks:
    """Every rank's facts gathered and compared; the problem line is None when every rank can train with
    every other."""
    mine = {"facts": facts(loader, cfg), "problems": own_problems(model, optimizer), "host": socket.gethostname(),
            "driver": nccl.gpu_driver()}
    everyone: list = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    lines = [f"rank {r}: {problem}" for r, seen in enumerate(everyone) for problem in seen["problems"]]
    first = everyone[0]["facts"]
    for key, value in first.items():
        other = next((r for r, seen in enumerate(everyone) if seen["facts"][key] != value), None)
        if other is not None:
            lines.append(f"rank {other} ({everyone[other]['host']}): {key} {everyone[other]['facts'][key]} differs "
                         f"from rank 0's {value}")
    driver = everyone[0]["driver"]
    warnings = [f"rank {r} ({seen['host']}): GPU driver {seen['driver']} differs from rank 0's {driver}"
                for r, seen in enumerate(everyone) if seen["driver"] != driver]
    ranks = [{"rank": r, "host": seen["host"], "driver": seen["driver"], **seen["facts"]}
             for r, seen in enumerate(everyone)]
    return StartChecks("; ".join(lines) or None, ranks, warnings)
