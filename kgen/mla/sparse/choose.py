"""config='auto' for the sparse family: the tuned config for this GPU, spec and (batch, top-k)
bucket, else the heuristic default. It only looks things up, never benchmarks, so it is safe
inside CUDA-graph capture."""

from __future__ import annotations

import functools

from kgen import device
from kgen.arch import Arch, resolve_arch, usual_sm_count
from kgen.compiler import nvrtc_version
from kgen.mla.sparse import heuristic
from kgen.mla.sparse.spec import SparseConfig, SparseSpec
from kgen.mla.tuning import find_tuned, sparse_bucket


@functools.lru_cache(maxsize=4096)
def choose_sparse_config(spec: SparseSpec, batch: int, index: int) -> SparseConfig:
    """The config for `batch` sequences of `spec` on GPU `index`."""
    arch = resolve_arch("native", index)
    found = find_tuned(
        device.name(index), arch.name, spec, sparse_bucket(batch, spec.topk), nvrtc_version()
    )
    if found.config is not None:
        return found.config
    return heuristic.default_sparse_config(spec, batch, arch, device.sm_count(index))


def default_sparse_config(
    spec: SparseSpec, arch: str | Arch = "sm_120", batch: int = 1, sm_count: int | None = None
) -> SparseConfig:
    """The config `config="auto"` runs for `spec` on `arch` where no tuned entry exists; no GPU
    needed. `sm_count` defaults to the arch's usual card (kgen.arch.USUAL_SM_COUNT)."""
    arch = resolve_arch(arch)
    if not isinstance(spec, SparseSpec):
        raise TypeError(f"spec: expected kgen.mla.SparseSpec, got {type(spec).__name__}")
    if not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be an integer >= 1, got {batch!r}")
    sms = usual_sm_count(arch) if sm_count is None else sm_count
    return heuristic.default_sparse_config(spec, batch, arch, sms)
