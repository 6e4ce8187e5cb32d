"""The user-facing sparse calls: plan_sparse (once per batch shape) and sparse_attention (one call:
a cached plan plus its run); sparse_spec_for reads a SparseSpec off example tensors."""

from __future__ import annotations

import torch

from kgen.dtypes import from_torch
from kgen.mla.kv_format import fp8_format_of_width, sixteen_bit_format_of_dim
from kgen.mla.operands import InputError
from kgen.mla.planning import begin_plan, planned_kernel
from kgen.mla.running import current_stream, runners
from kgen.mla.sparse.family import SPARSE
from kgen.mla.sparse.inputs import check_inputs
from kgen.mla.sparse.runner import SparseRunner
from kgen.mla.sparse.spec import SparseConfig, SparseSpec


def sparse_spec_for(q, kv_cache, indices, extra_kv_cache=None, extra_indices=None) -> SparseSpec:
    """The SparseSpec that q [B, T, H, D], kv_cache (an fp8 cache: uint8 [pages, page_size,
    token_bytes], its format told by token_bytes; or [pages, page_size, D] in q's dtype), indices
    [B, T, topk] and, for the V4 op (D = 512), a second cache and its indices describe."""
    for name, t, ndim in (("q", q, 4), ("kv_cache", kv_cache, 3), ("indices", indices, 3)):
        if not isinstance(t, torch.Tensor) or t.dim() != ndim:
            shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise InputError(f"{name}: expected a {ndim}-D torch.Tensor, got {shape}")
    dtype = from_torch(q.dtype)
    if dtype is None or dtype.name not in ("bfloat16", "float16"):
        raise InputError(f"q: expected dtype bfloat16 or float16, got {q.dtype}")
    _, q_len, heads, dim = q.shape
    if kv_cache.dtype == torch.uint8:
        fmt = fp8_format_of_width(kv_cache.shape[2])
        if fmt is None or fmt.head_dim != dim or fmt.tensor_scale:
            raise InputError(
                f"kv_cache: no fp8 format has {kv_cache.shape[2]}-byte tokens of {dim} values "
                "that the sparse kernels read (656: DeepSeek-V3.2 with q 576 wide; 584: V4, 528: "
                "V4.1 with q 512 wide; 576, one scale for the tensor, is the dense family's)"
            )
    else:
        fmt = sixteen_bit_format_of_dim(dim)
        if fmt is None:
            raise InputError(f"q: expected 576 (the V3.2 op) or 512 (V4) values a head, got {dim}")
    extra_topk = extra_page_size = 0
    if extra_kv_cache is not None or extra_indices is not None:
        for name, t in (("extra_kv_cache", extra_kv_cache), ("extra_indices", extra_indices)):
            if not isinstance(t, torch.Tensor) or t.dim() != 3:
                raise InputError(f"{name}: expected a 3-D torch.Tensor beside the other")
        extra_topk, extra_page_size = max(1, extra_indices.shape[2]), extra_kv_cache.shape[1]
    return SparseSpec(
        heads=heads,
        q_len=q_len,
        topk=max(1, indices.shape[2]),
        kv_format=fmt.name,
        page_size=kv_cache.shape[1],
        dtype=dtype.name,
        extra_topk=extra_topk,
        extra_page_size=extra_page_size,
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
    topk_length=None,
    attn_sink=None,
    extra_kv_cache=None,
    extra_indices=None,
    extra_topk_length=None,
):
    """Sparse top-k MLA attention: out [B, T, H, 512] (q's dtype), lse [B, T, H] (float32).

    The V3.2 op: q [B, T, H, 576] bfloat16/float16; kv_cache an fp8 cache (uint8 [pages,
    page_size, 656], kgen.mla.quantize_fp8) or a 16-bit one in q's dtype ([pages, page_size,
    576]); V is the first 512 values of K. The V4 op: q [B, T, H, 512]; kv_cache a DeepSeek-V4
    fp8 cache (584 bytes a token, quantize_fp8(..., format="v4_fp8")), a V4.1 one (528,
    "v41_fp8") or a 16-bit one ([pages, page_size, 512]); K = V, the whole 512-wide vector.

    indices int32 [B, T, topk] of flat slots page * page_size + offset. Each query row attends
    over the slots of its row: -1 skips an entry, a slot listed twice counts twice, a row with no
    entry left gets out = 0 and lse = -inf (FlashMLA returns +inf there). A slot outside [-1,
    pages * page_size) makes its row NaN, or with validate=True raises InputError (a device
    sync). scale defaults to 1/sqrt(576) or 1/sqrt(512). config: a SparseConfig, or 'auto' (the
    tuned config for this GPU and (batch, top-k) bucket, else a heuristic; it never benchmarks).

    The V4 op only: extra_kv_cache (the same format, its own page size) with extra_indices
    [B, T, extra_topk] of its slots: one softmax over both lists. topk_length and
    extra_topk_length (int32 [B] or [B, T]): only the first entries of each row of that list
    count (the rest are never read). attn_sink (float32 [H]): out *= 1 / (1 + exp(sink - lse));
    +inf gives 0, -inf changes nothing. The returned lse is without the sink, as FlashMLA's
    (FlashInfer's SM120 API returns log(exp(lse) + exp(sink))).
    """
    if not isinstance(config, (SparseConfig, str)):
        raise TypeError(f"config: expected a kgen.mla.SparseConfig or 'auto', got {config!r}")
    spec = sparse_spec_for(q, kv_cache, indices, extra_kv_cache, extra_indices)
    v4 = (topk_length, attn_sink, extra_kv_cache, extra_indices, extra_topk_length)
    inputs = (q, kv_cache, indices, *v4)  # the order of kgen.mla.sparse.inputs.operands
    check_inputs(spec, *inputs)  # on CUDA, with the dtypes and layouts of the spec
    index = q.get_device()
    stream = current_stream(index)
    key = ("sparse_attention", spec, q.shape[0], index, config, scale, stream)
    runner = runners.get(key, stream)
    if runner is None:
        runner = runners.add(key, _plan(spec, q.shape[0], config, index, scale), stream)
    return runner.run_on(stream, inputs, out, lse, validate)
