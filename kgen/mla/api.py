"""The user-facing calls: plan (once per batch shape) and attention (one call: a cached plan plus
its run); spec_for reads a Spec off example tensors."""

from __future__ import annotations

import torch

from kgen.dtypes import from_torch
from kgen.mla.dense import DENSE
from kgen.mla.inputs import check_inputs, validate_on_device
from kgen.mla.kv_format import fp8_format_of_width
from kgen.mla.operands import InputError, check_tensor
from kgen.mla.planning import begin_plan, planned_kernel
from kgen.mla.runner import Runner
from kgen.mla.running import current_stream, runners
from kgen.mla.spec import DENSE_KV_FORMATS, Config, Spec


def spec_for(q, kv_cache, mask=None, latent_dim: int = 512) -> Spec:
    """The Spec that tensors q [B, T, H, D] and kv_cache [pages, page_size, D] describe, with
    mask None (T = 1), 'causal' or a tree mask tensor. A uint8 cache is an fp8 one, its format
    told by its token's bytes (kgen.mla.kv_format: 576 "fp8_tensor", 656 "fp8")."""
    if q.dim() != 4 or kv_cache.dim() != 3:
        raise InputError(
            f"q must be [B, T, H, D] and kv_cache [pages, page_size, D]; got "
            f"{tuple(q.shape)} and {tuple(kv_cache.shape)}"
        )
    dtype = from_torch(q.dtype)
    if dtype is None:
        raise InputError(f"q: dtype must be float32, float16 or bfloat16, got {q.dtype}")
    _, q_len, heads, dim = q.shape
    if dim <= latent_dim:
        raise InputError(f"q: last dimension {dim} must be latent_dim={latent_dim} + rope_dim")
    if mask is None:
        if q_len != 1:
            raise InputError(f"mask: q has q_len={q_len} > 1, so pass mask='causal' or a tree mask")
        kind = "none"
    elif isinstance(mask, str):
        if mask != "causal":
            raise InputError(f"mask: the only mask named by a string is 'causal', got {mask!r}")
        kind = "causal"
    else:
        kind = "tree"
    kv_format = "dtype"
    if kv_cache.dtype == torch.uint8:
        fmt = fp8_format_of_width(kv_cache.shape[-1])
        if fmt is None or fmt.name not in DENSE_KV_FORMATS:
            raise InputError(
                f"kv_cache: a uint8 (fp8) cache's tokens are 576 bytes (kv_format='fp8_tensor') "
                f"or 656 (kv_format='fp8'), got {tuple(kv_cache.shape)}"
            )
        kv_format = fmt.name
    return Spec(
        heads=heads,
        q_len=q_len,
        latent_dim=latent_dim,
        rope_dim=dim - latent_dim,
        dtype=dtype.name,
        page_size=kv_cache.shape[1],
        mask=kind,
        kv_format=kv_format,
    )


def plan(
    spec: Spec,
    batch: int,
    max_pages: int,
    *,
    config: Config | str = "auto",
    device=None,
    scale: float | None = None,
) -> Runner:
    """Everything about an MLA call that stays the same across the layers of one step, done once:
    the checks that depend only on shapes, the config, the kernel (built or loaded), the split-KV
    workspace and the packed launch parameters. `runner.run(...)` then runs one layer.

    spec: the op (spec_for(q, kv_cache, mask) reads one off example tensors); batch: sequences;
    max_pages: block_table's width; config: a Config, or 'auto' (tuned for this GPU and shape
    bucket, else a heuristic); device: a CUDA device (default: the current one); scale: the
    softmax scale (default 1/sqrt(latent + rope)). Call it outside CUDA-graph capture (it
    allocates and zeroes the workspace), then capture runs.
    """
    index = begin_plan(DENSE, "plan", spec, device, batch=batch, max_pages=max_pages)
    return _plan(spec, batch, max_pages, config, index, scale)


def _plan(
    spec: Spec, batch: int, max_pages: int, config: Config | str, index: int, scale
) -> Runner:
    kernel = planned_kernel(DENSE, spec, batch, max_pages * spec.page_size, config, index)
    return kernel.runner(batch, max_pages, index, scale)


def attention(
    q,
    kv_cache,
    block_table,
    seq_lens,
    mask=None,
    scale: float | None = None,
    config: Config | str = "auto",
    *,
    latent_dim: int = 512,
    out=None,
    lse=None,
    validate: bool = False,
    k_scale=None,
):
    """MLA attention in one call: out [B, T, H, latent_dim], lse [B, T, H].

    mask: None (T == 1), 'causal', or a tree mask (bool [B, T, T] / [T, T] or packed int64).
    kv_cache: in q's dtype, or an fp8 cache (uint8, kgen.mla.quantize_fp8): 576-byte tokens
    with k_scale, its float32 [1] tensor scale, or DeepSeek-V3.2's 656-byte rows (no k_scale).
    config: a Config, or 'auto' (the tuned config for this GPU and shape bucket, else a
    heuristic; it never benchmarks, so it is safe inside CUDA-graph capture). The plan of each
    call shape is made once and kept; under torch.compile this calls torch.ops.kgen.mla_attention.
    """
    if torch.compiler.is_compiling():
        return _traced_attention(
            q,
            kv_cache,
            block_table,
            seq_lens,
            mask,
            scale,
            config,
            latent_dim,
            out,
            lse,
            validate,
            k_scale,
        )
    if not isinstance(config, (Config, str)):
        raise TypeError(f"config: expected a kgen.mla.Config or 'auto', got {config!r}")
    try:
        index = q.get_device()
        shape, page_size, max_pages = q.shape, kv_cache.shape[1], block_table.shape[1]
        token = kv_cache.shape[-1]  # a uint8 cache's format: 576 or 656 bytes a token
    except (AttributeError, IndexError):
        index = -1
    if index < 0 or validate:
        spec = spec_for(q, kv_cache, mask, latent_dim)
        check_inputs(spec, 1, q, kv_cache, block_table, seq_lens, mask, k_scale=k_scale)
        if validate:
            validate_on_device(spec, kv_cache, block_table, seq_lens, k_scale)
    stream = current_stream(index)
    mask_kind = mask if mask is None or isinstance(mask, str) else "tree"
    key = ("attention", shape, q.dtype, kv_cache.dtype, token, page_size, max_pages, mask_kind)
    key += (index, latent_dim, config, scale, stream)
    runner = runners.get(key, stream)
    if runner is None:
        spec = spec_for(q, kv_cache, mask, latent_dim)
        check_tensor("block_table", block_table, q.device, torch.int32, 2)
        planned = _plan(spec, shape[0], max_pages, config, index, scale)
        runner = runners.add(key, planned, stream)
    return runner.run_on(stream, q, kv_cache, block_table, seq_lens, mask, out, lse, k_scale)


def _traced_attention(
    q,
    kv_cache,
    block_table,
    seq_lens,
    mask,
    scale,
    config,
    latent_dim,
    out,
    lse,
    validate,
    k_scale,
):
    """attention as torch.compile sees it: outputs allocated in the graph, then the custom op."""
    if config != "auto" or validate:
        raise ValueError(
            "kgen.mla.attention under torch.compile takes config='auto' and validate=False "
            "(plan outside the compiled region to fix a config)"
        )
    if out is None:
        out = q.new_empty((*q.shape[:3], latent_dim))
    if lse is None:
        lse = q.new_empty(q.shape[:3], dtype=torch.float32)
    tree = mask if isinstance(mask, torch.Tensor) else None
    causal = isinstance(mask, str) and mask == "causal"
    torch.ops.kgen.mla_attention(
        q, kv_cache, block_table, seq_lens, out, lse, tree, causal, scale, k_scale
    )
    return out, lse
