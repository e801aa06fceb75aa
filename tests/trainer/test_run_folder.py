"""A run folder another user could squat is refused, with one line naming it: not this user's own, writable
by others, a symbolic link, or holding a lock file that is a link, someone else's or open to others. The lock
is created 0600, so no other user can open it, let alone hold it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed as dist

from tests.conftest import REPO, shared_tmp
from trainer import run_folder as run_folder_module
from trainer.run_folder import LOCK_FILE, run_folder


@pytest.fixture
def world_of_one(tmp_path):
    """The process group run_folder broadcasts its outcome on: one gloo process."""
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.fixture
def never_waits(monkeypatch):
    """A refusal that waited (as for a folder another run holds) would wait forever: fail instead."""
    def sleep(_seconds):
        raise AssertionError("run_folder waited on a folder it must refuse")

    monkeypatch.setattr(run_folder_module.time, "sleep", sleep)


def outcome(run_dir: Path, wait: bool = True) -> str | None:
    with run_folder(run_dir, 0, wait) as refused:
        return refused


def assert_refused(refused: str | None, *words: str) -> None:
    assert refused is not None and "\n" not in refused, refused
    assert all(word in refused for word in words), refused


@pytest.mark.usefixtures("world_of_one", "never_waits")
def test_a_lock_planted_as_a_link_to_a_file_of_the_users_is_refused_and_the_file_left_alone(tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("the user's own file\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / LOCK_FILE).symlink_to(victim)
    assert_refused(outcome(run_dir), str(run_dir / LOCK_FILE), "symbolic link")
    assert victim.read_text() == "the user's own file\n"


@pytest.mark.usefixtures("world_of_one", "never_waits")
@pytest.mark.parametrize("problem", ["group-write", "others-write", "link"])
def test_a_run_folder_others_can_write_or_that_is_a_link_is_refused(tmp_path, problem):
    run_dir = tmp_path / "run"
    if problem == "link":
        (tmp_path / "elsewhere").mkdir()
        run_dir.symlink_to(tmp_path / "elsewhere")
    else:
        run_dir.mkdir()
        run_dir.chmod(0o775 if problem == "group-write" else 0o777)
    assert_refused(outcome(run_dir), str(run_dir))
    assert not (run_dir / LOCK_FILE).exists()


@pytest.mark.usefixtures("world_of_one", "never_waits")
def test_a_run_folder_another_user_owns_is_refused(tmp_path, other_user):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    os.chown(run_dir, other_user.uid, other_user.uid)
    assert_refused(outcome(run_dir), str(run_dir), f"uid {other_user.uid}")
    assert not (run_dir / LOCK_FILE).exists()


@pytest.mark.usefixtures("world_of_one", "never_waits")
@pytest.mark.parametrize("problem", ["another-users", "others-read", "hard-link"])
def test_a_lock_file_that_is_not_the_users_alone_is_refused(tmp_path, problem):
    if problem == "another-users" and os.getuid() != 0:
        pytest.skip("giving a file to another user needs root")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    lock = run_dir / LOCK_FILE
    lock.write_text("{}")
    lock.chmod(0o600)
    if problem == "another-users":
        os.chown(lock, 54321, 54321)  # as root; a user cannot give a file away
    elif problem == "others-read":
        lock.chmod(0o644)  # another user may hold it open, and so hold the lock
    else:
        os.link(lock, tmp_path / "second-name")
    assert_refused(outcome(run_dir), str(lock))


@pytest.mark.usefixtures("world_of_one")
def test_the_lock_is_created_0600_and_no_other_user_can_hold_it(tmp_path, other_user):
    run_dir = shared_tmp(tmp_path / "shared") / "run"  # the folders above it passable by everyone
    assert outcome(run_dir, wait=False) is None
    lock = run_dir / LOCK_FILE
    held = other_user.python(
        "import fcntl\n"
        f"try:\n    fcntl.flock(open({str(lock)!r}), fcntl.LOCK_EX | fcntl.LOCK_NB)\n    print('held')\n"
        "except PermissionError:\n    print('could not open it')\n")
    assert held.stdout.strip() == "could not open it"
    assert lock.stat().st_mode & 0o777 == 0o600 and not run_dir.stat().st_mode & 0o022
    assert outcome(run_dir, wait=False) is None  # this user's next run takes it


def test_the_run_is_stopped_with_one_line_and_exit_code_2(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run_dir.chmod(0o777)
    done = subprocess.run([sys.executable, str(REPO / "jobs" / "train.py"), "--shards", str(tmp_path / "none"),
                           "--run-dir", str(run_dir), "--steps", "2", "--warmup-steps", "1"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    errors = [line for line in done.stderr.splitlines() if line.startswith("jobs.train: error:")]
    assert done.returncode == 2 and len(errors) == 1 and str(run_dir) in errors[0], done.stderr[-3000:]


@pytest.mark.usefixtures("world_of_one", "never_waits")
def test_a_run_folder_in_a_folder_everyone_can_write_is_refused_and_flock_failing_is_one_line(tmp_path,
                                                                                                monkeypatch):
    """Found by review (2026-12-07): only the run folder was checked; in a folder every user can write without
    the sticky bit (a /tmp/runs made 0777 by another), they could swap the checked folder for one of theirs.
    A file system without flock (ENOLCK, ENOSYS) was a traceback."""
    import errno
    import fcntl

    squatted = tmp_path / "runs"
    squatted.mkdir()
    squatted.chmod(0o777)
    assert outcome(squatted / "mine") is None  # root's or the user's own open to all: a container's volume
    if os.getuid() == 0:
        os.chown(squatted, 54321, 54321)  # made by another user (as root: a user cannot give a folder away)
        assert_refused(outcome(squatted / "run"), str(squatted), "every user can write")
        squatted.chmod(0o1777)  # sticky, as /tmp: others cannot rename what is not theirs
        assert outcome(squatted / "run") is None

    def no_flock(*_):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_flock)
    assert_refused(outcome(tmp_path / "nfs"), "cannot be locked", "flock")


@pytest.mark.usefixtures("world_of_one")
def test_a_run_waiting_for_its_folder_starts_once_the_other_run_lets_go(tmp_path, monkeypatch):
    """Found by the day's second review: the waiting branch still read the outcome as a line (an
    AttributeError once the outcome held whether to wait)."""
    import fcntl

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    holder = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)  # another run's open lock
    fcntl.flock(holder, fcntl.LOCK_EX)
    waits = []

    def the_other_run_ends(seconds):
        waits.append(seconds)
        os.close(holder)

    monkeypatch.setattr(run_folder_module.time, "sleep", the_other_run_ends)
    assert outcome(run_dir, wait=True) is None and len(waits) == 1
