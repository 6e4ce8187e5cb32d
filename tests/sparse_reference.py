"""The float64 NumPy reference of sparse top-k MLA attention (both ops: DeepSeek-V3.2's, and
DeepSeek-V4's with two caches, per-row lengths and a sink), and an encoder and decoder of every fp8
cache format's bytes written apart from kgen's (bit by bit, from the documented layouts), so the
two check each other.

Written for clarity, not speed: each query row lists its cache slots, gathers them, and takes the
softmax over exactly those.
"""

from __future__ import annotations

import numpy as np

LATENT, ROPE, GROUP, TOKEN_BYTES = 512, 64, 128, 656

# name: (head_dim, e4m3 dims, values per scale, scale kind, where scales sit), as documented by
# FlashMLA (V32_FP8Sparse, MODEL1_FP8Sparse) and FlashInfer (ue8m0_g32): written out here, not
# read from kgen's table
LAYOUTS = {
    "fp8": (576, 512, 128, "float32", "token"),
    "v4_fp8": (512, 448, 64, "ue8m0", "page"),
    "v41_fp8": (512, 512, 32, "ue8m0", "token"),
}


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


def encode_e4m3(x: np.ndarray) -> np.ndarray:
    """float64 values (|x| <= 448, or NaN) -> e4m3fn bytes, rounded to nearest even."""
    x = np.asarray(x, dtype=np.float64)
    sign = np.where(np.signbit(x), 0x80, 0).astype(np.int64)
    a = np.abs(np.nan_to_num(x, nan=0.0))
    sub = np.rint(a / 2.0**-9).astype(np.int64)  # subnormal codes (8: the least normal)
    f, k = np.frexp(np.where(a > 0, a, 1.0))  # a = f 2^k, f in [0.5, 1)
    e = k - 1
    m = np.rint((2 * f - 1) * 8).astype(np.int64)
    e, m = np.where(m == 8, e + 1, e), np.where(m == 8, 0, m)
    normal = ((e + 7) << 3) | m
    code = np.where(a < 2.0**-6, sub, normal) | sign
    return np.where(np.isnan(x), 0x7F, code).astype(np.uint8)


def bf16_bytes(x: np.ndarray) -> np.ndarray:
    """float32 values -> little-endian bfloat16 byte pairs (last axis doubled), to nearest even."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    rounded = np.where(np.isnan(x), (bits >> 16).astype(np.uint16) | 0x40, rounded)
    return rounded.astype("<u2").view(np.uint8)


def quantize(kv: np.ndarray, name: str) -> np.ndarray:
    """float32 [pages, page_size, head_dim] (finite) -> the cache's bytes: [pages, page_size,
    token_bytes], or for scales per page [pages, page_bytes] (payload rows, then 8-byte scale
    rows, the page zero-padded to a multiple of 576 bytes). The scale rules: float32 amax / 448
    (at least 2^-126); UE8M0 2^ceil(log2(max(amax / 448, 1e-4))) in float32 (FlashMLA's)."""
    dim, n8, group, kind, at = LAYOUTS[name]
    kv = np.asarray(kv, dtype=np.float32)
    pages, page_size, _ = kv.shape
    vals = kv[..., :n8].reshape(pages, page_size, n8 // group, group)
    quotient = np.abs(vals).max(axis=-1) / np.float32(448)  # float32 division
    if kind == "float32":
        scales = np.maximum(quotient, np.float32(2.0**-126)).astype(np.float32)
        scale_bytes = scales.astype("<f4").view(np.uint8).reshape(pages, page_size, -1)
    else:
        exponent = np.ceil(np.log2(np.maximum(quotient, np.float32(1e-4)).astype(np.float64)))
        scales = np.exp2(exponent).astype(np.float32)
        scale_bytes = (exponent + 127).astype(np.uint8)
    codes = encode_e4m3((vals / scales[..., None]).astype(np.float32).astype(np.float64))
    codes = codes.reshape(pages, page_size, n8)
    rope = bf16_bytes(kv[..., n8:]).reshape(pages, page_size, -1)
    if at == "token":
        return np.concatenate([codes, scale_bytes, rope], axis=-1)
    payload = np.concatenate([codes, rope], axis=-1).reshape(pages, -1)
    rows = np.zeros((pages, page_size, 8), np.uint8)
    rows[..., : scale_bytes.shape[-1]] = scale_bytes
    raw = np.concatenate([payload, rows.reshape(pages, -1)], axis=-1)
    padded = -(-raw.shape[1] // 576) * 576
    return np.concatenate([raw, np.zeros((pages, padded - raw.shape[1]), np.uint8)], axis=-1)


def decode_cache(raw: np.ndarray, name: str, page_size: int | None = None) -> np.ndarray:
    """A cache's bytes (as quantize writes them) -> float64 [slots, head_dim], slot s = page
    s // page_size, offset s % page_size."""
    dim, n8, group, kind, at = LAYOUTS[name]
    raw = np.asarray(raw, dtype=np.uint8)
    if at == "token":
        rows = raw.reshape(-1, raw.shape[-1])
        scale_bytes = rows[:, n8 : n8 + (n8 // group) * (4 if kind == "float32" else 1)]
        rope_at = n8 + scale_bytes.shape[1]
    else:
        width = n8 + 2 * (dim - n8)
        rows = raw[:, : page_size * width].reshape(-1, width)
        scale_rows = raw[:, page_size * width : page_size * (width + 8)].reshape(-1, 8)
        scale_bytes = scale_rows[:, : n8 // group]
        rope_at = n8
    if kind == "float32":
        scales = np.ascontiguousarray(scale_bytes).view("<f4").astype(np.float64)
    else:
        e = scale_bytes.astype(np.float64)
        scales = np.where(scale_bytes == 255, np.nan, np.exp2(e - 127))
    vals = e4m3_to_float64(rows[:, :n8]).reshape(len(rows), n8 // group, group)
    latent = (vals * scales[..., None]).reshape(len(rows), n8)
    return np.concatenate(
        [latent, bf16_to_float64(rows[:, rope_at : rope_at + 2 * (dim - n8)])], -1
    )


def quantize_tensor(kv: np.ndarray, scale: float | None = None) -> tuple[np.ndarray, np.float32]:
    """vLLM's and SGLang's kv_cache_dtype="fp8" MLA cache: float32 [pages, page_size, 576] ->
    (its bytes, uint8 [pages, page_size, 576] of e4m3 kv / scale, and the float32 scale). The
    scale: the one given, else max(amax / 448, 2^-126) in float32 over kv's finite values;
    quotients saturate to +-448, non-finite values become NaN (0x7F)."""
    kv = np.asarray(kv, dtype=np.float32)
    finite = np.isfinite(kv)
    if scale is None:
        amax = np.abs(np.where(finite, kv, np.float32(0))).max()
        scale = np.maximum(amax / np.float32(448), np.float32(2.0**-126))
    scale = np.float32(scale)
    with np.errstate(over="ignore"):
        quotient = np.clip(kv / scale, np.float32(-448), np.float32(448))  # float32 division
    quotient = np.where(finite, quotient.astype(np.float64), np.nan)
    return encode_e4m3(quotient), scale


def decode_tensor(raw: np.ndarray, scale: float) -> np.ndarray:
    """quantize_tensor's bytes -> float64 e4m3 values x the (float32) scale."""
    return e4m3_to_float64(raw) * np.float64(np.float32(scale))


def decode_fp8_cache(cache: np.ndarray) -> np.ndarray:
    """uint8 [pages, page_size, 656] -> float64 [pages, page_size, 576] (e4m3 x scale, rope)."""
    cache = np.asarray(cache, dtype=np.uint8)
    pages, page_size, _ = cache.shape
    values = e4m3_to_float64(cache[..., :LATENT]).reshape(pages, page_size, LATENT // GROUP, GROUP)
    scales = np.ascontiguousarray(cache[..., LATENT : LATENT + 16]).view("<f4").astype(np.float64)
    latent = (values * scales[..., None]).reshape(pages, page_size, LATENT)
    return np.concatenate([latent, bf16_to_float64(cache[..., LATENT + 16 :])], axis=-1)


def _slots(cache, name, page_size):
    cache = np.asarray(cache)
    if name is not None and cache.dtype == np.uint8:
        return decode_cache(cache, name, page_size)
    if cache.dtype == np.uint8:
        cache = decode_fp8_cache(cache)
    return cache.astype(np.float64).reshape(-1, cache.shape[-1])


def v4_reference(q, lists, scale: float, sink=None, latent_dim: int = LATENT):
    """out [B, T, H, latent_dim] and lse [B, T, H] in float64 of the V4 op.

    q [B, T, H, D]; lists: one or two (slots [n, D] float64 (decode_cache), indices [B, T, k],
    lengths None | [B] | [B, T]); one softmax over the first `length` entries of each list, -1
    skipped, duplicates counted. An entry outside [-1, n) within its length makes its row NaN.
    sink [H]: out *= 1 / (1 + exp(sink - lse)); lse is returned without it. A row with no entry:
    out = 0, lse = -inf. A NaN in a listed row makes its query row NaN (out and lse).
    """
    q = np.asarray(q, dtype=np.float64)
    batch, q_len, heads, _ = q.shape
    out = np.zeros((batch, q_len, heads, latent_dim))
    lse = np.full((batch, q_len, heads), -np.inf)
    for b in range(batch):
        for t in range(q_len):
            keys, bad = [], False
            for slots, indices, lengths in lists:
                row = np.asarray(indices[b, t], dtype=np.int64)
                if lengths is not None:
                    n = np.asarray(lengths)
                    n = int(n[b] if n.ndim == 1 else n[b, t])
                    row = row[: max(0, min(n, len(row)))]
                bad |= bool(((row < -1) | (row >= len(slots))).any())
                keys.append(slots[row[row >= 0]] if not bad else np.zeros((0, q.shape[-1])))
            if bad:
                out[b, t], lse[b, t] = np.nan, np.nan
                continue
            k = np.concatenate(keys)
            if len(k) == 0:
                continue
            logits = scale * (q[b, t] @ k.T)
            with np.errstate(invalid="ignore", over="ignore"):
                m = logits.max(axis=1, keepdims=True)
                p = np.exp(logits - m)
                total = p.sum(axis=1)
                o = (p @ k[:, :latent_dim]) / total[:, None]
                row_lse = m[:, 0] + np.log(total)
                if sink is not None:
                    o = o / (1 + np.exp(np.asarray(sink, np.float64) - row_lse))[:, None]
            out[b, t], lse[b, t] = o, row_lse
    return out, lse


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
