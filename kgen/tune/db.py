"""The tuning database: the best config per (GPU, arch, spec, shape bucket), with the kgen and
NVRTC versions that produced it so stale results are never reused."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from kgen import __version__, env
from kgen.mla import Config, Spec

SHIPPED = Path(__file__).resolve().parent.parent / "tuned" / "tuning.json"


def bucket(batch: int, max_len: int) -> str:
    """Shape bucket: batch and sequence capacity, each rounded up to a power of two."""

    def up(x: int) -> int:
        return 1 << max(0, (max(1, x) - 1).bit_length())

    return f"b{up(batch)}_l{up(max_len)}"


def entry_key(gpu: str, arch: str, spec: Spec, shape_bucket: str) -> str:
    return f"{gpu}|{arch}|{spec.short_name()}|{spec.key()[:16]}|{shape_bucket}"


@dataclass(frozen=True)
class Lookup:
    config: Config | None
    entry: dict | None
    stale: bool  # an entry exists but from another kgen or NVRTC version


class TuningDB:
    """A JSON file of entries; writes are atomic and serialised by a file lock."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @classmethod
    def user(cls) -> TuningDB:
        return cls(os.environ.get("KGEN_TUNING_DB") or env.cache_dir() / "tuning.json")

    def entries(self) -> dict[str, dict]:
        try:
            return json.loads(self.path.read_text()).get("entries", {})
        except (FileNotFoundError, ValueError):
            return {}

    def lookup(self, gpu: str, arch: str, spec: Spec, shape_bucket: str, nvrtc: str) -> Lookup:
        entry = self.entries().get(entry_key(gpu, arch, spec, shape_bucket))
        if entry is None:
            return Lookup(None, None, False)
        if entry.get("kgen") != __version__ or entry.get("nvrtc") != nvrtc:
            return Lookup(None, entry, True)
        return Lookup(Config.from_dict(entry["config"]), entry, False)

    def record(
        self,
        gpu: str,
        arch: str,
        spec: Spec,
        shape_bucket: str,
        nvrtc: str,
        config: Config,
        figures: dict,
    ) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            entries = self.entries()
            entries[entry_key(gpu, arch, spec, shape_bucket)] = {
                "gpu": gpu,
                "arch": arch,
                "spec": spec.to_dict(),
                "bucket": shape_bucket,
                "kgen": __version__,
                "nvrtc": nvrtc,
                "config": config.to_dict(),
                **figures,
            }
            text = json.dumps({"entries": dict(sorted(entries.items()))}, indent=1)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, self.path)


def find_tuned(gpu: str, arch: str, spec: Spec, shape_bucket: str, nvrtc: str) -> Lookup:
    """The user's database first, then the configs shipped with kgen."""
    stale = None
    for db in (TuningDB.user(), TuningDB(SHIPPED)):
        found = db.lookup(gpu, arch, spec, shape_bucket, nvrtc)
        if found.config is not None:
            return found
        stale = stale or (found if found.stale else None)
    return stale or Lookup(None, None, False)
