"""The float64 NumPy reference of MLA decode / draft-tree verify attention, and the checker.

Written for clarity, not speed: each sequence's pages are gathered explicitly, each query row's
visible positions are listed, and softmax is taken over exactly those.
"""

from __future__ import annotations

import numpy as np

from kgen.mla.check import LSE_TOLERANCE, TOLERANCE, check_attention, relative_errors  # noqa: F401


def check_agreement(a, b, dtype: str) -> None:
    """Two kernels' (out, lse), as NumPy arrays, agree: out within twice dtype's tolerance of
    each other (each may sit one tolerance off the reference), lse within 2e-2."""
    assert relative_errors(a[0], b[0]).max() <= 2 * TOLERANCE[dtype]
    np.testing.assert_allclose(a[1], b[1], atol=2e-2, rtol=0)


def visible_drafts(mask, b: int, t: int, q_len: int) -> list[int]:
    """Draft indices j that draft t of sequence b sees."""
    if mask is None:
        return [0]
    if isinstance(mask, str):
        assert mask == "causal"
        return list(range(t + 1))
    rows = mask if mask.ndim == 2 else mask[b]
    return [j for j in range(q_len) if rows[t, j]]


def mla_reference(q, kv_cache, block_table, seq_lens, mask, scale: float, latent_dim: int = 512):
    """out [B, T, H, latent_dim] and lse [B, T, H] in float64.

    q [B, T, H, D], kv_cache [pages, page_size, D] (any float dtype, taken as float64),
    block_table [B, max_pages], seq_lens [B], mask None | 'causal' | bool [B or -, T, T].
    A row that sees no position (or only -inf logits) gets out = 0, lse = -inf.
    """
    q = np.asarray(q, dtype=np.float64)
    kv_cache = np.asarray(kv_cache, dtype=np.float64)
    batch, q_len, heads, _ = q.shape
    page_size = kv_cache.shape[1]
    out = np.zeros((batch, q_len, heads, latent_dim))
    lse = np.full((batch, q_len, heads), -np.inf)
    for b in range(batch):
        length = int(seq_lens[b])
        prefix = length - q_len
        pages = [int(p) for p in block_table[b, : -(-length // page_size)]]
        keys = np.concatenate([kv_cache[p] for p in pages])[:length]  # gathered, in order
        for t in range(q_len):
            positions = list(range(prefix)) + [
                prefix + j for j in visible_drafts(mask, b, t, q_len)
            ]
            if not positions:
                continue
            k = keys[positions]  # [n, D]
            logits = scale * (q[b, t] @ k.T)  # [H, n]
            with np.errstate(invalid="ignore", over="ignore"):
                m = logits.max(axis=1, keepdims=True)  # NaN if any logit is NaN
                seen = m[:, 0] != -np.inf  # all logits -inf: as good as no position
                m = np.where(m == -np.inf, 0.0, m)
                p = np.exp(logits - m)
                total = p.sum(axis=1)
                out[b, t] = np.where(seen[:, None], (p @ k[:, :latent_dim]) / total[:, None], 0.0)
                lse[b, t] = np.where(seen, m[:, 0] + np.log(total), -np.inf)
    return out, lse
