"""What a rank's collectives run on: the NCCL settings of the run, and the NCCL library and GPU driver the
process actually loaded.

Settings: `nccl.*` are applied to the environment before the process group exists (torch and NCCL read
them there): TORCH_NCCL_ASYNC_ERROR_HANDLING (a failed or stuck collective aborts the communicator and
the process instead of hanging every rank), the collective timeout (init_process_group's; gloo's too on
CPU), and whatever NCCL_* variables `nccl.env` names (NCCL_IB_HCA, NCCL_SOCKET_IFNAME, ...). A variable
the environment already set otherwise is overridden with a warning: the configuration is the run's record.
Every NCCL_* and TORCH_NCCL_* variable in the environment after that is a rank's settings, compared across
ranks at start (trainer/preflight.py): a rank started with other settings is named like a rank on another
version.

The library: the file the dynamic loader mapped for libnccl (from /proc/self/maps: torch loads whichever
libnccl.so.2 comes first on the search path, not necessarily the one it was built against; a cu12 and a
cu13 library on one node hung a public 512-GPU run) and the version that file reports at run time
(ncclGetVersion). The driver: the NVIDIA kernel module's version (/proc/driver/nvidia/version). Both are
"none" on a machine without them (CPU runs).
"""

import ctypes
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

ASYNC_ERROR_HANDLING = "TORCH_NCCL_ASYNC_ERROR_HANDLING"
SETTING = re.compile(r"(TORCH_)?NCCL_[A-Z0-9_]+")
MAX_PROC_BYTES = 1 << 22  # /proc/self/maps of a process with every CUDA library loaded is well under this


MAX_TIMEOUT_S = 7 * 24 * 3600


@dataclass(frozen=True)
class NcclConfig:
    """Settings of the collectives; NCCL's own apply on GPUs, the timeout on every backend."""
    # TORCH_NCCL_ASYNC_ERROR_HANDLING: 1 a failed or timed-out collective tears the process down (torchrun's
    # default: the agent sees it and stops or restarts the job), 2 aborts the communicator only, 3 tears
    # down without cleaning up, 0 nothing (a stuck rank hangs the job)
    async_error_handling: Literal[0, 1, 2, 3] = 1
    timeout_s: int = 600  # a collective waiting longer fails the run instead of hanging it
    env: dict[str, str] = field(default_factory=dict)  # NCCL_IB_*, NCCL_SOCKET_* ... for this run (NAME: "VALUE")

    def __post_init__(self):
        # (at most a week: 1e18 s overflowed the timedelta the process group is given, a traceback at start)
        if self.async_error_handling not in (0, 1, 2, 3) or not 1 <= self.timeout_s <= MAX_TIMEOUT_S:
            raise ValueError(f"need async_error_handling in 0-3 and timeout_s in 1-{MAX_TIMEOUT_S}, got "
                             f"{self.async_error_handling}, {self.timeout_s}")
        if bad := [name for name in self.env if not SETTING.fullmatch(name)]:
            raise ValueError(f"env: {', '.join(bad)} is not an NCCL setting (NCCL_* or TORCH_NCCL_*)")
        if ASYNC_ERROR_HANDLING in self.env:  # it had silently won over async_error_handling, the run's record
            raise ValueError(f"env: {ASYNC_ERROR_HANDLING} is set by async_error_handling")
        if bad := [name for name, value in self.env.items() if "\x00" in str(value)]:  # a traceback at start
            raise ValueError(f"env: {', '.join(bad)}'s value holds a NUL byte")


def apply(cfg: NcclConfig) -> None:
    """The configured settings into this process's environment, before the process group starts."""
    wanted = {ASYNC_ERROR_HANDLING: str(cfg.async_error_handling), **{k: str(v) for k, v in cfg.env.items()}}
    for name, value in wanted.items():
        if os.environ.get(name, value) != value:
            log.warning("%s=%s in the environment overridden by the configuration's %s", name, os.environ[name],
                        value)
        os.environ[name] = value


def settings() -> dict[str, str]:
    """This rank's NCCL settings: every NCCL_* and TORCH_NCCL_* variable of its environment."""
    return {name: value for name, value in sorted(os.environ.items()) if SETTING.fullmatch(name)}


def mapped_library(maps: str, stem: str) -> str | None:
    """The path of the first file named like `stem` (libnccl.so...) in /proc/PID/maps text."""
    for line in maps.splitlines():
        path = line.split(maxsplit=5)[5] if len(line.split(maxsplit=5)) == 6 else ""
        if Path(path).name.startswith(stem):
            return path.removesuffix(" (deleted)")
    return None


def _read_proc(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_PROC_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def loaded_nccl() -> tuple[str, str]:
    """(the path of the libnccl this process loaded, the version it reports), or ("none", "none")."""
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.nccl.version()  # loads the library where torch loads it lazily
    except (ImportError, RuntimeError, AttributeError):
        pass
    path = mapped_library(_read_proc("/proc/self/maps"), "libnccl.so")
    if path is None:
        return "none", "none"
    try:
        version = ctypes.c_int()
        if ctypes.CDLL(path).ncclGetVersion(ctypes.byref(version)) != 0:  # the mapped copy: no second load
            return path, "unknown"
    except (OSError, AttributeError):
        return path, "unknown"
    code = version.value  # NCCL >= 2.9: major * 10000 + minor * 100 + patch
    return path, f"{code // 10000}.{code // 100 % 100}.{code % 100}"


def gpu_driver() -> str:
    """The NVIDIA kernel module's version, or "none"."""
    found = re.search(r"Kernel Module(?: for [^ ]+)?\s+([0-9][0-9.]*)", _read_proc("/proc/driver/nvidia/version"))
    return found.group(1) if found else "none"
