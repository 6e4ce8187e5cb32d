"""The content-addressed disk cache of compiled kernels.

The cache owns one folder, `<cache dir>/kernels/`, and in it only the files it names: each entry is
three files `<readable stem>_<hash12>` (.cubin, the .cu it came from, and a .json of metadata whose
checksum guards the cubin), a `.lock` per entry, and `.<name>.*.tmp` files while it writes. Nothing
else in the cache dir (the tuning database, a user's notes) is ever listed, checked or removed.

Writes go to a temp file and are renamed into place (the .json last, as the commit mark), so no
reader sees a torn entry; a lock per entry makes concurrent builders compile once. Any entry that
cannot be used (missing, truncated, corrupt, metadata that does not parse, a key that does not match
its name) is a miss: warned about once per process, rebuilt and rewritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

SUFFIXES = (".json", ".cubin", ".cu")
ENTRY_FOLDER = "kernels"
STEM = re.compile(r"[A-Za-z0-9_]+_[0-9a-f]{12}")
STRAY_TMP_AGE_S = 600  # a temp file older than this was left by a crash (a write takes seconds)


class CacheWarning(UserWarning):
    """The disk cache could not be used as asked; kgen carried on without it."""


class CacheDirError(OSError):
    """The cache directory cannot be used (not a directory, unreadable, cannot be created)."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()  # what open() would give: a cache shared by a group stays readable

# Extra checks of an entry's metadata (kgen.build's parser): returns "" or what is wrong.
Check = Callable[[dict, bytes], str]

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


@dataclass(frozen=True)
class Entry:
    stem: str
    meta: dict
    cubin: bytes


@dataclass(frozen=True)
class EntryStatus:
    stem: str
    size: int  # bytes on disk, all its files
    state: (
        str  # "ok" | "damaged" (build would reject it) | "incomplete" (being written, or crashed)
    )
    problem: str  # "" when ok

    @property
    def ok(self) -> bool:
        return self.state != "damaged"


class DiskCache:
    def __init__(self, root: Path, check: Check | None = None):
        self.root = Path(root)
        self.folder = self.root / ENTRY_FOLDER
        self.check = check

    def _path(self, stem: str, suffix: str) -> Path:
        return self.folder / f"{stem}{suffix}"

    def ensure(self) -> None:
        """Create the entry folder, or raise CacheDirError saying why it cannot be used."""
        if self.root.exists() and not self.root.is_dir():
            raise CacheDirError(f"kgen cache dir {self.root} is not a directory")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheDirError(f"kgen cache dir {self.root} cannot be created: {exc}") from exc

    def check_creatable(self) -> None:
        """Raise CacheDirError unless the entry folder exists or can be created; nothing is left
        behind (the first missing folder is made, then removed)."""
        if self.root.exists() and not self.root.is_dir():
            raise CacheDirError(f"kgen cache dir {self.root} is not a directory")
        missing = self.folder
        while not missing.parent.exists() and missing.parent != missing:
            missing = missing.parent
        if missing.exists():
            return
        if not missing.parent.is_dir():
            raise CacheDirError(
                f"kgen cache dir {self.root} cannot be created: {missing.parent} is not a directory"
            )
        try:
            missing.mkdir()
        except FileExistsError:
            return
        except OSError as exc:
            raise CacheDirError(
                f"kgen cache dir {self.root} cannot be created (mkdir {missing}: {exc.strerror})"
            ) from exc
        missing.rmdir()

    def lock(self, stem: str) -> FileLock:
        """The inter-process lock that guards building entry `stem` (not yet acquired)."""
        self.ensure()
        return FileLock(str(self._path(stem, ".lock")))

    def load(self, stem: str, key: str) -> Entry | None:
        """The entry for `key`, or None. A damaged entry is warned about (once), not raised."""
        if not self._path(stem, ".json").exists():
            return None
        entry, problem = self._read(stem, key)
        if problem:
            self._warn_once(stem, problem)
            return None
        return entry

    def _read(self, stem: str, key: str | None = None) -> tuple[Entry | None, str]:
        """The entry read once (its cubin is the bytes checksummed), or what is wrong with it."""
        try:
            meta = json.loads(self._path(stem, ".json").read_bytes())
            cubin = self._path(stem, ".cubin").read_bytes()
        except FileNotFoundError as exc:
            return None, f"missing {Path(exc.filename).name}"
        except (OSError, ValueError) as exc:
            return None, f"unreadable: {exc}"
        if not isinstance(meta, dict) or "checksum" not in meta or "key" not in meta:
            return None, "metadata without checksum or key"
        if not isinstance(meta["key"], str) or not stem.endswith("_" + meta["key"][:12]):
            return None, "key does not match the entry's name"
        if key is not None and meta["key"] != key:
            return None, "key mismatch"
        if sha256(cubin) != meta["checksum"]:
            return (
                None,
                f"checksum mismatch ({len(cubin)} bytes, expected {meta.get('cubin_bytes')})",
            )
        if self.check is not None and (problem := self.check(meta, cubin)):
            return None, problem
        return Entry(stem, meta, cubin), ""

    def _warn_once(self, stem: str, problem: str) -> None:
        with _warned_lock:
            if (str(self.folder), stem) in _warned:
                return
            _warned.add((str(self.folder), stem))
        warnings.warn(
            f"kgen cache entry {stem} is damaged ({problem}); rebuilding it",
            CacheWarning,
            stacklevel=4,
        )

    def store(self, stem: str, cubin: bytes, source: str, meta: dict) -> None:
        """Write an entry atomically; `meta` gains the cubin's checksum."""
        self.ensure()
        meta = {**meta, "checksum": sha256(cubin), "cubin_bytes": len(cubin)}
        self._write(self._path(stem, ".cubin"), cubin)
        self._write(self._path(stem, ".cu"), source.encode())
        self._write(self._path(stem, ".json"), json.dumps(meta, indent=1, sort_keys=True).encode())

    def _write(self, path: Path, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, FILE_MODE)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _files(self) -> list[Path]:
        """The regular files in the entry folder; [] when there is none. CacheDirError when the
        cache dir is not a directory or cannot be read."""
        if self.root.exists() and not self.root.is_dir():
            raise CacheDirError(f"kgen cache dir {self.root} is not a directory")
        if not self.folder.exists():
            ancestor = self.root
            while not ancestor.exists() and ancestor != ancestor.parent:
                ancestor = ancestor.parent
            if not ancestor.is_dir():
                raise CacheDirError(
                    f"kgen cache dir {self.root} cannot be created: {ancestor} is not a directory"
                )
            return []
        try:
            paths = list(self.folder.iterdir())
        except OSError as exc:
            raise CacheDirError(f"kgen cache dir {self.root} cannot be read: {exc}") from exc
        return [p for p in paths if _is_file(p)]

    def stems(self) -> list[str]:
        """Every entry the cache wrote (complete or not)."""
        names = {p.name[: -len(p.suffix)] for p in self._files() if p.suffix in SUFFIXES}
        return sorted(n for n in names if STEM.fullmatch(n))

    def stray_temps(self) -> list[Path]:
        """Temp files old enough to have been left by a crashed writer."""
        now = time.time()
        return [p for p in self._files() if _is_temp(p) and now - _mtime(p, now) > STRAY_TMP_AGE_S]

    def status(self) -> list[EntryStatus]:
        """Every entry with its size on disk and whether build could use it. An entry without its
        .json (the commit mark) is incomplete: still being written, or left by a crash."""
        result = []
        for stem in self.stems():
            size = sum(_size(self._path(stem, s)) for s in SUFFIXES)
            if not self._path(stem, ".json").exists():
                result.append(EntryStatus(stem, size, "incomplete", "no metadata yet"))
                continue
            _, problem = self._read(stem)
            if problem.startswith("missing "):  # vanished under a concurrent clear
                continue
            result.append(EntryStatus(stem, size, "damaged" if problem else "ok", problem))
        return result

    def clear(self) -> int:
        """Remove every entry and stray temp file; return how many entries there were. Lock files
        stay: removing one a builder holds would let a second process take "the" lock."""
        stems = self.stems()
        for stem in stems:
            for suffix in SUFFIXES:
                with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                    self._path(stem, suffix).unlink()
        for path in self.stray_temps():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        return len(stems)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def _is_temp(path: Path) -> bool:
    return path.name.startswith(".") and path.suffix == ".tmp"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path, default: float) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return default
