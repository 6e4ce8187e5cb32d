"""config='auto', the one way a config is chosen for any family: the tuned config for this GPU,
spec and shape bucket (kgen.mla.tuning), else the family's heuristic default. It only looks
things up and compiles (or finds in the cache) the kernel the call runs anyway, never benchmarks,
so it is safe inside CUDA-graph capture. The defaults are public: what would run on a card kgen
has no tuning for, seen without a GPU."""

from __future__ import annotations

import functools

from kgen import device
from kgen.arch import Arch, resolve_arch, usual_sm_count
from kgen.compiler import nvrtc_version
from kgen.mla.dense import DENSE
from kgen.mla.family import Family
from kgen.mla.sparse.family import SPARSE
from kgen.mla.sparse.spec import SparseConfig, SparseSpec
from kgen.mla.spec import Config, Spec
from kgen.mla.tuning import find_tuned


@functools.lru_cache(maxsize=4096)
def choose(family: Family, spec, batch: int, max_len: int, index: int):
    """The config of `family` for `batch` sequences of `spec` (of up to `max_len` positions, where
    the family's bucket reads that) on GPU `index`."""
    arch = resolve_arch("native", index)
    shape_bucket = family.bucket(spec, batch, max_len)
    found = find_tuned(device.name(index), arch.name, spec, shape_bucket, nvrtc_version())
    if found.config is not None:
        return found.config
    return family.default(spec, batch, max_len, arch, device.sm_count(index))


def default_for(
    family: Family, spec, arch: str | Arch, batch: int, max_len: int, sm_count: int | None
):
    """The config `config="auto"` runs for `spec` on `arch` where no tuned entry exists; no GPU
    needed. `sm_count` defaults to the arch's usual card (kgen.arch.USUAL_SM_COUNT)."""
    arch = resolve_arch(arch)
    family.check_spec(spec)
    for name, value, low in (("batch", batch, 1), ("max_seq_len", max_len, spec.q_len)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    sms = usual_sm_count(arch) if sm_count is None else sm_count
    return family.default(spec, batch, max_len, arch, sms)


def choose_config(spec: Spec, batch: int, max_seq_len: int, index: int) -> Config:
    """The dense config for `batch` sequences of up to `max_seq_len` positions on GPU `index`."""
    return choose(DENSE, spec, batch, max_seq_len, index)


def choose_sparse_config(spec: SparseSpec, batch: int, index: int) -> SparseConfig:
    """The sparse config for `batch` sequences of `spec` on GPU `index`."""
    return choose(SPARSE, spec, batch, spec.q_len, index)


def default_config(
    spec: Spec,
    arch: str | Arch = "sm_120",
    batch: int = 1,
    max_seq_len: int = 16384,
    sm_count: int | None = None,
) -> Config:
    """The config `config="auto"` runs for a dense `spec` on `arch` where no tuned entry exists
    (every card kgen has no tuning database for): no GPU needed, so a user sees what would run on
    their card. `sm_count` defaults to the arch's usual card (kgen.arch.USUAL_SM_COUNT); the KV
    splits fill one wave of its blocks."""
    return default_for(DENSE, spec, arch, batch, max_seq_len, sm_count)


def default_sparse_config(
    spec: SparseSpec, arch: str | Arch = "sm_120", batch: int = 1, sm_count: int | None = None
) -> SparseConfig:
    """The config `config="auto"` runs for a sparse `spec` on `arch` where no tuned entry
    exists; no GPU needed. `sm_count` defaults to the arch's usual card."""
    return default_for(SPARSE, spec, arch, batch, getattr(spec, "q_len", 1), sm_count)
