"""The GPU side of a sparse sweep trial: the benchmark workload (issue 8's: every sequence's
indices choose `topk` distinct positions among `prefix` of its own, in shuffled pages of one
cache; for the V4 op also a window of each sequence's recent tokens in a second cache, and a sink
per head), the float64 oracle (the definition of tests/sparse_reference.py, which a CPU test holds
it to) and the plain torch implementation the kernels are measured against."""

from __future__ import annotations

import torch

from kgen.mla import fp8
from kgen.mla.sparse.spec import SparseSpec
from kgen.mla.sparse.workload import SparseWorkload, in_length
from kgen.tune.space import Case

CHUNK_TOKENS = 1 << 20  # cache tokens generated (and quantized) at a time


def paged_cache(spec: SparseSpec, pages: int, page_size: int, gen, device) -> torch.Tensor:
    """A cache of `pages` pages of values ~ N(0, 1) in spec's format: uint8 [pages, page_size,
    token_bytes] for an fp8 format (a view of padded pages where its scales sit per page, as
    quantize_fp8 makes it), else [pages, page_size, D] in q's dtype."""
    fmt, dim = spec.format, spec.head_dim
    width = fmt.token_bytes if fmt.quantized else dim
    if fmt.quantized:
        raw = torch.zeros(pages, fmt.page_bytes(page_size), dtype=torch.uint8, device=device)
    else:
        raw = torch.empty(pages, page_size * dim, dtype=spec.torch_dtype, device=device)
    chunk = max(1, CHUNK_TOKENS // page_size)
    for start in range(0, pages, chunk):
        n = min(chunk, pages - start)
        values = torch.randn(n, page_size, dim, generator=gen, device=device)
        if fmt.quantized:
            rows = fp8.page_view(fp8.quantize_fp8(values, spec.kv_format), fmt)
        else:
            rows = values.to(raw.dtype).reshape(n, -1)
        raw[start : start + n, : page_size * width] = rows
    return raw[:, : page_size * width].view(pages, page_size, width)


def bench_workload(case: Case, device: torch.device, seed: int) -> SparseWorkload:
    """q ~ N(0, 1); a cache of batch x prefix tokens ~ N(0, 1) (fp8-quantized or in q's dtype) in
    shuffled pages, each sequence owning prefix / page_size of them; indices: topk distinct
    positions of the sequence's own (with repeats only where topk > prefix), no -1 holes.

    The V4 op with a second cache: each sequence owns a window of extra_topk + T - 1 recent
    tokens in shuffled pages of extra_page_size (starting anywhere in its first page), query
    token t listing the extra_topk of them from position t on, oldest first; a sink ~ N(0, 1)
    per head; no lengths (every entry counts)."""
    spec, batch = case.spec, case.batch
    ps = spec.page_size
    gen = torch.Generator(device=device).manual_seed(seed)
    pages_per_seq = -(-case.prefix // ps)
    pages = batch * pages_per_seq
    cache = paged_cache(spec, pages, ps, gen, device)
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
    w = SparseWorkload(
        spec=spec,
        q=q.to(spec.torch_dtype),
        kv_cache=cache,
        indices=indices,
        scale=spec.default_scale,
    )
    if spec.v4_op:
        w.attn_sink = torch.randn(spec.heads, generator=gen, device=device)
    if spec.has_extra:
        w.extra_kv_cache, w.extra_indices = window(spec, batch, gen, device)
    return w


def window(spec: SparseSpec, batch: int, gen, device) -> tuple[torch.Tensor, torch.Tensor]:
    """The second cache and its indices [B, T, extra_topk] (see bench_workload)."""
    xps, k = spec.extra_page_size, spec.extra_topk
    pages_per_seq = -(-(k + spec.q_len - 1) // xps) + 1  # a window may start anywhere in a page
    pages = batch * pages_per_seq
    cache = paged_cache(spec, pages, xps, gen, device)
    table = torch.randperm(pages, generator=gen, device=device).reshape(batch, pages_per_seq)
    start = torch.randint(0, xps, (batch, 1, 1), generator=gen, device=device)
    t = torch.arange(spec.q_len, device=device)[None, :, None]
    positions = start + t + torch.arange(k, device=device)  # [B, T, k]
    page = torch.gather(table, 1, (positions // xps).reshape(batch, -1)).reshape(positions.shape)
    return cache, (page * xps + positions % xps).to(torch.int32)


def _rows_of(cache: torch.Tensor, spec: SparseSpec, indices: torch.Tensor) -> torch.Tensor:
    """[..., token_bytes] (fp8) or [..., D]: the bytes or values of the slots `indices` lists
    (a -1 or a slot out of range reads the nearest slot: the callers mask those)."""
    pages, page_size, width = cache.shape
    slots = indices.clamp(0, max(0, pages * page_size - 1)).long()
    page, offset = slots // page_size, slots % page_size
    fmt = spec.format
    if fmt.scales_at != "page":
        return cache[page, offset]
    # a token's payload row, then its scale row, of the page's bytes (whatever its stride)
    raw = fp8.page_view(cache, fmt)
    payload = raw[:, : fmt.scale_row_offset(page_size)].reshape(pages, page_size, fmt.row_bytes)
    scale_rows = raw[:, fmt.scale_row_offset(page_size) :]
    scale_rows = scale_rows.reshape(pages, page_size, fmt.scale_row_bytes)
    return torch.cat((payload[page, offset], scale_rows[page, offset]), dim=-1)


def _values(raw: torch.Tensor, spec: SparseSpec, dtype: torch.dtype) -> torch.Tensor:
    """[..., D] in `dtype` of gathered rows (_rows_of)."""
    fmt = spec.format
    if not fmt.quantized:
        return raw.to(dtype)
    wide = torch.float64 if dtype == torch.float64 else torch.float32  # e4m3 x scale, then dtype
    latent = raw[..., : fmt.e4m3_dims].contiguous().view(torch.float8_e4m3fn).to(wide)
    if fmt.scales_at == "page":
        at = fmt.row_bytes  # the scale row follows the payload row (_rows_of)
        scale_bytes = raw[..., at : at + fmt.scale_groups]
    else:
        scale_bytes = raw[..., fmt.scales_offset : fmt.rope_offset]
    scale_bytes = scale_bytes.contiguous()
    if fmt.scale == "float32":
        scales = scale_bytes.view(torch.float32)
    else:
        scales = fp8.decode_ue8m0(scale_bytes)
    shape = (*latent.shape[:-1], fmt.scale_groups, fmt.group)
    latent = (latent.reshape(shape) * scales.to(wide).unsqueeze(-1)).flatten(-2)
    rope_end = fmt.rope_offset + 2 * fmt.rope_dims
    rope = raw[..., fmt.rope_offset : rope_end].contiguous().view(torch.bfloat16).to(wide)
    return torch.cat((latent, rope), dim=-1).to(dtype)


def gathered_rows(w: SparseWorkload, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """([B, T, K, D] in `dtype`: the cache rows each query token lists, both lists joined;
    bool [B, T, K]: which entries count (>= 0 and within the row's length)), a -1 or a slot out
    of range reading the nearest slot (the callers mask those entries or rows)."""
    keys, counted = [], []
    for cache, indices, lengths, _ in w.lists():
        keys.append(_values(_rows_of(cache, w.spec, indices), w.spec, dtype))
        counted.append((indices >= 0) & in_length(indices, lengths))
    return torch.cat(keys, dim=2), torch.cat(counted, dim=2)


def _out_of_range(w: SparseWorkload) -> torch.Tensor:
    """bool [B, T]: the rows listing, within their lengths, a slot outside [-1, slots)."""
    bad = torch.zeros(w.indices.shape[:2], dtype=torch.bool, device=w.indices.device)
    for cache, indices, lengths, _ in w.lists():
        slots = cache.shape[0] * cache.shape[1]
        outside = ((indices < -1) | (indices >= slots)) & in_length(indices, lengths)
        bad |= outside.any(dim=-1)
    return bad


@torch.no_grad()
def sparse_oracle(w: SparseWorkload) -> tuple[torch.Tensor, torch.Tensor]:
    """out [B, T, H, 512] and lse [B, T, H] in float64 on w's device. -1 entries and entries past
    a row's length are skipped, a slot listed twice counts twice, a row with nothing listed gets
    0 and -inf, a row with a slot out of range NaN; with a sink, out *= 1 / (1 + exp(sink - lse))
    (lse without it)."""
    spec = w.spec
    keys, counted = gathered_rows(w, torch.float64)  # [B, T, K, D], [B, T, K]
    logits = w.scale * torch.einsum("bthd,btkd->bthk", w.q.double(), keys)
    logits = logits.masked_fill(~counted[:, :, None, :], float("-inf"))
    m = logits.amax(dim=-1, keepdim=True)
    seen = m != float("-inf")
    m = torch.where(seen, m, torch.zeros_like(m))
    p = torch.exp(logits - m)
    total = p.sum(dim=-1, keepdim=True)
    out = torch.where(seen, (p @ keys[..., : spec.latent_dim]) / total, 0.0)
    lse = torch.where(seen, m + torch.log(total), float("-inf"))[..., 0]
    if w.attn_sink is not None:  # (a row with nothing listed stays 0, whatever its sink)
        factor = 1 / (1 + torch.exp(w.attn_sink.double() - lse))
        out = out * torch.where(seen[..., 0], factor, 1.0)[..., None]
    bad = _out_of_range(w)[:, :, None]  # [B, T, 1]
    return out.masked_fill(bad[..., None], float("nan")), lse.masked_fill(bad, float("nan"))


def torch_sparse_mla(w: SparseWorkload) -> tuple[torch.Tensor, torch.Tensor]:
    """What a user without kgen would write: gather and dequantize the listed rows into q's
    dtype, then bmm + mask + softmax + bmm in that dtype (and the sink's factor)."""
    keys, counted = gathered_rows(w, w.q.dtype)
    scores = torch.einsum("bthd,btkd->bthk", w.q, keys) * w.scale
    scores = scores.masked_fill(~counted[:, :, None, :], float("-inf"))
    lse = torch.logsumexp(scores.float(), dim=-1)
    probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("bthk,btkd->bthd", probs, keys[..., : w.spec.latent_dim])
    if w.attn_sink is not None:
        out = out * torch.sigmoid(lse - w.attn_sink)[..., None].to(out.dtype)
    return out, lse


def sparse_work(w: SparseWorkload) -> dict:
    """What one call must do: issue 8 counts the gathered cache bytes (B x T x topk x 656 for
    fp8, x 1152 for bf16; V4: B x T x (topk + extra_topk) x 584; holes aside) as the bytes of the
    floor, and the gather bandwidth (kgen.tune.report.sparse_case_work: the same from the spec)."""
    gathered = w.gathered_bytes()
    return {"kv_bytes": gathered, "bytes": gathered, "flops": w.flops()}
