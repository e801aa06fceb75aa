import pytest

from loaders import shm_arena


@pytest.fixture(autouse=True)
def private_shm(tmp_path, monkeypatch):
    """Each test's L2 arenas in a folder of its own (tests that need a real /dev/shm say so)."""
    folder = tmp_path / "shm"
    folder.mkdir()
    monkeypatch.setattr(shm_arena, "SHM", folder)
    return folder
