"""What tokenmill checks before it trusts a place on disk, or a name, a location or a number read from a file.

- A private folder (numba's cache, the shards cache, the L2 arena folder) belongs to the user running
  tokenmill, is not a symlink, and nobody else can write to it: a folder another user made, or could
  change, would let them put code (numba's cache is read with pickle) or tokens into this user's run.
- Private places are found from what only the user controls, never at a name another user can take
  first (a folder planted at /tmp/tokenmill-numba-UID stopped every job of its user): tokenmill's part
  of the user's cache (user_cache), and in a folder every user can create in, as /dev/shm, a name
  derived from a secret kept there (shared_private_folder), the same in every process of the user on
  the node. A name taken anyway is passed over with a warning, never a refusal to work. Without a
  cache to write in (no writable home, as on some executors), the predictable tokenmill-UID, when it
  is the user's, else a folder of a random name for this process alone (fallback_folder).
- A name from a file (a shard's `file` in index.json) is a plain file name: no folder separator, not
  `.` or `..`: an index from elsewhere names files beside it, never a path of its choosing.
- A location from a file (a mixture's source) is a folder inside the file's own, or a URL of a remote
  store (REMOTE_PROTOCOLS): never a place on this machine by another name (file://, local://,
  memory://), nor a chain (`simplecache::file://...`) that wraps one.
- A number from a file is read within bounds (bounded_json, bounded_decimal): an exact parse of
  "1e100000000" or of an integer of a million digits takes minutes, and a count past an int64 sizes
  nothing NumPy can hold. Past the bounds it stays text (OutOfBounds) for its field's check to refuse
  by name; files are read up to a size of their kind (TooLarge).
"""

import atexit
import contextlib
import errno
import hashlib
import io
import json
import os
import pwd
import re
import secrets
import shutil
import socket
import stat
import tempfile
import warnings
from fractions import Fraction
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


def check_ancestors(path: Path, what: str) -> None:
    """UntrustedPath where a folder above `path` (its real path) that another user (not root) owns can be written
    by every user without the sticky bit (/tmp and /dev/shm have it: there others cannot rename what is not
    theirs): it had been made so, and they could put a folder or a link of theirs where `path` was checked. A
    folder a group may write (a team's project folder), another user's not writable by all, or root's open to
    all (a container's volume: Kubernetes' emptyDir is 0777) is a trust the system's owner gave, and is taken."""
    for folder in Path(os.path.realpath(path)).parents:
        info = os.stat(folder)
        mode = info.st_mode
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX and info.st_uid not in (0, os.getuid()):
            raise UntrustedPath(f"{what} {path} lies in {folder}, which every user can write (mode "
                                f"{stat.S_IMODE(mode):o}, not sticky): another user could replace it (chmod o-w "
                                f"{folder}, or choose a folder of your own)")


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


INSIDE = "must be relative to its folder and stay inside it (no '..', not absolute)"


def relative_inside(path, field: str) -> str:
    """`path` if it is relative and stays inside the folder it is relative to; else ValueError naming `field`."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise ValueError(f"{field} must be a relative path, got {path!r}")
    parts = PurePosixPath(path.replace("\\", "/"))
    if parts.is_absolute() or ".." in parts.parts or path.startswith("~") or "://" in path:
        raise ValueError(f"{field} {path!r} {INSIDE}")
    return path


def is_url(location) -> bool:
    """Whether a location the user gave (their own configuration: any fsspec URL, a chain among them) is
    remote; file:// is a local path and is checked as one. Locations from files: location_from_file."""
    return isinstance(location, str) and "://" in location and not location.startswith("file://")


# Where shards are published: object stores, the web, the Hugging Face Hub, Hadoop. Left out: what
# reaches this machine (file, local, memory: the process's own), what wraps another filesystem (simplecache,
# blockcache, filecache, dir, reference, zip, tar, libarchive: any of them can wrap a local file), and hosts
# reached with the user's own keys (ssh, sftp, smb, ftp, webdav, git): a mixture from elsewhere needs none.
REMOTE_PROTOCOLS = frozenset({
    "s3", "s3a",  # Amazon S3 and S3-compatible stores (s3fs)
    "gs", "gcs",  # Google Cloud Storage (gcsfs)
    "az", "abfs", "abfss", "adl",  # Azure Blob Storage, Data Lake Gen2 and Gen1 (adlfs)
    "oci", "oss",  # Oracle Cloud and Alibaba Cloud object storage
    "http", "https",  # any web server
    "hf",  # the Hugging Face Hub
    "hdfs", "webhdfs",  # Hadoop
})


def location_from_file(value, field: str) -> str:
    """A location read from a file from elsewhere (a mixture's source): a URL of a remote store
    (REMOTE_PROTOCOLS as written, no '::' chain), else a path relative to the file's folder that stays
    inside it; ValueError naming `field` otherwise."""
    if isinstance(value, str) and ("://" in value or "::" in value):
        protocol = value.partition("://")[0]
        if "::" not in value and protocol in REMOTE_PROTOCOLS:
            return value
        why = "'::' chains one filesystem into another" if "::" in value else f"{protocol!r} is not one"
        raise ValueError(f"{field} {value!r} {INSIDE}, or a URL of a remote store "
                         f"({', '.join(sorted(REMOTE_PROTOCOLS))}): {why}")
    return relative_inside(value, field)


# -- numbers from files --------------------------------------------------------------------------------------------

MAX_DIGITS = 30  # significant digits of a number from a file: more than a float holds (17) or anyone writes
MAX_EXPONENT = 30  # its leading digit's power of ten within +-30: weights, counts and rates need far less
MAX_NUMBER_CHARS = 100  # longer text is not read as a number at all
INT64 = 2**63  # integers from files stay inside an int64: NumPy sizes and indexes arrays with them

_DECIMAL = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?")  # ASCII digits only, as JSON's
_RATIO = re.compile(r"([0-9]+)/([0-9]+)")


def valid_unicode(*texts: str) -> bool:
    """Whether the strings can be written as UTF-8: JSON and Python allow an unpaired surrogate ("\\ud800"),
    which every later encode (a key, a token, a page) would fail on."""
    try:
        for text in texts:
            text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def bounded_decimal(text: str) -> Fraction | None:
    """The exact value of a decimal as written (`0.37`, `-2`, `1e-3`, `.5`, or a ratio `1/3`), or None
    when it is none, or has over MAX_DIGITS significant digits or a leading digit past 10^+-MAX_EXPONENT
    (so that no exact value costs more than a few hundred bits to build)."""
    text = text.strip()
    if len(text) > MAX_NUMBER_CHARS:
        return None
    if ratio := _RATIO.fullmatch(text):
        numerator, denominator = (part.lstrip("0") for part in ratio.groups())
        if not denominator or len(numerator) > MAX_DIGITS or len(denominator) > MAX_DIGITS:
            return None
        return Fraction(int(numerator or "0"), int(denominator))
    match = _DECIMAL.fullmatch(text)
    if match is None or not (match[2] or match[3]):
        return None
    fraction = match[3] or ""
    digits = (match[2] + fraction).lstrip("0")
    if not digits:
        return Fraction(0)
    shift = int(match[4] or 0) - len(fraction) + len(digits) - len(digits.rstrip("0"))  # value: digits x 10^shift
    digits = digits.rstrip("0")
    if len(digits) > MAX_DIGITS or abs(len(digits) - 1 + shift) > MAX_EXPONENT:
        return None
    value = int(digits) * Fraction(10) ** shift
    return -value if match[1] == "-" else value


class OutOfBounds:
    """A number in a file past the bounds (or NaN, Infinity), kept as its text and never converted: no
    int, float or str, so the check of its field refuses it, by name."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text if len(self.text) <= 40 else f"{self.text[:20]}... ({len(self.text)} characters)"


class TooLarge(ValueError):
    """A file larger than the most a file of its kind may hold."""


def _bounded_int(text: str) -> int | OutOfBounds:
    if len(text.lstrip("-")) > 19:  # before int(): converting a long one is the cost
        return OutOfBounds(text)
    value = int(text)
    return value if -INT64 <= value < INT64 else OutOfBounds(text)


def _bounded_float(text: str) -> float | OutOfBounds:
    return float(text) if bounded_decimal(text) is not None else OutOfBounds(text)


def bounded_json(data: bytes | str, limit: int):
    """JSON from a file from elsewhere, given its first `limit` + 1 bytes: TooLarge past `limit`; UTF-8
    only; numbers past the bounds above (and NaN, Infinity) read as OutOfBounds; a key twice in one object a
    ValueError."""
    if len(data) > limit:
        raise TooLarge(f"larger than {limit} bytes, the most it may hold")
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return json.loads(text, parse_int=_bounded_int, parse_float=_bounded_float, parse_constant=OutOfBounds,
                      object_pairs_hook=keys_once)


class RepeatedKey(ValueError):
    """A key given twice in one JSON object of a file from elsewhere."""


def keys_once(pairs: list[tuple[str, object]]) -> dict:
    """An object of a file from elsewhere, each key once (json.loads' object_pairs_hook): json keeps a repeated
    key's last value and drops the others without a word (a mixture naming a source twice)."""
    found = dict(pairs)
    if len(found) < len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise RepeatedKey(f"the key {twice[:60]!r} is given twice in one object")
    return found


# -- private places ------------------------------------------------------------------------------------------------

SECRET_FILE = "shared-names.key"  # in user_cache(): the secret behind the names of this user's shared folders
NAMES_TRIED = 16  # names of a shared folder tried, in order, before the fallback (each one taken is warned of)
_own_folders: dict[Path, Path] = {}  # shared folder → this process's folder of a random name in it


def user_cache() -> Path:
    """tokenmill's folder in this user's cache: $XDG_CACHE_HOME/tokenmill (when absolute, as the XDG spec
    asks), else ~/.cache/tokenmill; made 0700 and checked (private_folder), in a cache folder of this user's
    or root's that nobody else may write (unless sticky). OSError (UntrustedPath among them) where there
    is none such (no home, a home nobody may write)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    try:
        base = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    except RuntimeError as e:  # no HOME and no passwd entry
        raise OSError(f"no home folder: {e}") from None
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = os.stat(base)  # followed: a link in the user's own home is their choice
    if info.st_uid not in (os.getuid(), 0):
        raise UntrustedPath(f"the cache folder {base} belongs to {owner_name(info.st_uid)}")
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise UntrustedPath(f"the cache folder {base} can be written by other users (mode "
                            f"{stat.S_IMODE(info.st_mode):o}): any of them could swap tokenmill's folder in it")
    return private_folder(base / "tokenmill", "tokenmill's cache folder")


def cache_home() -> Path:
    """Where tokenmill keeps its caches (numba's, remote shards, a disk-backed L2): user_cache(), else a
    fallback_folder in the system's temporary folder, with a warning."""
    try:
        return user_cache()
    except OSError as e:
        warnings.warn(f"no private cache folder ({e}): tokenmill's caches go to the system's temporary folder",
                      stacklevel=2)
        return fallback_folder(Path(tempfile.gettempdir()), "tokenmill's cache folder")


def fallback_folder(shared: Path, what: str) -> Path:
    """shared/tokenmill-UID when it is this user's own or can be made so (every process of the user finds
    it); one another user planted is passed over, with a warning, for a folder of a random name made once
    for this process alone (mkdtemp, 0700; removed at exit)."""
    try:
        return private_folder(shared / f"tokenmill-{os.getuid()}", what)
    except UntrustedPath as e:
        if shared not in _own_folders:
            _own_folders[shared] = Path(tempfile.mkdtemp(prefix="tokenmill-", dir=shared))
            atexit.register(shutil.rmtree, _own_folders[shared], ignore_errors=True)
        warnings.warn(f"{e}; passed over: this process uses {_own_folders[shared]}, a folder of its own", stacklevel=3)
        return _own_folders[shared]


def shared_private_folder(shared: Path, what: str) -> Path:
    """This user's folder in `shared`, a folder every user can create in (/dev/shm): named from the user's
    secret (user_cache()/SECRET_FILE) and this host's name, so that every process of the user on the node
    finds the same one and no other user can take it first. A name taken anyway (seen, then planted after
    a reboot) is passed over with a warning for the next of the same sequence. Without a secret: the
    fallback_folder, with a warning."""
    try:
        secret = _secret()
    except OSError as e:
        warnings.warn(f"{what}: no private cache to keep the secret its name derives from ({e}): "
                      f"{shared}/tokenmill-{os.getuid()} is used if it is this user's", stacklevel=2)
        return fallback_folder(shared, what)
    host = socket.gethostname()
    for attempt in range(NAMES_TRIED):
        name = hashlib.blake2b(f"{host}/{attempt}".encode(), key=secret, digest_size=10).hexdigest()
        try:
            return private_folder(shared / f"tokenmill-{name}", what)
        except UntrustedPath as e:
            warnings.warn(f"{e}; passed over for the next name", stacklevel=2)
    warnings.warn(f"{what}: the {NAMES_TRIED} names of this user's folder in {shared} are all taken: remove "
                  f"{user_cache() / SECRET_FILE} for new ones", stacklevel=2)
    return fallback_folder(shared, what)


def _secret() -> bytes:
    """The user's secret (user_cache()/SECRET_FILE, 0600): made once, atomically (a hard link that fails
    when another process made it first: theirs is everyone's), and checked before each use."""
    path = user_cache() / SECRET_FILE
    if not os.path.lexists(path):
        made = path.with_name(f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, secrets.token_hex(16).encode())
        finally:
            os.close(fd)
        try:
            os.link(made, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(made)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info, text = os.fstat(fd), os.read(fd, 64)
    finally:
        os.close(fd)
    if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077
            or not re.fullmatch(rb"[0-9a-f]{32}", text)):
        raise UntrustedPath(f"{path} is not a secret of this user's alone (owner {owner_name(info.st_uid)}, mode "
                            f"{stat.S_IMODE(info.st_mode):o}): remove it, and the next run makes a new one")
    return bytes.fromhex(text.decode())


def open_regular_file(path) -> "io.BufferedReader":
    """A file from elsewhere opened to read, where it is a regular file: a FIFO or a device is refused (a FIFO's
    open or read waits forever; /dev/zero has no end). A link is followed to what it names (a downloaded
    snapshot's files are links into its store), which must be a regular file too. Raises FileNotFoundError
    where there is none, and UntrustedPath saying what is there instead (the caller names the file)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise FileNotFoundError(e.errno, e.strerror, str(path)) from None
        raise UntrustedPath(f"cannot be opened as a regular file: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise UntrustedPath("not a regular file (a FIFO, a device or a folder is not read)")
    os.set_blocking(descriptor, True)
    return open(descriptor, "rb")


def read_up_to(file, limit: int) -> bytes:
    """The first `limit` bytes of an open binary file, or all of it where shorter: read until then, as a
    stream (a web server's) gives what has arrived at each read (an index of 48 KB read as its first 24 KB)."""
    data = bytearray()
    while len(data) < limit and (chunk := file.read(limit - len(data))):
        data += chunk
    return bytes(data)


def is_regular_file(path) -> bool:
    """Whether `path` is a regular file, or a link to one (a FIFO or a device under a file's name is not)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def not_regular_why(path) -> str:
    """Why `path` is not a regular file to read (where is_regular_file says it is not)."""
    if not os.path.lexists(path):
        return "missing"
    if os.path.islink(path) and not os.path.exists(path):
        with contextlib.suppress(OSError):
            return f"a link to nothing (it points to {os.readlink(path)[:200]})"
    return "not a regular file (a FIFO, a device or a socket is not read)"


def regular_file_text(path: Path, max_bytes: int) -> str | None:
    """The text of a regular file of at most `max_bytes`, or None. A folder from elsewhere (an output, a run):
    a link is not followed (settings.yaml linked to /etc/passwd would put it in a report that gets shared),
    and a FIFO or a device is not read (/dev/zero has no size and no end; a FIFO's open waits forever)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with open(descriptor, "rb") as f:
        found = os.fstat(f.fileno())
        if not stat.S_ISREG(found.st_mode) or found.st_size > max_bytes:
            return None
        data = f.read(max_bytes + 1)
    return data.decode("utf-8", "replace") if len(data) <= max_bytes else None
