"""The content-addressed disk cache of compiled kernels.

Each entry is three files named `<readable stem>_<hash12>`: the .cubin, the .cu it came from and
a .json of metadata whose checksum guards the cubin. Writes go to a temp file and are renamed into
place (the .json last, as the commit mark), so no reader ever sees a torn entry; a lock per entry
makes concurrent builders compile once. A missing, truncated or corrupt entry is a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

SUFFIXES = (".json", ".cubin", ".cu")


class CacheWarning(UserWarning):
    """The disk cache could not be used as asked; kgen carried on without it."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Entry:
    stem: str
    meta: dict
    cubin: bytes


@dataclass(frozen=True)
class EntryStatus:
    stem: str
    size: int  # bytes on disk, all three files
    ok: bool
    problem: str  # "" when ok


class DiskCache:
    def __init__(self, root: Path):
        self.root = Path(root)

    def _path(self, stem: str, suffix: str) -> Path:
        return self.root / f"{stem}{suffix}"

    def lock(self, stem: str) -> FileLock:
        """The inter-process lock that guards building entry `stem` (not yet acquired)."""
        self.root.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self._path(stem, ".lock")))

    def load(self, stem: str, key: str) -> Entry | None:
        """The entry for `key`, or None. A damaged entry is reported with a warning, not raised."""
        meta_path = self._path(stem, ".json")
        if not meta_path.exists():
            return None
        problem = self._problem(stem, key)
        if problem:
            warnings.warn(
                f"kgen cache entry {stem} is damaged ({problem}); rebuilding it",
                CacheWarning,
                stacklevel=3,
            )
            return None
        meta = json.loads(meta_path.read_text())
        return Entry(stem=stem, meta=meta, cubin=self._path(stem, ".cubin").read_bytes())

    def _problem(self, stem: str, key: str | None = None) -> str:
        try:
            meta = json.loads(self._path(stem, ".json").read_text())
            cubin = self._path(stem, ".cubin").read_bytes()
        except FileNotFoundError as exc:
            return f"missing {Path(exc.filename).name}"
        except (OSError, ValueError) as exc:
            return f"unreadable: {exc}"
        if not isinstance(meta, dict) or "checksum" not in meta or "key" not in meta:
            return "metadata without checksum or key"
        if key is not None and meta["key"] != key:
            return "key mismatch"
        if sha256(cubin) != meta["checksum"]:
            return f"checksum mismatch ({len(cubin)} bytes, expected {meta.get('cubin_bytes')})"
        return ""

    def store(self, stem: str, cubin: bytes, source: str, meta: dict) -> None:
        """Write an entry atomically; `meta` gains the cubin's checksum."""
        self.root.mkdir(parents=True, exist_ok=True)
        meta = {**meta, "checksum": sha256(cubin), "cubin_bytes": len(cubin)}
        self._write(self._path(stem, ".cubin"), cubin)
        self._write(self._path(stem, ".cu"), source.encode())
        self._write(self._path(stem, ".json"), json.dumps(meta, indent=1, sort_keys=True).encode())

    def _write(self, path: Path, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def stems(self) -> list[str]:
        if not self.root.is_dir():
            return []
        names = {p.name.rsplit(".", 1)[0] for p in self.root.iterdir() if p.suffix in SUFFIXES}
        return sorted(n for n in names if not n.startswith("."))

    def status(self) -> list[EntryStatus]:
        """Every entry with its size on disk and whether its checksum holds."""
        result = []
        for stem in self.stems():
            size = sum(
                self._path(stem, s).stat().st_size for s in SUFFIXES if self._path(stem, s).exists()
            )
            problem = self._problem(stem)
            result.append(EntryStatus(stem, size, not problem, problem))
        return result

    def clear(self) -> int:
        """Remove every entry (and lock and stray temp file); return how many entries there were."""
        count = len(self.stems())
        if self.root.is_dir():
            for path in self.root.iterdir():
                if path.suffix in (*SUFFIXES, ".lock", ".tmp"):
                    path.unlink(missing_ok=True)
        return count
