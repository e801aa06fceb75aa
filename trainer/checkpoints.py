"""Checkpoints of the training loop: asynchronous, complete or absent, checked before they are loaded, and
exact to resume from.

DIR/checkpoints/step-NNNNNNN holds what Trainer.state_dict() gives (model, optimizer, scheduler, the
loader's and the guard's state, step, world size, lineage, each rank's RNG states) through
torch.distributed.checkpoint, and manifest.json: every file's size and SHA-256 (each rank hashes the
files it wrote, in a background thread once its part is written), the step and the lineage (a run and
its resumes). A save is written as step-NNNNNNN.partial on a gloo group of its own and renamed by rank 0
once every rank's part, DCP's metadata and the manifest are on disk; the ranks decide that together at a
step boundary. Loading reshards the model and optimizer when the world size changed.

Before a checkpoint is loaded (a resume or a rollback) every rank checks, together:
1. that it is this user's alone (check_checkpoint: a checkpoint is code, DCP reads its metadata with
   pickle): otherwise the run stops (UntrustedPath), touching nothing of it;
2. its files against the manifest (missing, truncated, corrupt: a checksum of its own, each file read by
   one rank), then that DCP's metadata reads and fits this run (the same keys and shapes: another model's
   checkpoint stops the run, exit code 2, rather than pass for damage), then DCP's load itself.
A checkpoint that fails 2 is damaged: one line names what was wrong, rank 0 moves it aside to
DIR/checkpoints/damaged/ (never deleted: damaged.txt in it says why) and the loop tries the one before,
and so on down the kept ones.
"""

import contextlib
import hashlib
import json
import logging
import os
import pickle
import random
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint._traverse import set_element
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta

from schemas.trust import TooLarge, UntrustedPath, bounded_json, check_private, plain_file_name

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "tokenmill.checkpoint/1"
MAX_MANIFEST_BYTES = 1 << 20
DAMAGED = "damaged"
HASH_CHUNK = 8 << 20


class Unfit(Exception):
    """A checkpoint that does not fit this run (another model, optimizer or data): not damage."""


class Checkpoints:
    """DIR/checkpoints/step-NNNNNNN: complete ones only (see the module's docstring)."""

    def __init__(self, run_dir: Path, keep: int, rank: int, world: int, device: torch.device, checksums: bool):
        self.folder, self.keep, self.rank, self.world, self.device = run_dir / "checkpoints", keep, rank, world, device
        self.checksums = checksums
        self.group = dist.new_group(backend="gloo")  # not the training group: no deadlock with its collectives
        self.hasher = ThreadPoolExecutor(1, thread_name_prefix="checkpoint-hash")
        self.pending: tuple | None = None  # (this rank's part: its files' digests once written, target, manifest)
        # the newest complete checkpoint this run saved or loaded (every rank knows it: poll decides
        # together): what a rollback goes back to first, never another run's left in the folder
        self.ours: Path | None = None
        if rank == 0:
            self.folder.mkdir(parents=True, exist_ok=True)
            for partial in self.folder.glob("*.partial"):  # a save that was killed: never loaded
                if partial.is_dir() and not partial.is_symlink():
                    shutil.rmtree(partial, ignore_errors=True)
                else:  # a file or a link by that name: the next save's rename would fail on it, every retry
                    partial.unlink(missing_ok=True)
        dist.barrier()

    def complete(self) -> list[Path]:
        return complete_checkpoints(self.folder)

    def lineage_of(self, checkpoint: Path) -> str | None:
        try:
            return read_manifest(checkpoint)["lineage"]
        except (OSError, ValueError, UntrustedPath):
            return None

    def rollback_candidates(self, lineage: str) -> list[Path]:
        """What a rollback may go back to, newest first: ours, then the older ones of the same lineage."""
        ours = self.ours_on_disk()
        if ours is None:
            return []
        return [ours] + [p for p in self.complete() if step_of(p) < step_of(ours) and self.lineage_of(p) == lineage]

    def save(self, state: dict, step: int, lineage: str, data: str) -> None:
        """Saves `state` as step `step` of `lineage`; the manifest names `data`, the shards' identity."""
        self.wait()
        target = self.folder / f"step-{step:07d}"
        partial = target.with_name(target.name + ".partial")
        future = dcp.async_save(state, checkpoint_id=str(partial), process_group=self.group)
        part = self.hasher.submit(self._digests, future, partial)
        self.pending = (part, target, {"format": MANIFEST_FORMAT, "step": step, "lineage": lineage, "data": data})

    def _digests(self, future, partial: Path) -> dict[str, dict]:
        """The files this rank wrote (DCP names them __RANK_N; rank 0 also writes .metadata), once written."""
        future.result()
        mine = sorted(name for name in os.listdir(partial)
                      if name.startswith(f"__{self.rank}_") or (self.rank == 0 and name == ".metadata"))
        return {name: {"bytes": (partial / name).stat().st_size, "sha256": file_sha256(partial / name)}
                for name in mine}

    def poll(self, block: bool = False) -> None:
        """Finishes the pending save once every rank's part is written and hashed (or waits for that).
        Every rank calls this at the same step and they decide together: a rank alone in a collective
        while the others enter a training collective would deadlock."""
        if self.pending is None:
            return
        part, target, manifest = self.pending
        if block:
            part.exception()
        everyone_done = torch.tensor([int(part.done())], device=self.device)  # NCCL takes device tensors
        dist.all_reduce(everyone_done, op=dist.ReduceOp.MIN)
        if not everyone_done.item():
            return
        try:
            digests = part.result()
        except Exception as e:  # noqa: BLE001 - raised below on every rank alike, not here alone
            digests = {"": {"failed": f"rank {self.rank}: {first_line(e)}"}}
        parts: list = [None] * self.world
        dist.all_gather_object(parts, digests, group=self.group)
        self.pending = None
        if failed := [found[""]["failed"] for found in parts if "" in found]:
            raise RuntimeError(f"the checkpoint {target.name} could not be saved: {'; '.join(failed)}")
        self.ours = target
        if self.rank == 0:
            partial = target.with_name(target.name + ".partial")
            manifest["files"] = {name: entry for found in parts for name, entry in sorted(found.items())}
            (partial / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
            os.replace(partial, target)
            for old in self.complete()[self.keep:]:
                shutil.rmtree(old, ignore_errors=True)

    def ours_on_disk(self) -> Path | None:
        """After the pending save: `ours`, renamed into place by rank 0 before any rank goes on."""
        self.wait()
        dist.barrier(group=self.group)
        return self.ours

    def wait(self) -> None:
        self.poll(block=True)

    def load(self, checkpoint: Path, state: dict) -> str | None:
        """Loads `state` (Trainer.state_dict()'s layout) from `checkpoint` in place; None once loaded, else
        what is wrong with it (the same on every rank). UntrustedPath, or Unfit for another model's."""
        with contextlib.ExitStack() as pins:
            folder, found = _pin(pins, checkpoint)
            if found is None:
                found = _damage(folder, step_of(checkpoint), self.rank, self.world, self.checksums)
            if (problem := self._agreed(found)) is not None:
                return problem
            return self._load(checkpoint, folder, state)

    def _load(self, checkpoint: Path, folder: Path, state: dict) -> str | None:
        """load's reading, from `folder` (the checkpoint pinned)."""
        try:
            metadata, found = CheckpointReader(str(folder)).read_metadata(), None
        except Exception as e:  # noqa: BLE001 - whatever unpickling a damaged metadata file raises
            metadata, found = None, ("damaged", f"its DCP metadata cannot be read: {first_line(e)}")
        if metadata is not None:
            if not any(key.startswith(f"rng_rank{self.rank}.") for key in metadata.state_dict_metadata):
                state.pop(f"rng_rank{self.rank}", None)  # a rank the saving run did not have (a larger world now)
            planner = CheckpointPlanner()
            planner.set_up_planner(state, metadata, self.rank == 0)
            try:
                planner.create_local_plan()  # the checks of DCP's own load (keys, shapes), without reading
            except (RuntimeError, ValueError) as e:
                found = ("unfit", f"{checkpoint} does not fit this run (another model or data?): {first_line(e)}")
        if (problem := self._agreed(found)) is not None:
            return problem
        try:
            load_checkpoint(state, folder)
            found = None
        except (Exception, CheckpointException) as e:  # noqa: BLE001 - DCP's CheckpointException, on every rank,
            # is a BaseException: `except Exception` alone let a real failed load end the run
            found = ("damaged", f"DCP's load failed: {first_line(e)}")
        return self._agreed(found)

    def _agreed(self, found: tuple[str, str] | None) -> str | None:
        """Every rank's finding gathered: UntrustedPath or Unfit when any rank's is, else the damage seen."""
        everyone: list = [None] * self.world
        dist.all_gather_object(everyone, found, group=self.group)
        for kind, error in (("untrusted", UntrustedPath), ("unfit", Unfit)):
            if lines := [line for k, line in filter(None, everyone) if k == kind]:
                raise error(lines[0])
        problems = list(dict.fromkeys(line for _, line in filter(None, everyone)))
        return "; ".join(problems) or None

    def moved_aside(self) -> list[Path]:
        """The checkpoints moved to DIR/checkpoints/damaged/ (by this run or an earlier one)."""
        aside = self.folder / DAMAGED
        return sorted(p for p in aside.iterdir() if p.is_dir()) if aside.is_dir() else []

    def move_aside(self, checkpoint: Path, problem: str) -> Path:
        """The damaged checkpoint moved to DIR/checkpoints/damaged/ by rank 0 (every rank returns where)."""
        aside = self.folder / DAMAGED
        target, n = aside / checkpoint.name, 1
        while target.exists():
            n += 1
            target = aside / f"{checkpoint.name}.{n}"
        if self.rank == 0:
            try:  # a folder deleted meanwhile (a clean-up job, a user) has nothing to move: the one before is tried
                aside.mkdir(exist_ok=True)
                os.replace(checkpoint, target)
                if target.is_dir() and not target.is_symlink():
                    (target / "damaged.txt").write_text(problem + "\n")
            except OSError as e:
                log.warning("%s could not be moved aside (%s); passed over", checkpoint, first_line(e))
        dist.barrier(group=self.group)
        if self.ours == checkpoint:
            self.ours = None
        return target


# -- reading a checkpoint as data ----------------------------------------------------------------------------
# DCP reads its metadata with pickle.load and every non-tensor value (the loader's and the guard's state, the
# RNG states) with torch.load(weights_only=False): a checkpoint from elsewhere, or one another user could
# swap in after its checks (a run folder in a shared project folder), ran its code as the user. Here the
# metadata is unpickled with DCP's own classes and torch's dtypes, sizes and layouts alone, the values with
# torch's weights-only unpickler (numpy's arrays allowed: the RNG state holds one), and every file the
# metadata names must be a file of the checkpoint, its slices inside it.

METADATA_GLOBALS = {
    *(("torch.distributed.checkpoint.metadata", name) for name in (
        "Metadata", "ChunkStorageMetadata", "TensorStorageMetadata", "BytesStorageMetadata", "TensorProperties",
        "MetadataIndex", "StorageMeta", "_MEM_FORMAT_ENCODING")),
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"), ("torch", "Size"),
    ("torch.serialization", "_get_layout"), ("pathlib", "PosixPath"), ("collections", "OrderedDict"),
}
VALUE_GLOBALS = [np.dtype, np.ndarray, np._core.multiarray._reconstruct, type(np.dtype(np.uint32))]


class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in METADATA_GLOBALS or module == "torch" and isinstance(
                getattr(torch, name, None), torch.dtype | torch.layout | torch.memory_format):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is no part of a checkpoint's metadata")


class CheckpointReader(dcp.FileSystemReader):
    """DCP's reader of a checkpoint folder, its metadata read as data (above)."""

    def read_metadata(self, *_, **kwargs) -> Metadata:
        with self.fs.create_stream(self._get_metadata_path(kwargs.get("rank")), "rb") as file:
            metadata = _MetadataUnpickler(file).load()
        if not isinstance(metadata, Metadata):
            raise pickle.UnpicklingError(f"the metadata is a {type(metadata).__name__}")
        for info in (metadata.storage_data or {}).values():
            name = plain_file_name(getattr(info, "relative_path", None), "a file the metadata names")
            size = os.stat(Path(self.path) / name).st_size
            if not (isinstance(info.offset, int) and isinstance(info.length, int)
                    and 0 <= info.offset <= info.offset + info.length <= size):
                raise ValueError(f"a slice of {name} past its {size} bytes")
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


class CheckpointPlanner(DefaultLoadPlanner):
    """DCP's load planner, its non-tensor values read with torch's weights-only unpickler."""

    def load_bytes(self, read_item, value) -> None:
        with torch.serialization.safe_globals(VALUE_GLOBALS):
            loaded = torch.load(value, weights_only=True)
        if self.flatten_state_dict:
            set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], loaded)
        else:
            self.state_dict[read_item.dest_index.fqn] = loaded


def load_checkpoint(state: dict, checkpoint: Path) -> None:
    """dcp.load of `checkpoint` into `state`, as data (above)."""
    dcp.load(state, storage_reader=CheckpointReader(str(checkpoint)), planner=CheckpointPlanner())


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def first_line(error: BaseException) -> str:
    """The error's type and the first line of its message; for DCP's CheckpointException (whose message is a
    list of ranks, then tracebacks), the first failing rank's error."""
    failures = getattr(error, "failures", None) if isinstance(error, CheckpointException) else None
    if isinstance(failures, dict) and failures:
        rank, wrapped = min(failures.items(), key=lambda item: str(item[0]))
        inner = wrapped[0] if isinstance(wrapped, tuple) and wrapped else wrapped
        if isinstance(inner, BaseException):
            return f"CheckpointException on rank {rank}: {first_line(inner)}"[:300]
    try:
        text = str(error).strip().splitlines()
    except Exception:  # noqa: BLE001 - a message that cannot be made is no reason to lose the error
        text = []
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def complete_checkpoints(folder: Path) -> list[Path]:
    """The complete checkpoints in a folder (step-N, N digits: no .partial), newest first by their step's
    number, not their name: step-10000000 comes after step-9999990. Two names of one step (step-10, step-010,
    copied in) by name, not in the order the file system lists them."""
    found = [p for p in folder.glob("step-*") if step_of(p) is not None and p.is_dir()]
    return sorted(found, key=lambda p: (step_of(p), p.name), reverse=True)


def step_of(checkpoint: Path) -> int | None:
    """The step a checkpoint folder's name gives (step-N, N digits), or None for any other name."""
    digits = checkpoint.name.removeprefix("step-")
    return int(digits) if checkpoint.name.startswith("step-") and digits.isascii() and digits.isdigit() else None


def read_manifest(checkpoint: Path) -> dict:
    """A checkpoint's manifest, checked; ValueError saying what is wrong with it."""
    try:
        with open(checkpoint / MANIFEST, "rb") as f:
            data = bounded_json(f.read(MAX_MANIFEST_BYTES + 1), MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        raise ValueError(f"{MANIFEST} is missing (not a complete checkpoint)") from None
    except (TooLarge, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ValueError(f"{MANIFEST} is damaged: {e}") from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or data.get("format") != MANIFEST_FORMAT or not files \
            or not isinstance(data.get("lineage"), str) or not isinstance(data.get("step"), int):
        raise ValueError(f"{MANIFEST} is damaged: not a manifest of format {MANIFEST_FORMAT}")
    for name, entry in files.items():
        try:
            plain_file_name(name, "a file of the manifest")
        except ValueError as e:
            raise ValueError(f"{MANIFEST} is damaged: {e}") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("bytes"), int) \
                or not isinstance(entry.get("sha256"), str):
            raise ValueError(f"{MANIFEST} is damaged: the entry of {name} is not a size and a checksum")
    return data


@contextlib.contextmanager
def pinned(checkpoint: Path) -> Iterator[Path]:
    """The checkpoint, checked (check_checkpoint), as a path through a descriptor held open on it
    (/proc/self/fd/N): every read through it reaches the folder that was checked, whatever is renamed above it
    meanwhile (a review had a checkpoint planted in a run folder renamed aside after its checks passed: the
    run folder's project folder was group-writable, as HPC project folders are). UntrustedPath where the folder
    opened is not the one checked."""
    checked = check_checkpoint(checkpoint)
    descriptor = os.open(checkpoint, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        opened = os.fstat(descriptor)
        if (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
            raise UntrustedPath(f"the checkpoint {checkpoint} was replaced while it was checked")
        yield Path(f"/proc/self/fd/{descriptor}")
    finally:
        os.close(descriptor)


def _pin(pins: contextlib.ExitStack, checkpoint: Path) -> tuple[Path | None, tuple[str, str] | None]:
    """(the checkpoint pinned in `pins`, None), or (None, this rank's finding: untrusted or damaged)."""
    try:
        return pins.enter_context(pinned(checkpoint)), None
    except UntrustedPath as e:
        return None, ("untrusted", str(e))
    except FileNotFoundError as e:
        return None, ("damaged", f"{e.filename or checkpoint} vanished")
    except OSError as e:  # a link (O_NOFOLLOW) or no folder by that name: no checkpoint of this user's
        return None, ("untrusted", f"the checkpoint {checkpoint} cannot be opened as a folder: {e.strerror}")


def _damage(folder: Path, step: int, rank: int, world: int, checksums: bool) -> tuple[str, str] | None:
    """This rank's finding on the files of a checkpoint of `step` (pinned: `folder`): ("damaged", what), or
    None. Every rank checks every file's size; each file's checksum is read by one rank."""
    try:
        manifest = read_manifest(folder)
    except ValueError as e:
        return "damaged", str(e)
    except OSError as e:  # unreadable, a folder where the manifest should be: damage, not the end of the run
        return "damaged", f"{MANIFEST} cannot be read: {e.strerror or e}"
    if manifest["step"] != step:  # a checkpoint copied or renamed under another step's name
        return "damaged", f"its manifest is of step {manifest['step']}, its name of step {step}"
    files = manifest["files"]
    for i, (name, entry) in enumerate(sorted(files.items())):
        try:
            size = (folder / name).stat().st_size
            if size != entry["bytes"]:
                cut = "truncated: " if size < entry["bytes"] else ""
                return "damaged", f"{name} is {cut}{size} bytes, its manifest says {entry['bytes']}"
            if checksums and i % world == rank and file_sha256(folder / name) != entry["sha256"]:
                return "damaged", f"{name} is corrupt: its checksum differs from its manifest's"
        except FileNotFoundError:
            return "damaged", f"{name} is missing"
        except OSError as e:  # unreadable (permissions), a folder by its name
            return "damaged", f"{name} cannot be read: {e.strerror or e}"
    return None


def rng_state() -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def check_checkpoint(checkpoint: Path) -> os.stat_result:
    """The checkpoint folder's lstat, after checking that it, the folder holding it and everything in it are
    this user's own and nobody else can write them (UntrustedPath): a checkpoint steers the run it is loaded
    into, and until 2026-12-07 unpickling a planted file ran another user's code."""
    check_private(checkpoint.parent, "the checkpoints folder")
    checked = check_private(checkpoint, "the checkpoint")
    for path in sorted(checkpoint.rglob("*")):
        check_private(path, "a checkpoint's file", folder=path.is_dir() and not path.is_symlink())
    return checked


def intact(checkpoint: Path, checksums: bool = True) -> str | None:
    """What is wrong with a checkpoint's files in one process, or None; UntrustedPath."""
    with contextlib.ExitStack() as pins:
        return pin_intact(checkpoint, pins, checksums)[1]


def pin_intact(checkpoint: Path, pins: contextlib.ExitStack, checksums: bool = True) -> tuple[Path | None, str | None]:
    """(the checkpoint pinned in `pins`, to be read through, None) where its files match its manifest, else
    (None, what is wrong with them), in one process (jobs.evaluate); UntrustedPath."""
    with contextlib.ExitStack() as own:
        folder, found = _pin(own, checkpoint)
        if found is None:
            found = _damage(folder, step_of(checkpoint), 0, 1, checksums)
        if found and found[0] == "untrusted":
            raise UntrustedPath(found[1])
        if found:
            return None, found[1]
        pins.enter_context(own.pop_all())  # held open by the caller's stack from here
        return folder, None
