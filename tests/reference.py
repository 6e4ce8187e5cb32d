"""The float64 NumPy reference of MLA decode / draft-tree verify attention, and the checker.

Written for clarity, not speed: each sequence's pages are gathered explicitly, each query row's
visible positions are listed, and softmax is taken over exactly those.
"""

from __future__ import annotations

import numpy as np

TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}  # ||out - ref|| / ||ref|| per (b, t)
LSE_TOLERANCE = {"float32": 1e-3, "float16": 2e-2, "bfloat16": 2e-2}  # absolute


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
            positions = list(range(prefix)) + [prefix + j for j in visible_drafts(mask, b, t, q_len)]
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


def relative_errors(out, ref_out) -> np.ndarray:
    """||out - ref|| / ||ref|| for each (b, t) row; a row whose reference is all zero must be 0."""
    out = np.asarray(out, dtype=np.float64)
    ref_out = np.asarray(ref_out, dtype=np.float64)
    diff = np.linalg.norm((out - ref_out).reshape(*out.shape[:2], -1), axis=-1)
    norm = np.linalg.norm(ref_out.reshape(*ref_out.shape[:2], -1), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 0, diff / np.where(norm > 0, norm, 1), np.where(diff > 0, np.inf, 0))


def check_attention(out, lse, ref_out, ref_lse, dtype: str) -> float:
    """Raise AssertionError unless (out, lse) matches the reference within dtype's tolerance.

    NaN must appear exactly where the reference has NaN (rows the reference leaves finite must be
    finite, which also catches unwritten poisoned outputs). Returns the worst relative error.
    """
    out = np.asarray(out, dtype=np.float64)
    lse = np.asarray(lse, dtype=np.float64)
    ref_out = np.asarray(ref_out, dtype=np.float64)
    ref_lse = np.asarray(ref_lse, dtype=np.float64)
    assert out.shape == ref_out.shape, f"out shape {out.shape} != {ref_out.shape}"
    assert lse.shape == ref_lse.shape, f"lse shape {lse.shape} != {ref_lse.shape}"
    nan_out, nan_ref = np.isnan(out), np.isnan(ref_out)
    if (nan_out != nan_ref).any():
        where = np.argwhere(nan_out != nan_ref)[0]
        raise AssertionError(f"NaN mismatch in out at {tuple(where)}: got {out[tuple(where)]}, "
                             f"reference {ref_out[tuple(where)]}")
    nan_lse, nan_lse_ref = np.isnan(lse), np.isnan(ref_lse)
    if (nan_lse != nan_lse_ref).any():
        where = np.argwhere(nan_lse != nan_lse_ref)[0]
        raise AssertionError(f"NaN mismatch in lse at {tuple(where)}: got {lse[tuple(where)]}, "
                             f"reference {ref_lse[tuple(where)]}")
    errors = relative_errors(np.where(nan_ref, 0, out), np.where(nan_ref, 0, ref_out))
    worst = float(errors.max()) if errors.size else 0.0
    if worst > TOLERANCE[dtype]:
        b, t = np.argwhere(errors == worst)[0]
        raise AssertionError(f"out row (b={b}, t={t}) relative error {worst:.3g} > "
                             f"{TOLERANCE[dtype]} ({dtype})")
    inf_mismatch = np.isinf(ref_lse) != np.isinf(lse)
    same_inf = np.where(np.isinf(ref_lse), lse == ref_lse, True)
    if inf_mismatch.any() or not same_inf.all():
        where = np.argwhere(inf_mismatch | ~same_inf)[0]
        raise AssertionError(f"lse at {tuple(where)}: got {lse[tuple(where)]}, reference "
                             f"{ref_lse[tuple(where)]}")
    finite = np.isfinite(ref_lse)
    lse_err = np.abs(lse - ref_lse)[finite]
    if lse_err.size and lse_err.max() > LSE_TOLERANCE[dtype]:
        raise AssertionError(f"lse absolute error {lse_err.max():.3g} > {LSE_TOLERANCE[dtype]} ({dtype})")
    return worst
