"""What a stage keeps on the executors while it runs, and the one place that lets it go.

A stage opens `with persisted() as kept:` and persists every frame it reads more than once through
`kept.keep(frame)`; all of them are released when the block ends, however it ends. Nothing else
persists or unpersists, and no stage clears the session's whole cache (another caller's frames are
not a stage's to drop).
"""

from contextlib import contextmanager


class Persisted:
    def __init__(self):
        self._frames: list = []

    def keep(self, frame, level=None):
        """`frame` persisted (on disk unless `level` says otherwise) until the stage ends."""
        from pyspark import StorageLevel

        frame = frame.persist(level or StorageLevel.DISK_ONLY)
        self._frames.append(frame)
        return frame

    def __len__(self) -> int:
        return len(self._frames)

    def release(self) -> None:
        for frame in reversed(self._frames):
            frame.unpersist()
        self._frames.clear()


@contextmanager
def persisted():
    kept = Persisted()
    try:
        yield kept
    finally:
        kept.release()
