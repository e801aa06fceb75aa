"""Checkpoints checked before they are loaded: one another user could have planted is refused before anything
of it is read (a checkpoint is code); a damaged one (a file truncated, missing or corrupt, its manifest
missing or garbled, DCP's metadata unreadable) is named by what is wrong and moved aside, not deleted; one of
another model does not fit and is left alone. One gloo process, a small state saved as the loop saves."""

import os
import pickle
import shutil
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from schemas.trust import UntrustedPath
from trainer.checkpoints import MANIFEST, Checkpoints, Unfit, check_checkpoint, complete_checkpoints, intact


class Planted:
    """What unpickling runs: DCP's .metadata is a pickle (a checkpoint is code)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "ran"))


def planted_checkpoint(folder: Path, marker: Path) -> Path:
    checkpoint = folder / "checkpoints" / "step-0000010"
    checkpoint.mkdir(parents=True)
    (checkpoint / ".metadata").write_bytes(pickle.dumps(Planted(marker)))
    (checkpoint / "__0_0.distcp").write_bytes(b"\0" * 64)
    return checkpoint


@pytest.mark.parametrize("planted_by", ["folder", "file", "others-write", "link"])
def test_a_checkpoint_another_user_owns_or_can_write_is_refused_before_anything_is_read(tmp_path, other_user,
                                                                                        planted_by):
    marker = tmp_path / "ran"
    checkpoint = planted_checkpoint(tmp_path / "run", marker)
    if planted_by == "folder":
        os.chown(checkpoint, other_user.uid, other_user.uid)
    elif planted_by == "file":
        os.chown(checkpoint / ".metadata", other_user.uid, other_user.uid)
    elif planted_by == "others-write":
        checkpoint.parent.chmod(0o777)
    else:
        (checkpoint / "__0_0.distcp").unlink()
        (checkpoint / "__0_0.distcp").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UntrustedPath):
        intact(checkpoint)  # what every load checks first
    assert not marker.exists()
    check_checkpoint(planted_checkpoint(tmp_path / "mine", marker))  # this user's own and private: accepted


@pytest.fixture
def saved(tmp_path):
    """(Checkpoints of a world of one, a state like the loop's, the folder of its saved checkpoint)."""
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    checkpoints = Checkpoints(tmp_path / "run", keep=3, rank=0, world=1, device=torch.device("cpu"), checksums=True)
    state = {"model": {"w": torch.arange(4096, dtype=torch.float32)}, "loader": {"position": 12, "skips": [[4, 8]]}}
    checkpoints.save(state, 10, "lineage", "data")
    checkpoints.wait()
    yield checkpoints, state, checkpoints.ours
    checkpoints.hasher.shutdown()
    dist.destroy_process_group()


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGES = {
    "truncated": (lambda c: os.truncate(c / "__0_0.distcp", 100), "__0_0.distcp is truncated: 100 bytes, its "
                                                                   "manifest says"),
    "missing": (lambda c: (c / "__0_0.distcp").unlink(), "__0_0.distcp is missing"),
    "corrupt": (lambda c: flip_a_byte(c / "__0_0.distcp"), "__0_0.distcp is corrupt: its checksum differs"),
    "no manifest": (lambda c: (c / MANIFEST).unlink(), f"{MANIFEST} is missing"),
    "garbled manifest": (lambda c: (c / MANIFEST).write_text('{"format": 7}'), f"{MANIFEST} is damaged"),
    # JSON, but no object: a list's .get was an AttributeError past every handler of damage
    "a list for a manifest": (lambda c: (c / MANIFEST).write_text("[]"), f"{MANIFEST} is damaged"),
    "null for a manifest": (lambda c: (c / MANIFEST).write_text("null"), f"{MANIFEST} is damaged"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_checkpoint_is_named_and_moved_aside(saved, damage):
    checkpoints, state, checkpoint = saved
    assert intact(checkpoint) is None and checkpoints.lineage_of(checkpoint) == "lineage"
    do, message = DAMAGES[damage]
    do(checkpoint)
    assert message in intact(checkpoint)
    assert message in checkpoints.load(checkpoint, {"model": {"w": torch.zeros(4096)}, "loader": {}})
    aside = checkpoints.move_aside(checkpoint, message)
    assert aside == checkpoints.folder / "damaged" / "step-0000010" and not checkpoint.exists()
    assert message in (aside / "damaged.txt").read_text() and checkpoints.complete() == []


def test_an_intact_checkpoint_loads_and_one_of_another_model_does_not_fit(saved):
    checkpoints, state, checkpoint = saved
    template = {"model": {"w": torch.zeros(4096)}, "loader": {"position": 0, "skips": []}}
    assert checkpoints.load(checkpoint, template) is None
    assert torch.equal(template["model"]["w"], state["model"]["w"]) and template["loader"]["skips"] == [[4, 8]]
    with pytest.raises(Unfit, match="does not fit this run"):
        checkpoints.load(checkpoint, {"model": {"w": torch.zeros(8)}, "loader": {}})
    assert checkpoint.exists()  # not damage: left alone


def test_metadata_dcp_cannot_read_is_damage(saved):
    checkpoints, _, checkpoint = saved
    copy = checkpoint.with_name("step-0000020")
    shutil.copytree(checkpoint, copy)
    (copy / ".metadata").write_bytes(b"not a pickle")
    manifest = (copy / MANIFEST).read_text()
    from trainer.checkpoints import file_sha256

    size, digest = (copy / ".metadata").stat().st_size, file_sha256(copy / ".metadata")
    import json

    data = json.loads(manifest)
    data["files"][".metadata"] = {"bytes": size, "sha256": digest}  # the files agree with it: DCP's own read fails
    data["step"] = 20
    (copy / MANIFEST).write_text(json.dumps(data))
    assert "its DCP metadata cannot be read" in checkpoints.load(copy, {"model": {"w": torch.zeros(4096)}})


def _copied(checkpoint: Path, step: int, manifest_step: int | None = None) -> Path:
    """The checkpoint copied under another step's name, its manifest saying `manifest_step` (that step)."""
    import json

    copy = checkpoint.with_name(f"step-{step:07d}")
    shutil.copytree(checkpoint, copy)
    data = json.loads((copy / MANIFEST).read_text())
    data["step"] = step if manifest_step is None else manifest_step
    (copy / MANIFEST).write_text(json.dumps(data))
    return copy


def test_the_newest_checkpoint_is_the_highest_step_not_the_last_name(saved):
    checkpoints, _, checkpoint = saved
    for step in (9_999_990, 10_000_000):
        _copied(checkpoint, step)
    (checkpoints.folder / "step-000000x").mkdir()  # not a step: not a checkpoint
    assert [p.name for p in checkpoints.complete()] == ["step-10000000", "step-9999990", "step-0000010"]


def test_two_names_of_one_step_are_ordered_by_name_not_by_the_file_systems_listing(tmp_path, monkeypatch):
    """Found by an audit: step-10 and step-010 (copied in, the loop writes neither form twice) came in the
    order the folder listed them, which is the file system's (the order they were made, on some)."""
    for name in ("step-010", "step-10", "step-9"):
        (tmp_path / name).mkdir()
    listed = Path.glob
    for backwards in (False, True):
        monkeypatch.setattr(Path, "glob", lambda folder, pattern, b=backwards: sorted(listed(folder, pattern),
                                                                                      reverse=b))
        assert [p.name for p in complete_checkpoints(tmp_path)] == ["step-10", "step-010", "step-9"]


def test_a_checkpoint_under_another_steps_name_is_damage(saved):
    checkpoints, _, checkpoint = saved
    renamed = _copied(checkpoint, 30, manifest_step=10)
    assert checkpoints.load(renamed, {"model": {"w": torch.zeros(4096)}, "loader": {}}) == \
        "its manifest is of step 10, its name of step 30"


def test_a_load_dcp_refuses_is_damage_not_the_end_of_the_run(saved):
    # without checksums DCP's load is the last check, and what it raises is a BaseException (CheckpointException)
    checkpoints, _, checkpoint = saved
    data = checkpoint / "__0_0.distcp"
    data.write_bytes(bytes(255 - b for b in data.read_bytes()))  # the same size: only the load can tell
    checkpoints.checksums = False
    problem = checkpoints.load(checkpoint, {"model": {"w": torch.zeros(4096)}, "loader": {"position": 0, "skips": []}})
    assert problem.startswith("DCP's load failed: CheckpointException"), problem


def test_what_the_file_system_does_to_checkpoints_is_damage_or_passed_over_never_a_traceback(saved):
    """Found by trying: a checkpoint folder deleted between its check and its move aside (a rollback died
    on the rename), a folder where the manifest should be, a .partial that is a file (every retry's save
    failed on it)."""
    checkpoints, _, checkpoint = saved
    (checkpoint / MANIFEST).unlink()
    (checkpoint / MANIFEST).mkdir()
    assert f"{MANIFEST} cannot be read" in intact(checkpoint)
    shutil.rmtree(checkpoint)
    checkpoints.move_aside(checkpoint, "vanished")  # nothing to move: passed over
    assert checkpoints.complete() == [] and not checkpoint.exists()
    planted = checkpoints.folder / "step-0000020.partial"
    planted.write_text("not a save")
    again = Checkpoints(checkpoints.folder.parent, keep=3, rank=0, world=1, device=torch.device("cpu"),
                        checksums=True)
    try:
        assert not planted.exists()  # removed at the start, as a killed save's folder is
    finally:
        again.hasher.shutdown()


class _Planted:
    """What a crafted pickle does when it is read: creates a file (any call would do as well)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return open, (str(self.marker), "w")


def _resealed(copy: Path, step: int) -> Path:
    """The checkpoint's manifest made to agree with its files as they are now (a checkpoint sent whole)."""
    import json

    from trainer.checkpoints import file_sha256

    data = json.loads((copy / MANIFEST).read_text())
    data["files"] = {p.name: {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
                     for p in sorted(copy.iterdir()) if p.name != MANIFEST}
    data["step"] = step
    (copy / MANIFEST).write_text(json.dumps(data))
    return copy


def test_a_checkpoint_runs_no_code_whatever_its_metadata_or_values_hold(saved, tmp_path):
    # DCP unpickles the metadata with pickle.load and every value that is not a tensor with torch.load(
    # weights_only=False): a checkpoint sent whole, or swapped in after its checks, ran its code as the user
    import pickle

    import torch.distributed.checkpoint as dcp

    from trainer.checkpoints import CheckpointReader

    checkpoints, state, checkpoint = saved
    marker = tmp_path / "code ran"
    metadata = _resealed(shutil.copytree(checkpoint, checkpoint.with_name("step-0000020")), 20)
    (metadata / ".metadata").write_bytes(pickle.dumps(_Planted(marker)))
    _resealed(metadata, 20)
    assert "its DCP metadata cannot be read" in checkpoints.load(metadata, {"model": {"w": torch.zeros(4096)}})
    value = checkpoint.with_name("step-0000030")
    dcp.save({"model": state["model"], "loader": {"position": _Planted(marker)}}, checkpoint_id=str(value))
    shutil.copy2(checkpoint / MANIFEST, value / MANIFEST)
    _resealed(value, 30)
    assert "DCP's load failed" in checkpoints.load(value, {"model": {"w": torch.zeros(4096)},
                                                           "loader": {"position": 0}})
    assert not marker.exists()
    # a file the metadata names is one of the checkpoint's, its slices inside it
    outside = shutil.copytree(checkpoint, checkpoint.with_name("step-0000040"))
    data = CheckpointReader(str(outside)).read_metadata()
    for info in data.storage_data.values():
        info.relative_path = "../../secret"
    data.storage_meta = None
    (outside / ".metadata").write_bytes(pickle.dumps(data))
    _resealed(outside, 40)
    assert "not a plain file name" in checkpoints.load(outside, {"model": {"w": torch.zeros(4096)}, "loader": {}})


def test_a_checkpoint_of_the_loops_state_round_trips_its_rng_states_as_data(tmp_path):
    from trainer.checkpoints import load_checkpoint, rng_state

    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    try:
        import torch.distributed.checkpoint as dcp

        saved = {"model": {"w": torch.arange(8.0)}, "rng_rank0": rng_state(), "train": {"step": 3, "lineage": "x"}}
        dcp.save(saved, checkpoint_id=str(tmp_path / "ck"))
        loaded = {"model": {"w": torch.zeros(8)}, "rng_rank0": rng_state(), "train": {"step": 0, "lineage": ""}}
        load_checkpoint(loaded, tmp_path / "ck")
        assert loaded["train"] == saved["train"] and torch.equal(loaded["model"]["w"], saved["model"]["w"])
        assert (loaded["rng_rank0"]["numpy"][1] == saved["rng_rank0"]["numpy"][1]).all()
        assert loaded["rng_rank0"]["python"] == saved["rng_rank0"]["python"]
    finally:
        dist.destroy_process_group()


def test_a_checkpoint_is_read_from_the_folder_checked_whatever_is_renamed_meanwhile(saved, monkeypatch):
    # a second user who can write the folder holding the run folder (an HPC project folder: group-writable, no
    # sticky bit) renamed it aside once the checks had passed, and the load read a checkpoint planted in its place
    from trainer import checkpoints as module
    from trainer.checkpoints import pinned

    checkpoints, state, checkpoint = saved
    other = shutil.copytree(checkpoint, checkpoint.with_name("step-0000020"))
    (other / "planted").write_text("not this checkpoint's")
    aside = checkpoint.with_name("aside")
    with pinned(checkpoint) as folder:
        os.rename(checkpoint, aside)
        os.rename(other, checkpoint)  # the path now names another folder
        assert not (folder / "planted").exists() and (checkpoint / "planted").exists()
        template = {"model": {"w": torch.zeros(4096)}, "loader": {"position": 0, "skips": []}}
        assert checkpoints._load(checkpoint, folder, template) is None
        assert torch.equal(template["model"]["w"], state["model"]["w"])
    os.rename(checkpoint, other)
    os.rename(aside, checkpoint)
    real = module.check_checkpoint

    def swapped_after_the_check(path):  # between the check and the open
        checked = real(path)
        os.rename(path, aside)
        os.rename(other, path)
        return checked

    monkeypatch.setattr(module, "check_checkpoint", swapped_after_the_check)
    with pytest.raises(UntrustedPath, match="replaced while it was checked"):
        checkpoints.load(checkpoint, {"model": {"w": torch.zeros(4096)}})
