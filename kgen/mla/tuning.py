"""The tuning database, read by config="auto" and written by the sweep (kgen.tune): the best
config per (GPU, arch, spec, shape bucket) of either family (dense MLA: a Spec and Config, bucket
of batch and sequence capacity; sparse: a SparseSpec and SparseConfig, bucket of batch and top-k),
stamped with the kgen and NVRTC versions and a hash of
the CUDA source kgen generates for that config (what the templates and layout models make of it),
so a result measured with other kernel code is reported stale and never reused, while an edit
elsewhere (another compute path, say) leaves it valid. Every timed trial of the case is kept
beside the winner: the data the next heuristic is fitted from."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from kgen import __version__, env
from kgen.arch import ARCHS
from kgen.mla.families import FAMILIES, family_of
from kgen.mla.layout import ConfigError

SHIPPED = Path(__file__).resolve().parent.parent / "tuned" / "tuning.json"
UNNAMED_FAMILY = "dense"  # the family of an entry without a "family" key

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def code_stamp(spec, config, arch: str) -> str:
    """A hash of the CUDA source of this variant (kv_splits, a launch parameter, aside; comments
    and layout whitespace too: editing them changes no kernel), or "refused" when the layout model
    no longer accepts it for `arch`."""
    return _source_stamp(spec, dataclasses.replace(config, kv_splits=1), arch)


@functools.lru_cache(maxsize=4096)
def _source_stamp(spec, config, arch: str) -> str:
    try:
        program = family_of(spec).render(spec, config, ARCHS[arch])
    except (ConfigError, KeyError):
        return "refused"
    code = " ".join(_COMMENT.sub(" ", program.source).split())
    return hashlib.sha256(code.encode()).hexdigest()[:16]


def _entry_family(entry: dict):
    return FAMILIES[entry.get("family", UNNAMED_FAMILY)]


def entry_stamp(entry: dict) -> str:
    """The stamp today's code gives the entry's variant."""
    family = _entry_family(entry)
    spec = family.spec_type.from_dict(entry["spec"])
    config = family.config_type.from_dict(entry["config"])
    return code_stamp(spec, config, entry["arch"])


def entry_key(gpu: str, arch: str, spec, shape_bucket: str) -> str:
    """A spec is keyed without the fields its family's bucket carries (sparse: topk)."""
    launch_only = {name: 1 for name in family_of(spec).bucket_fields}
    ident = dataclasses.replace(spec, **launch_only)
    return f"{gpu}|{arch}|{spec.short_name()}|{ident.key()[:16]}|{shape_bucket}"


@dataclass(frozen=True)
class Lookup:
    config: object  # the family's config, or None
    entry: dict | None
    stale: bool  # an entry exists but from another kgen or NVRTC version, or other kernel code


def staleness(entry: dict, nvrtc: str | None = None) -> str | None:
    """Why an entry may not be used, or None."""
    if entry.get("kgen") != __version__:
        return f"kgen {entry.get('kgen')} (now {__version__})"
    if nvrtc is not None and entry.get("nvrtc") != nvrtc:
        return f"NVRTC {entry.get('nvrtc')} (now {nvrtc})"
    now = entry_stamp(entry)
    if entry.get("code") != now:
        return f"kernel code {entry.get('code')} (now {now})"
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

    def lookup(self, gpu: str, arch: str, spec, shape_bucket: str, nvrtc: str) -> Lookup:
        entry = self.entries().get(entry_key(gpu, arch, spec, shape_bucket))
        if entry is None:
            return Lookup(None, None, False)
        if staleness(entry, nvrtc):
            return Lookup(None, entry, True)
        return Lookup(_entry_family(entry).config_type.from_dict(entry["config"]), entry, False)

    def record(
        self,
        gpu: str,
        arch: str,
        spec,
        shape_bucket: str,
        nvrtc: str,
        config,
        figures: dict,
        trials: list | None = None,
    ) -> None:
        """Store the winner; `trials` are every timed (config, splits, median) of the case."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            entries = self.entries()
            entries[entry_key(gpu, arch, spec, shape_bucket)] = {
                **({"family": name} if (name := family_of(spec).name) != UNNAMED_FAMILY else {}),
                "gpu": gpu,
                "arch": arch,
                "spec": spec.to_dict(),
                "bucket": shape_bucket,
                "kgen": __version__,
                "nvrtc": nvrtc,
                "code": code_stamp(spec, config, arch),
                "config": config.to_dict(),
                **figures,
                **({"trials": trials} if trials is not None else {}),
            }
            text = json.dumps({"entries": dict(sorted(entries.items()))}, indent=1)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, self.path)


def find_tuned(gpu: str, arch: str, spec, shape_bucket: str, nvrtc: str) -> Lookup:
    """The user's database first, then the configs shipped with kgen."""
    stale = None
    for db in (TuningDB.user(), TuningDB(SHIPPED)):
        found = db.lookup(gpu, arch, spec, shape_bucket, nvrtc)
        if found.config is not None:
            return found
        stale = stale or (found if found.stale else None)
    return stale or Lookup(None, None, False)
