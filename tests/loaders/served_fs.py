"""A remote store for the loader's tests: an fsspec filesystem (tokenmill-test://BUCKET/...) that serves
local folders as a bucket would, and can lie: serve a file larger than it is (its bytes, then zeros), or
stall halfway through one (the reader blocks, as on a dead connection, and "STALLED" is printed). It
counts the bytes it serves. Imported by a child process too, to be killed in the middle of a fetch."""

import io
import time
import uuid
from pathlib import Path

import fsspec
from fsspec.spec import AbstractFileSystem

PROTOCOL = "tokenmill-test"


class ServedFileSystem(AbstractFileSystem):
    protocol = PROTOCOL
    folders: dict[str, Path] = {}  # bucket → the local folder it serves
    lies: dict[str, int] = {}  # "bucket/path" → the size served instead of the file's own
    stalls: set[str] = set()  # "bucket/path" whose reading blocks halfway
    served = 0  # bytes read from every file

    def _local(self, path: str) -> Path:
        bucket, _, inside = self._strip_protocol(path).partition("/")
        if bucket not in self.folders:
            raise FileNotFoundError(path)
        return self.folders[bucket] / inside if inside else self.folders[bucket]

    def info(self, path, **_kwargs):
        path = self._strip_protocol(path)
        local = self._local(path)
        if local.is_dir():
            return {"name": path, "size": 0, "type": "directory"}
        if not local.is_file():
            raise FileNotFoundError(path)
        return {"name": path, "size": self.lies.get(path, local.stat().st_size), "type": "file"}

    def ls(self, path, detail=True, **_kwargs):
        path = self._strip_protocol(path)
        entries = [self.info(f"{path}/{p.name}") for p in sorted(self._local(path).iterdir())]
        return entries if detail else [e["name"] for e in entries]

    def _open(self, path, mode="rb", **_kwargs):  # noqa: ARG002  (read only)
        path = self._strip_protocol(path)
        local = self._local(path)
        if not local.is_file():
            raise FileNotFoundError(path)
        data = local.read_bytes()
        return ServedFile(data, self.lies.get(path, len(data)), path in self.stalls)


class ServedFile(io.RawIOBase):
    def __init__(self, data: bytes, size: int, stall: bool):
        self.data, self.size, self.position = data, size, 0
        self.stall_at = size // 2 if stall else size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.position >= self.stall_at and self.position < self.size:
            print("STALLED", flush=True)
            time.sleep(3600)
        n = min(len(buffer), self.stall_at - self.position)
        chunk = self.data[self.position:self.position + n]
        buffer[:len(chunk)] = chunk
        buffer[len(chunk):n] = bytes(n - len(chunk))
        self.position += n
        ServedFileSystem.served += n
        return n


fsspec.register_implementation(PROTOCOL, ServedFileSystem, clobber=True)


def serve(folder: Path, bucket: str | None = None, lies: dict[str, int] | None = None, stalls=()) -> str:
    """`folder` served as `bucket` (a new one by default); `lies`: {path inside: size served}; `stalls`:
    paths inside whose reading blocks halfway. Returns the bucket's URL."""
    bucket = bucket or f"bucket-{uuid.uuid4().hex[:8]}"
    ServedFileSystem.folders[bucket] = Path(folder)
    ServedFileSystem.lies.update({f"{bucket}/{k}": v for k, v in (lies or {}).items()})
    ServedFileSystem.stalls.update(f"{bucket}/{k}" for k in stalls)
    return f"{PROTOCOL}://{bucket}"
