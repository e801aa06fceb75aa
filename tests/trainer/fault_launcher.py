"""jobs/train.py with faults injected from the test side: the product has no test switch, so the tests start
this script (under torchrun, or alone as `python jobs/train.py` is) and it patches the trainer before
running the real entry point with the real configuration parsing.

    python tests/trainer/fault_launcher.py [FAULT VALUE ...] TRAIN_FLAGS ...

Faults, before the training flags:
  --nonfinite-grad STEP[:RANK]  that rank's (default 0) gradient turns infinite in the STEP-th step of this
                                process (counted by gradient clippings: a fresh run without rollbacks)
  --leave-out NAME,...          those parameters are taken out of the optimizer's groups
  --torch-version RANK:VERSION  the torch version that rank reports to the start checks
  --hold-endpoint FILE          at the end of the run the Prometheus endpoint stays up until FILE exists (a
                                test scrapes the last step's figures however fast the run was)
"""

import os
import runpy
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAULTS = ("--nonfinite-grad", "--leave-out", "--torch-version", "--hold-endpoint")


def split(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """(the faults given first, the training flags after them)."""
    faults = {}
    while argv and argv[0] in FAULTS:
        if len(argv) < 2:
            raise SystemExit(f"fault_launcher: {argv[0]} needs a value")
        faults[argv[0]], argv = argv[1], argv[2:]
    return faults, argv


def nonfinite_grad(spec: str) -> None:
    import torch
    import torch.distributed as dist

    at, _, rank = spec.partition(":")
    real, calls = torch.nn.utils.clip_grad_norm_, [0]

    def clip_grad_norm_(parameters, *args, **kwargs):
        parameters = list(parameters)
        calls[0] += 1
        if calls[0] == int(at) and dist.get_rank() == int(rank or 0):
            parameters[0].grad.fill_(float("inf"))  # the global norm turns infinite on every rank
        return real(parameters, *args, **kwargs)

    torch.nn.utils.clip_grad_norm_ = clip_grad_norm_


def leave_out(names: str) -> None:
    import trainer.loop

    real, left_out = trainer.loop.build_optimizer, set(names.split(","))

    def build_optimizer(model, cfg):
        optimizer, scheduler = real(model, cfg)
        gone = {id(p) for name, p in model.named_parameters() if name in left_out}
        for group in optimizer.param_groups:
            group["params"] = [p for p in group["params"] if id(p) not in gone]
        return optimizer, scheduler

    trainer.loop.build_optimizer = build_optimizer


def torch_version(spec: str) -> None:
    import torch.distributed as dist

    import trainer.preflight

    at, _, version = spec.partition(":")
    real = trainer.preflight.facts

    def facts(loader, cfg):
        found = real(loader, cfg)
        return {**found, "torch": version} if dist.get_rank() == int(at) else found

    trainer.preflight.facts = facts


def hold_endpoint(released: str) -> None:
    from trainer.dashboards import Dashboards

    real = Dashboards.close

    def close(self):
        while self.server is not None and not os.path.exists(released):
            time.sleep(0.05)
        real(self)

    Dashboards.close = close


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    faults, flags = split(sys.argv[1:])
    for option, value in faults.items():
        {"--nonfinite-grad": nonfinite_grad, "--leave-out": leave_out, "--torch-version": torch_version,
         "--hold-endpoint": hold_endpoint}[option](value)
    sys.argv = [str(REPO / "jobs" / "train.py"), *flags]
    runpy.run_path(sys.argv[0], run_name="__main__")
