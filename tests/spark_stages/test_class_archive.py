import os
import subprocess
import sys

import pytest

from spark_stages.class_archive import CACHE_ENV, ClassArchive, archive_key, archive_path


def test_one_process_records_an_archive_and_a_killed_recorders_partial_is_removed(monkeypatch, tmp_path):
    from spark_stages.java import ensure_java

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    home = ensure_java()
    path = archive_path(home, {})
    path.with_suffix(".partial").write_bytes(b"a killed recorder's")
    # Another process is recording: it holds the lock until its JVM has written the archive.
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path.with_suffix(".lock"))],
                              stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert ClassArchive.for_launch(home, {}, record=True) is None  # this JVM runs without
        assert path.with_suffix(".partial").exists()  # not this process's to remove
    finally:
        holder.communicate("")
    recorder = ClassArchive.for_launch(home, {}, record=True)  # the holder is gone, and so is its lock
    assert recorder.recording == path.with_suffix(".partial") and not recorder.recording.exists()
    os.close(recorder.lock)


HOLD_LOCK = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR); "
             "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()")


def test_the_key_follows_the_java_and_the_classpath(monkeypatch, tmp_path):
    from spark_stages.java import ensure_java

    home = ensure_java()
    assert archive_key(home, {}) == archive_key(home, {"spark.master": "local[2]"})
    assert archive_key(home, {}) != archive_key(home, {"spark.jars": "extra.jar"})
    assert archive_key(home, {}) != archive_key(str(tmp_path), {})  # another Java
    monkeypatch.setenv(CACHE_ENV, "off")
    assert ClassArchive.for_launch(home, {}, record=True) is None
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    assert ClassArchive.for_launch(home, {}) is None  # a job records none: the recorder does
    recording = ClassArchive.for_launch(home, {}, record=True)
    assert recording.recording is not None and "-XX:ArchiveClassesAtExit" in recording.java_options()[0]
    os.close(recording.lock)
    recording.path.write_bytes(b"recorded")
    assert ClassArchive.for_launch(home, {}).java_options()[0] == f"-XX:SharedArchiveFile={recording.path}"


@pytest.mark.parametrize("problem", ["another-user", "others-write"])
def test_an_archive_folder_another_user_could_have_planted_is_never_mapped(monkeypatch, tmp_path, other_user, problem):
    """A class archive is class data the JVM maps as code: from a folder of this user's alone."""
    from spark_stages.java import ensure_java

    folder = tmp_path / "jvm"
    folder.mkdir()
    if problem == "another-user":
        os.chown(folder, other_user.uid, other_user.uid)
    else:
        folder.chmod(0o777)
    monkeypatch.setenv(CACHE_ENV, str(folder))
    home = ensure_java()
    archive_path(home, {}).write_bytes(b"a planted archive")
    with pytest.warns(UserWarning, match="runs without a class archive"):
        assert ClassArchive.for_launch(home, {}, record=True) is None
