"""The float64 NumPy reference of sparse top-k MLA attention, and a decoder of the fp8 cache's
bytes written apart from kgen's (bit by bit), so the two check each other.

Written for clarity, not speed: each query row lists its cache slots, gathers them, and takes the
softmax over exactly those.
"""

from __future__ import annotations

import numpy as np

LATENT, ROPE, GROUP, TOKEN_BYTES = 512, 64, 128, 656


def e4m3_to_float64(raw: np.ndarray) -> np.ndarray:
    """float8 e4m3fn bytes -> float64: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent
    0 is subnormal (m/8 x 2^-6); S.1111.111 is NaN; there is no infinity."""
    raw = np.asarray(raw, dtype=np.uint8).astype(np.int64)
    sign = np.where(raw & 0x80, -1.0, 1.0)
    exponent, mantissa = (raw >> 3) & 0xF, raw & 0x7
    normal = (1 + mantissa / 8) * np.exp2(exponent - 7)
    subnormal = (mantissa / 8) * 2.0**-6
    value = sign * np.where(exponent == 0, subnormal, normal)
    return np.where((exponent == 0xF) & (mantissa == 0x7), np.nan, value)


def bf16_to_float64(raw: np.ndarray) -> np.ndarray:
    """Little-endian bfloat16 byte pairs (last axis) -> float64."""
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    bits = raw.view("<u2").astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)


def decode_fp8_cache(cache: np.ndarray) -> np.ndarray:
    """uint8 [pages, page_size, 656] -> float64 [pages, page_size, 576] (e4m3 x scale, rope)."""
    cache = np.asarray(cache, dtype=np.uint8)
    pages, page_size, _ = cache.shape
    values = e4m3_to_float64(cache[..., :LATENT]).reshape(pages, page_size, LATENT // GROUP, GROUP)
    scales = np.ascontiguousarray(cache[..., LATENT : LATENT + 16]).view("<f4").astype(np.float64)
    latent = (values * scales[..., None]).reshape(pages, page_size, LATENT)
    return np.concatenate([latent, bf16_to_float64(cache[..., LATENT + 16 :])], axis=-1)


def sparse_reference(q, cache, indices, scale: float, latent_dim: int = LATENT):
    """out [B, T, H, latent_dim] and lse [B, T, H] in float64.

    q [B, T, H, D]; cache: a float cache [pages, page_size, D] or an fp8 one (uint8, 656 bytes per
    token, decoded here); indices [B, T, topk] of flat slots page * page_size + offset. -1 skips
    an entry; a slot listed twice counts twice. A row with no entry left: out = 0, lse = -inf. A
    row with a slot outside [0, pages * page_size) (or below -1): out = lse = NaN.
    """
    q = np.asarray(q, dtype=np.float64)
    cache = np.asarray(cache)
    cache = decode_fp8_cache(cache) if cache.dtype == np.uint8 else cache.astype(np.float64)
    slots = cache.reshape(-1, cache.shape[-1])  # [pages * page_size, D]: slot s is row s
    indices = np.asarray(indices, dtype=np.int64)
    batch, q_len, heads, _ = q.shape
    out = np.zeros((batch, q_len, heads, latent_dim))
    lse = np.full((batch, q_len, heads), -np.inf)
    for b in range(batch):
        for t in range(q_len):
            listed = indices[b, t]
            if ((listed < -1) | (listed >= len(slots))).any():
                out[b, t], lse[b, t] = np.nan, np.nan
                continue
            k = slots[listed[listed >= 0]]  # [n, D], in list order, duplicates kept
            if len(k) == 0:
                continue
            logits = scale * (q[b, t] @ k.T)  # [H, n]
            with np.errstate(invalid="ignore", over="ignore"):
                m = logits.max(axis=1, keepdims=True)
                seen = m[:, 0] != -np.inf
                m = np.where(m == -np.inf, 0.0, m)
                p = np.exp(logits - m)
                total = p.sum(axis=1)
                out[b, t] = np.where(seen[:, None], (p @ k[:, :latent_dim]) / total[:, None], 0.0)
                lse[b, t] = np.where(seen, m[:, 0] + np.log(total), -np.inf)
    return out, lse
