"""The GPU side of a sparse sweep trial: the benchmark workload (issue 8's: every sequence's
indices choose `topk` distinct positions among `prefix` of its own, in shuffled pages of one
cache), the float64 oracle (the definition of tests/sparse_reference.py, which a CPU test holds
it to) and the plain torch implementation the kernels are measured against."""

from __future__ import annotations

import torch

from kgen.mla import fp8
from kgen.mla.sparse.workload import SparseWorkload
from kgen.tune.space import Case

CHUNK_TOKENS = 1 << 20  # cache tokens generated (and quantized) at a time


def bench_workload(case: Case, device: torch.device, seed: int) -> SparseWorkload:
    """q ~ N(0, 1); a cache of batch x prefix tokens ~ N(0, 1) (fp8-quantized or in q's dtype) in
    shuffled pages, each sequence owning prefix / page_size of them; indices: topk distinct
    positions of the sequence's own (with repeats only where topk > prefix), no -1 holes."""
    spec, batch = case.spec, case.batch
    ps = spec.page_size
    gen = torch.Generator(device=device).manual_seed(seed)
    pages_per_seq = -(-case.prefix // ps)
    pages = batch * pages_per_seq
    tokens = pages * ps
    fmt = spec.format
    if fmt.scales_at == "page":  # its tokens' bytes are not one row each: no flat cache
        raise ValueError(f"kv_format={spec.kv_format!r}: the sweep takes formats of whole rows")
    width = fmt.token_bytes if fmt.quantized else spec.head_dim
    dtype = torch.uint8 if fmt.quantized else spec.torch_dtype
    cache = torch.empty(tokens, width, dtype=dtype, device=device)
    for start in range(0, tokens, CHUNK_TOKENS):
        n = min(CHUNK_TOKENS, tokens - start)
        values = torch.randn(n, 1, spec.head_dim, generator=gen, device=device)
        rows = fp8.quantize_fp8(values, spec.kv_format) if fmt.quantized else values.to(dtype)
        cache[start : start + n] = rows.reshape(n, width)
    table = torch.randperm(pages, generator=gen, device=device).reshape(batch, pages_per_seq)
    rows = batch * spec.q_len
    if spec.topk <= case.prefix:
        scores = torch.rand(rows, case.prefix, generator=gen, device=device)
        positions = scores.topk(spec.topk, dim=1).indices
    else:
        positions = torch.randint(0, case.prefix, (rows, spec.topk), generator=gen, device=device)
    positions = positions.reshape(batch, spec.q_len, spec.topk)
    page = torch.gather(table, 1, (positions // ps).reshape(batch, -1)).reshape(positions.shape)
    indices = (page * ps + positions % ps).to(torch.int32)
    q = torch.randn(batch, spec.q_len, spec.heads, spec.head_dim, generator=gen, device=device)
    return SparseWorkload(
        spec=spec,
        q=q.to(spec.torch_dtype),
        kv_cache=cache.reshape(pages, ps, width),
        indices=indices,
        scale=spec.default_scale,
    )


def gathered_rows(w: SparseWorkload, dtype: torch.dtype) -> torch.Tensor:
    """[B, T, topk, 576] in `dtype`: the cache rows each query token lists (a -1 or a slot out
    of range reads the nearest slot: the callers mask those entries or rows)."""
    width = w.kv_cache.shape[-1]
    flat = w.kv_cache.reshape(-1, width)
    raw = flat[w.indices.clamp(0, max(0, flat.shape[0] - 1)).long()]
    fmt = w.spec.format
    if not fmt.quantized:
        return raw.to(dtype)
    wide = torch.float64 if dtype == torch.float64 else torch.float32  # e4m3 x scale, then dtype
    latent = raw[..., : fmt.e4m3_dims].contiguous().view(torch.float8_e4m3fn).to(wide)
    scale_bytes = raw[..., fmt.scales_offset : fmt.rope_offset].contiguous()
    if fmt.scale == "float32":
        scales = scale_bytes.view(torch.float32)
    else:
        scales = fp8.decode_ue8m0(scale_bytes)
    shape = (*latent.shape[:-1], fmt.scale_groups, fmt.group)
    latent = (latent.reshape(shape) * scales.to(wide).unsqueeze(-1)).flatten(-2)
    rope = raw[..., fmt.rope_offset :].contiguous().view(torch.bfloat16).to(wide)
    return torch.cat((latent, rope), dim=-1).to(dtype)


@torch.no_grad()
def sparse_oracle(w: SparseWorkload) -> tuple[torch.Tensor, torch.Tensor]:
    """out [B, T, H, 512] and lse [B, T, H] in float64 on w's device. -1 entries are skipped, a
    slot listed twice counts twice, a row with nothing listed gets 0 and -inf, a row with a slot
    out of range NaN."""
    spec = w.spec
    num_slots = w.kv_cache.shape[0] * w.kv_cache.shape[1]
    keys = gathered_rows(w, torch.float64)  # [B, T, K, D]
    logits = w.scale * torch.einsum("bthd,btkd->bthk", w.q.double(), keys)
    listed = (w.indices >= 0)[:, :, None, :]
    logits = logits.masked_fill(~listed, float("-inf"))
    m = logits.amax(dim=-1, keepdim=True)
    seen = m != float("-inf")
    m = torch.where(seen, m, torch.zeros_like(m))
    p = torch.exp(logits - m)
    total = p.sum(dim=-1, keepdim=True)
    out = torch.where(seen, (p @ keys[..., : spec.latent_dim]) / total, 0.0)
    lse = torch.where(seen, m + torch.log(total), float("-inf"))[..., 0]
    bad = ((w.indices < -1) | (w.indices >= num_slots)).any(dim=-1)[:, :, None]  # [B, T, 1]
    return out.masked_fill(bad[..., None], float("nan")), lse.masked_fill(bad, float("nan"))


def torch_sparse_mla(w: SparseWorkload) -> tuple[torch.Tensor, torch.Tensor]:
    """What a user without kgen would write: gather and dequantize the listed rows into q's
    dtype, then bmm + mask + softmax + bmm in that dtype."""
    keys = gathered_rows(w, w.q.dtype)
    scores = torch.einsum("bthd,btkd->bthk", w.q, keys) * w.scale
    scores = scores.masked_fill((w.indices < 0)[:, :, None, :], float("-inf"))
    lse = torch.logsumexp(scores.float(), dim=-1)
    probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("bthk,btkd->bthd", probs, keys[..., : w.spec.latent_dim])
    return out, lse


def sparse_work(w: SparseWorkload) -> dict:
    """What one call must do: issue 8 counts the gathered cache bytes (B x T x topk x 656 for
    fp8, x 1152 for bf16; holes aside) as the bytes of the floor, and the gather bandwidth."""
    gathered = w.gathered_bytes()
    return {"kv_bytes": gathered, "bytes": gathered, "flops": w.flops()}
