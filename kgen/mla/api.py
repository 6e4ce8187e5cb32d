"""attention(...): the one-call form: infer the Spec, pick a config, build for this GPU, run."""

from __future__ import annotations

from kgen.mla.kernel import build
from kgen.mla.spec import Config, Spec


def spec_for(q, kv_cache, mask, latent_dim: int = 512) -> Spec:
    """The Spec that tensors q [B, T, H, D] and kv_cache [pages, page_size, D] describe."""
    import torch

    from kgen.mla.inputs import InputError

    if q.dim() != 4 or kv_cache.dim() != 3:
        raise InputError(
            f"q must be [B, T, H, D] and kv_cache [pages, page_size, D]; got "
            f"{tuple(q.shape)} and {tuple(kv_cache.shape)}"
        )
    dtype = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}.get(
        q.dtype
    )
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
    return Spec(
        heads=heads,
        q_len=q_len,
        latent_dim=latent_dim,
        rope_dim=dim - latent_dim,
        dtype=dtype,
        page_size=kv_cache.shape[1],
        mask=kind,
    )


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
):
    """MLA attention in one call: out [B, T, H, latent_dim], lse [B, T, H].

    mask: None (T == 1), 'causal', or a tree mask (bool [B, T, T] / [T, T] or packed int64).
    config: a Config, or 'auto' (the tuned config for this GPU and shape bucket, else a
    heuristic; it never benchmarks, so it is safe inside CUDA-graph capture).
    """
    spec = spec_for(q, kv_cache, mask, latent_dim)
    if isinstance(config, str):
        if config != "auto":
            raise ValueError(f"config: expected a kgen.mla.Config or 'auto', got {config!r}")
        from kgen.tune.choose import choose_config

        max_len = block_table.shape[1] * spec.page_size if block_table.dim() == 2 else 0
        config = choose_config(spec, q.shape[0], max_len, q.device)
    from kgen.arch import resolve_arch

    kernel = build(spec, config, arch=resolve_arch("native", q.device.index))
    return kernel(
        q,
        kv_cache,
        block_table,
        seq_lens,
        mask if spec.mask == "tree" else None,
        scale,
        out=out,
        lse=lse,
        validate=validate,
    )
