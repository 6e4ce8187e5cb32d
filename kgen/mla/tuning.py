"""The tuning database, read by config="auto" and written by the sweep (kgen.tune): the best
config per (GPU, arch, spec, shape bucket), stamped with the kgen and NVRTC versions and a hash
of the kernel code (templates and layout models) it was measured with, so results for other code
are reported stale and never reused. Every timed trial of the case is kept beside the winner:
the data the next heuristic is fitted from."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from kgen import __version__, env
from kgen.mla.spec import Config, Spec

_HERE = Path(__file__).resolve().parent
SHIPPED = _HERE.parent / "tuned" / "tuning.json"
LAYOUT_MODELS = ("layout.py", "mma_layout.py", "program.py")  # kgen/mla: what shapes the code


@functools.cache
def code_stamp() -> str:
    """A hash of everything that shapes the generated kernels: every template file and the
    layout models that bind their values."""
    from kgen.render import template_dir

    digest = hashlib.sha256()
    root = template_dir()
    files = sorted(p for p in root.rglob("*") if p.suffix in (".cuh", ".jinja"))
    for path in [*files, *(_HERE / name for name in LAYOUT_MODELS)]:
        name = path.relative_to(root) if path.is_relative_to(root) else path.name
        digest.update(f"{name}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


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
    stale: bool  # an entry exists but from another kgen or NVRTC version, or other kernel code


def staleness(entry: dict, nvrtc: str | None = None) -> str | None:
    """Why an entry may not be used, or None."""
    if entry.get("kgen") != __version__:
        return f"kgen {entry.get('kgen')} (now {__version__})"
    if nvrtc is not None and entry.get("nvrtc") != nvrtc:
        return f"NVRTC {entry.get('nvrtc')} (now {nvrtc})"
    if entry.get("code") != code_stamp():
        return f"kernel code {entry.get('code')} (now {code_stamp()})"
    return None


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
        if staleness(entry, nvrtc):
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
        trials: list | None = None,
    ) -> None:
        """Store the winner; `trials` are every timed (config, splits, median) of the case."""
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
                "code": code_stamp(),
                "config": config.to_dict(),
                **figures,
                **({"trials": trials} if trials is not None else {}),
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
