"""What tokenmill checks before it trusts a place on disk or a name read from a file.

- A private folder (numba's cache, the shards cache, the L2 arena folder) belongs to the user running
  tokenmill, is not a symlink, and nobody else can write to it: a folder another user made, or could
  change, would let them put code (numba's cache is read with pickle) or tokens into this user's run.
- A name from a file (a shard's `file` in index.json) is a plain file name: no folder separator, not
  `.` or `..`: an index from elsewhere names files beside it, never a path of its choosing.
"""

import os
import pwd
import stat
from pathlib import Path, PurePosixPath


class UntrustedPath(PermissionError):
    """A folder or file tokenmill will not use: another user owns it, others may write to it, or it is a link."""


def owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_private(path: Path, what: str, *, folder: bool = True) -> os.stat_result:
    """lstat(path), after checking that it is this user's own, not a symlink, of the expected kind, and not
    writable by anyone else; else UntrustedPath naming the path and its owner."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise UntrustedPath(f"{what} {path} is a symbolic link: refusing to follow it (remove it)")
    if folder != stat.S_ISDIR(info.st_mode) or not (folder or stat.S_ISREG(info.st_mode)):
        raise UntrustedPath(f"{what} {path} is not a {'folder' if folder else 'regular file'} (remove it)")
    if info.st_uid != os.getuid():
        raise UntrustedPath(f"{what} {path} belongs to {owner_name(info.st_uid)}, not to {owner_name(os.getuid())}: "
                            "another user may have planted it (remove it, or choose another folder)")
    if info.st_mode & 0o022:
        raise UntrustedPath(f"{what} {path} can be written by other users (mode {stat.S_IMODE(info.st_mode):o}): "
                            f"chmod go-w {path}, or remove it")
    return info


def private_folder(path: Path, what: str) -> Path:
    """`path` as a folder of this user's alone: created 0700 (with its parents) when absent, else checked
    (check_private). Returns it."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    check_private(path, what)
    return path


def plain_file_name(name, field: str) -> str:
    """`name` if it names a file beside the one that named it; else ValueError naming `field`."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"{field} must be a file name, got {name!r}")
    if "/" in name or "\\" in name or "\x00" in name or name in (".", "..") or len(name.encode()) > 255:
        raise ValueError(f"{field} {name!r} is not a plain file name (no folders, no '..', not absolute)")
    return name


def relative_inside(path, field: str) -> str:
    """`path` if it is relative and stays inside the folder it is relative to; else ValueError naming `field`."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise ValueError(f"{field} must be a relative path, got {path!r}")
    parts = PurePosixPath(path.replace("\\", "/"))
    if parts.is_absolute() or ".." in parts.parts or path.startswith("~") or "://" in path:
        raise ValueError(f"{field} {path!r} must be relative to its folder and stay inside it (no '..', not absolute)")
    return path


def is_url(location) -> bool:
    """A remote location (s3://, gs://, https://, ...); file:// is a local path and is checked as one."""
    return isinstance(location, str) and "://" in location and not location.startswith("file://")
