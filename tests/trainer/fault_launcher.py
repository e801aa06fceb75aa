"""jobs/train.py with faults injected from the test side: the product has no test switch, so the tests start
this script (under torchrun, or alone as `python jobs/train.py` is) and it patches the trainer before
running the real entry point with the real configuration parsing.

    python tests/trainer/fault_launcher.py [FAULT VALUE ...] TRAIN_FLAGS ...

Faults, before the training flags (RANK: the process's rank, from torchrun's RANK):
  --nonfinite-grad STEP[:RANK]  that rank's (default 0) gradient turns infinite in the STEP-th step of this
                                process (counted by gradient clippings: a fresh run without rollbacks)
  --leave-out NAME,...          those parameters are taken out of the optimizer's groups
  --torch-version RANK:VERSION  the torch version that rank reports to the start checks
  --nccl-library RANK:PATH      that rank reports PATH as the libnccl it loaded (version 2.99.9)
  --nccl-env RANK:NAME=VALUE    that rank starts with NAME=VALUE in its environment
  --slow-rank RANK:SECONDS      that rank sleeps SECONDS in each block's forward (a slow device)
  --blow-up STEP[:FACTOR]       the STEP-th optimizer step of this process runs at FACTOR (1000, or inf: the
                                weights turn infinite) times the learning rate
  --damage-after-save STEP      once checkpoint step-STEP is complete, rank 0 cuts its last data file short
  --fail-load NAME              DCP's load fails for the checkpoint NAME (every rank)
  --hold-endpoint FILE          at the end of the run the Prometheus endpoint stays up until FILE exists (a
                                test scrapes the last step's figures however fast the run was)
"""

import os
import runpy
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAULTS = ("--nonfinite-grad", "--leave-out", "--torch-version", "--nccl-library", "--nccl-env", "--slow-rank",
          "--blow-up", "--damage-after-save", "--fail-load", "--hold-endpoint")


def split(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """(the faults given first, the training flags after them)."""
    faults = {}
    while argv and argv[0] in FAULTS:
        if len(argv) < 2:
            raise SystemExit(f"fault_launcher: {argv[0]} needs a value")
        faults[argv[0]], argv = argv[1], argv[2:]
    return faults, argv


def this_rank() -> int:
    return int(os.environ.get("RANK", "0"))


def nonfinite_grad(spec: str) -> None:
    import torch

    at, _, rank = spec.partition(":")
    real, calls = torch.nn.utils.clip_grad_norm_, [0]

    def clip_grad_norm_(parameters, *args, **kwargs):
        parameters = list(parameters)
        calls[0] += 1
        if calls[0] == int(at) and this_rank() == int(rank or 0):
            parameters[0].grad.fill_(float("inf"))  # the global norm turns infinite on every rank
        return real(parameters, *args, **kwargs)

    torch.nn.utils.clip_grad_norm_ = clip_grad_norm_


def leave_out(names: str) -> None:
    import trainer.trainer

    real, left_out = trainer.trainer.build_optimizer, set(names.split(","))

    def build_optimizer(model, cfg, *args):
        optimizer, scheduler = real(model, cfg, *args)
        gone = {id(p) for name, p in model.named_parameters() if name in left_out}
        for group in optimizer.param_groups:
            group["params"] = [p for p in group["params"] if id(p) not in gone]
        return optimizer, scheduler

    trainer.trainer.build_optimizer = build_optimizer


def torch_version(spec: str) -> None:
    import trainer.preflight

    at, _, version = spec.partition(":")
    real = trainer.preflight.facts

    def facts(loader, cfg):
        found = real(loader, cfg)
        return {**found, "torch": version} if this_rank() == int(at) else found

    trainer.preflight.facts = facts


def nccl_library(spec: str) -> None:
    import trainer.nccl

    at, _, path = spec.partition(":")
    if this_rank() == int(at):
        trainer.nccl.loaded_nccl = lambda: (path, "2.99.9")


def nccl_env(spec: str) -> None:
    at, _, setting = spec.partition(":")
    name, _, value = setting.partition("=")
    if this_rank() == int(at):
        os.environ[name] = value


def slow_rank(spec: str) -> None:
    from trainer.model import Block

    at, _, seconds = spec.partition(":")
    real = Block.forward

    def forward(self, *args, **kwargs):
        if this_rank() == int(at):
            time.sleep(float(seconds))
        return real(self, *args, **kwargs)

    Block.forward = forward


def blow_up(spec: str) -> None:
    import torch

    at, _, factor = spec.partition(":")
    real, calls = torch.optim.AdamW.step, [0]

    def step(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] != int(at):
            return real(self, *args, **kwargs)
        rates = [group["lr"] for group in self.param_groups]
        for group in self.param_groups:
            group["lr"] *= float(factor or 1000)
        try:
            return real(self, *args, **kwargs)
        finally:
            for group, rate in zip(self.param_groups, rates):
                group["lr"] = rate

    torch.optim.AdamW.step = step


def damage_after_save(at: str) -> None:
    from trainer.checkpoints import Checkpoints

    real, done = Checkpoints.poll, [False]

    def poll(self, block=False):
        real(self, block)
        target = self.folder / f"step-{int(at):07d}"
        if not done[0] and self.ours == target and self.pending is None:
            done[0] = True
            if this_rank() == 0:
                data = sorted(target.glob("__*.distcp"))[-1]
                os.truncate(data, data.stat().st_size // 2)

    Checkpoints.poll = poll


def fail_load(name: str) -> None:
    import trainer.checkpoints

    module = trainer.checkpoints
    real_load, real_read = module.Checkpoints._load, module.load_checkpoint

    def failing(*_):  # what DCP raises: a BaseException, not an Exception
        from torch.distributed.checkpoint.api import CheckpointException, _wrap_exception

        raise CheckpointException(f"DCP cannot load {name}", {0: _wrap_exception(RuntimeError("injected"))})

    def load(self, checkpoint, folder, state):  # (the checkpoint is read through its pinned folder: by its name)
        if not str(checkpoint).endswith(name):
            return real_load(self, checkpoint, folder, state)
        module.load_checkpoint = failing
        try:
            return real_load(self, checkpoint, folder, state)
        finally:
            module.load_checkpoint = real_read

    module.Checkpoints._load = load


def hold_endpoint(released: str) -> None:
    from trainer.dashboards import Dashboards

    real = Dashboards.close

    def close(self):
        while self.server is not None and not os.path.exists(released):
            time.sleep(0.05)
        real(self)

    Dashboards.close = close


INJECT = {"--nonfinite-grad": nonfinite_grad, "--leave-out": leave_out, "--torch-version": torch_version,
          "--nccl-library": nccl_library, "--nccl-env": nccl_env, "--slow-rank": slow_rank, "--blow-up": blow_up,
          "--damage-after-save": damage_after_save, "--fail-load": fail_load, "--hold-endpoint": hold_endpoint}

if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    faults, flags = split(sys.argv[1:])
    for option, value in faults.items():
        INJECT[option](value)
    sys.argv = [str(REPO / "jobs" / "train.py"), *flags]
    runpy.run_path(sys.argv[0], run_name="__main__")
