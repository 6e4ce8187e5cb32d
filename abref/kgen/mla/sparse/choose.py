"""config='auto' for the sparse family: the tuned config for this GPU, spec and (batch, top-k)
bucket, else the heuristic default. It only looks things up, never benchmarks, so it is safe
inside CUDA-graph capture."""

from __future__ import annotations

import functools

from kgen import device
from kgen.arch import resolve_arch
from kgen.compiler import nvrtc_version
from kgen.mla.sparse.heuristic import default_sparse_config
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
    return default_sparse_config(spec, batch, arch, device.sm_count(index))
