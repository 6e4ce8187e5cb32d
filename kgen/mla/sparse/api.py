"""The user-facing sparse calls: plan_sparse (once per batch shape) and sparse_attention (one call:
a cached plan plus its run); sparse_spec_for reads a SparseSpec off example tensors."""

from __future__ import annotations

import torch

from kgen.dtypes import from_torch
from kgen.mla.operands import InputError
from kgen.mla.planning import begin_plan, planned_kernel
from kgen.mla.running import current_stream, runners
from kgen.mla.sparse.family import SPARSE
from kgen.mla.sparse.inputs import check_inputs, validate_indices
from kgen.mla.sparse.runner import SparseRunner
from kgen.mla.sparse.spec import SparseConfig, SparseSpec


def sparse_spec_for(q, kv_cache, indices) -> SparseSpec:
    """The SparseSpec that q [B, T, H, 576], kv_cache (uint8 [pages, page_size, 656] for fp8, or
    [pages, page_size, 576] in q's dtype) and indices [B, T, topk] describe."""
    for name, t, ndim in (("q", q, 4), ("kv_cache", kv_cache, 3), ("indices", indices, 3)):
        if not isinstance(t, torch.Tensor) or t.dim() != ndim:
            shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise InputError(f"{name}: expected a {ndim}-D torch.Tensor, got {shape}")
    dtype = from_torch(q.dtype)
    if dtype is None or dtype.name not in ("bfloat16", "float16"):
        raise InputError(f"q: expected dtype bfloat16 or float16, got {q.dtype}")
    _, q_len, heads, _ = q.shape
    kv_format = "fp8" if kv_cache.dtype == torch.uint8 else "bf16"
    return SparseSpec(
        heads=heads,
        q_len=q_len,
        topk=max(1, indices.shape[2]),
        kv_format=kv_format,
        page_size=kv_cache.shape[1],
        dtype=dtype.name,
    )


def plan_sparse(
    spec: SparseSpec,
    batch: int,
    *,
    config: SparseConfig | str = "auto",
    device=None,
    scale: float | None = None,
) -> SparseRunner:
    """Everything about a sparse call that stays the same across the layers of one step, done
    once: the config, the kernel (built or loaded), the split workspace and the packed launch.
    `runner.run(q, kv_cache, indices)` then runs one layer. Plan outside CUDA-graph capture."""
    index = begin_plan(SPARSE, "plan_sparse", spec, device, batch=batch)
    return _plan(spec, batch, config, index, scale)


def _plan(spec: SparseSpec, batch: int, config, index: int, scale) -> SparseRunner:
    kernel = planned_kernel(SPARSE, spec, batch, spec.q_len, config, index)
    return kernel.runner(batch, index, scale)


def sparse_attention(
    q,
    kv_cache,
    indices,
    scale: float | None = None,
    config: SparseConfig | str = "auto",
    *,
    out=None,
    lse=None,
    validate: bool = False,
):
    """Sparse top-k MLA attention: out [B, T, H, 512] (q's dtype), lse [B, T, H] (float32).

    q [B, T, H, 576] bfloat16/float16; kv_cache an fp8 cache (uint8 [pages, page_size, 656],
    kgen.mla.quantize_fp8) or a 16-bit one in q's dtype ([pages, page_size, 576]); indices int32
    [B, T, topk] of flat slots page * page_size + offset. Each query row attends over the slots
    of its row: -1 skips an entry, a slot listed twice counts twice, a row with no entry left
    gets out = 0 and lse = -inf. A slot outside [-1, pages * page_size) makes its row NaN, or
    with validate=True raises InputError (a device sync). scale defaults to 1/sqrt(576).
    config: a SparseConfig, or 'auto' (the tuned config for this GPU and (batch, top-k) bucket,
    else a heuristic; it never benchmarks).
    """
    if not isinstance(config, (SparseConfig, str)):
        raise TypeError(f"config: expected a kgen.mla.SparseConfig or 'auto', got {config!r}")
    spec = sparse_spec_for(q, kv_cache, indices)
    check_inputs(spec, q, kv_cache, indices)  # on CUDA, with the dtypes and layouts of the spec
    if validate:
        validate_indices(kv_cache, indices)
    index = q.get_device()
    stream = current_stream(index)
    key = ("sparse_attention", spec, q.shape[0], index, config, scale, stream)
    runner = runners.get(key, stream)
    if runner is None:
        runner = runners.add(key, _plan(spec, q.shape[0], config, index, scale), stream)
    return runner.run_on(stream, q, kv_cache, indices, out, lse)
