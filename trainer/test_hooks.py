"""Faults the tests inject into real runs, through environment variables that no real run sets.

TOKENMILL_TEST_NONFINITE_GRAD=STEP[:RANK]: that rank's (default 0) gradient is made infinite at STEP.
TOKENMILL_TEST_LEAVE_OUT=NAME,...: parameters left out of the optimizer's groups.
TOKENMILL_TEST_TORCH_VERSION=RANK:VERSION: the torch version that rank reports at the start checks.
TOKENMILL_TEST_HOLD_ENDPOINT=FILE: at the end of the run the Prometheus endpoint stays up until FILE exists
(so a test scrapes the last step's figures however fast the run was).
"""

import os
import time


def _pair(name: str) -> tuple[str, str] | None:
    value = os.environ.get(name, "")
    return tuple(value.split(":", 1)) if ":" in value else (value, "0") if value else None


def poisoned(step: int, rank: int) -> bool:
    found = _pair("TOKENMILL_TEST_NONFINITE_GRAD")
    return found is not None and int(found[0]) == step and int(found[1]) == rank


LEFT_OUT = frozenset(filter(None, os.environ.get("TOKENMILL_TEST_LEAVE_OUT", "").split(",")))


def torch_version(rank: int, real: str) -> str:
    found = os.environ.get("TOKENMILL_TEST_TORCH_VERSION", "")
    at, _, version = found.partition(":")
    return version if found and int(at) == rank else real


def hold_endpoint() -> None:
    released = os.environ.get("TOKENMILL_TEST_HOLD_ENDPOINT")
    while released and not os.path.exists(released):
        time.sleep(0.05)
