"""torch.ops.kgen.mla_attention: the MLA call as a torch custom op, so torch.compile traces it
(fullgraph, no graph break) and mode="reduce-overhead" captures it in CUDA graphs.

The op writes its results into `out` and `lse`, which its schema declares mutated
(Tensor(a!)), and returns nothing: no output aliases an input. Its fake implementation checks
the shapes and leaves the outputs as they are. kgen.mla.attention calls it under torch.compile.
"""

from __future__ import annotations

import torch

from kgen.mla.api import attention
from kgen.mla.inputs import InputError


@torch.library.custom_op("kgen::mla_attention", mutates_args=("out", "lse"), device_types="cuda")
def mla_attention(
    q: torch.Tensor,
    kv_cache: torch.Tensor,
    block_table: torch.Tensor,
    seq_lens: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    mask: torch.Tensor | None = None,
    causal: bool = False,
    scale: float | None = None,
    k_scale: torch.Tensor | None = None,
) -> None:
    """MLA attention into out [B, T, H, latent_dim] (q's dtype) and lse [B, T, H] (float32).

    mask: a tree mask (bool [B, T, T] / [T, T] or packed int64 [B, T] / [T]), else None with
    causal=True for a causal chain or causal=False for plain decode (T = 1); the config is
    'auto'. k_scale: the float32 [1] scale of an fp8 cache of 576-byte tokens (uint8, kv_format
    'fp8_tensor'). See kgen.mla.attention.
    """
    attention(
        q,
        kv_cache,
        block_table,
        seq_lens,
        _mask(mask, causal),
        scale,
        latent_dim=out.shape[-1],
        out=out,
        lse=lse,
        k_scale=k_scale,
    )


@mla_attention.register_fake
def _(
    q, kv_cache, block_table, seq_lens, out, lse, mask=None, causal=False, scale=None, k_scale=None
) -> None:
    _mask(mask, causal)
    if q.dim() != 4 or kv_cache.dim() != 3:
        raise InputError(
            f"q must be [B, T, H, D] and kv_cache [pages, page_size, D]; got "
            f"{tuple(q.shape)} and {tuple(kv_cache.shape)}"
        )
    rows = tuple(q.shape[:3])
    if out.dim() != 4 or tuple(out.shape[:3]) != rows or out.dtype != q.dtype:
        raise InputError(
            f"out: expected {q.dtype} [B, T, H, latent_dim] with [B, T, H] = {rows}, got "
            f"{out.dtype} {tuple(out.shape)}"
        )
    if tuple(lse.shape) != rows or lse.dtype != torch.float32:
        raise InputError(f"lse: expected float32 {rows}, got {lse.dtype} {tuple(lse.shape)}")


def _mask(mask, causal: bool):
    if mask is not None and causal:
        raise InputError("mask: give a tree mask or causal=True, not both")
    return "causal" if causal else mask
