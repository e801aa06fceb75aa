"""The NCCL library a process mapped, read from /proc/PID/maps text; the settings applied from the
configuration over the environment's, with a warning; names that are no NCCL setting refused."""

import logging
import os

import pytest

from trainer import nccl
from trainer.nccl import NcclConfig, apply, mapped_library, settings

MAPS = """\
7f1c00000000-7f1c00021000 rw-p 00000000 00:00 0
7f1c2a000000-7f1c2c000000 r-xp 00000000 103:02 1234   /venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so
7f1c30000000-7f1c31000000 r-xp 00000000 103:02 5678   /venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2
7f1c31000000-7f1c31100000 r--p 01000000 103:02 5678   /venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2
7f1c40000000-7f1c40100000 r-xp 00000000 103:02 9999   /opt/my path/libnccl-net.so (deleted)
"""


def test_the_mapped_libnccl_is_found_and_nothing_else_passes_for_it():
    assert mapped_library(MAPS, "libnccl.so") == "/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2"
    assert mapped_library(MAPS, "libnccl-net") == "/opt/my path/libnccl-net.so"  # spaces kept, "(deleted)" not
    assert mapped_library(MAPS.replace("libnccl.so.2", "libtorch.so"), "libnccl.so") is None
    assert nccl.loaded_nccl() == ("none", "none")  # this CPU build maps no libnccl


def test_the_configuration_sets_the_environment_and_says_what_it_overrode(monkeypatch, caplog):
    monkeypatch.setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3")
    monkeypatch.setenv("NCCL_DEBUG", "WARN")
    monkeypatch.delenv("NCCL_SOCKET_IFNAME", raising=False)
    with caplog.at_level(logging.WARNING):
        apply(NcclConfig(async_error_handling=1, env={"NCCL_SOCKET_IFNAME": "eth1"}))
    assert os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1" and os.environ["NCCL_SOCKET_IFNAME"] == "eth1"
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING=3 in the environment overridden" in caplog.text
    found = settings()
    assert found["NCCL_DEBUG"] == "WARN" and found["NCCL_SOCKET_IFNAME"] == "eth1" and "PATH" not in found
    monkeypatch.delenv("NCCL_SOCKET_IFNAME")


@pytest.mark.parametrize("bad", [{"async_error_handling": 4}, {"timeout_s": 0}, {"env": {"LD_PRELOAD": "x.so"}}])
def test_what_is_no_nccl_setting_is_refused(bad):
    with pytest.raises(ValueError):
        NcclConfig(**bad)
