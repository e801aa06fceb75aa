"""The bundled pretraining loop under torchrun: FSDP2 over the loader's batches, exact and elastic resume.

    torchrun --nproc_per_node=N jobs/train.py --shards SHARDS --run-dir DIR [--model tiny|125m|1b]
        [--steps N] [--global-batch-size B] [--checkpoint-every N] [--resume] [--config FILE] [--print-config]
        [--benchmark NAME=PATH ...] [--cpu-offload] [--guard.* --eval.* --stragglers.* --nccl.* ...]
    python jobs/train.py ...      # one process, without torchrun

Flags are TrainConfig's fields (trainer/config.py); --config takes a YAML file of them, flags override it.
A bad setting is exit code 2 and one line (under torchrun: from every worker, before any work).
"""

import os
import sys

if __name__ == "__main__":
    # Repeatable sums on CPU: MKL (and OpenMP) may otherwise change a GEMM's thread count at run time on a
    # loaded machine, and with it the sums' order (Intel's reproducibility conditions; alone they did not
    # make CI's two-thread two-node runs agree: docs/trainer.md). Read when torch loads MKL, so before the
    # imports below; a user's own setting stays.
    for setting in ("MKL_DYNAMIC", "OMP_DYNAMIC"):
        os.environ.setdefault(setting, "FALSE")
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # torchrun runs this file
    from prep.cli import command_line
    from trainer.loop import TrainConfig, train

    _, config = command_line(TrainConfig, None, prog="jobs.train", description=__doc__.split("\n")[0],
                             mapping_flags={"benchmark": ("eval", "benchmarks")})
    if "RANK" not in os.environ:  # not under torchrun: a world of one process
        import socket

        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    train(config)
