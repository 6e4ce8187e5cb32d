"""Random sparse MLA inputs: the same generator serves the tests and the benchmarks."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kgen.mla.fp8 import quantize_fp8
from kgen.mla.sparse.spec import SparseSpec

NEVER_LISTED = 1e4  # cache rows no index lists hold this: reading one shows in the result


def in_length(indices: torch.Tensor, lengths) -> torch.Tensor:
    """bool [B, T, k]: the entries within their row's length (all where none is given; lengths
    [B] a sequence or [B, T] a row)."""
    if lengths is None:
        return torch.ones_like(indices, dtype=torch.bool)
    per_row = lengths if lengths.dim() == 2 else lengths[:, None]
    return torch.arange(indices.shape[2], device=indices.device) < per_row[..., None]


@dataclass
class SparseWorkload:
    spec: SparseSpec
    q: torch.Tensor  # [B, T, H, D]
    kv_cache: torch.Tensor  # uint8 [pages, page_size, token_bytes] (fp8) or [pages, page_size, D]
    indices: torch.Tensor  # int32 [B, T, topk]
    scale: float
    # The V4 op's keyword arguments (kgen.mla.sparse_attention), None where not given
    topk_length: torch.Tensor | None = None
    attn_sink: torch.Tensor | None = None
    extra_kv_cache: torch.Tensor | None = None
    extra_indices: torch.Tensor | None = None
    extra_topk_length: torch.Tensor | None = None

    @property
    def batch(self) -> int:
        return self.q.shape[0]

    def args(self) -> tuple:
        return (self.q, self.kv_cache, self.indices, self.scale)

    def extras(self) -> dict:
        """The V4 op's keyword arguments that are given (none for the V3.2 op)."""
        names = ("topk_length", "attn_sink", "extra_kv_cache", "extra_indices", "extra_topk_length")
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def lists(self) -> list[tuple]:
        """(cache, indices [B, T, k], lengths or None, page size) of each list the call reads."""
        lists = [(self.kv_cache, self.indices, self.topk_length, self.spec.page_size)]
        if self.extra_indices is not None:
            extra = (self.extra_kv_cache, self.extra_indices, self.extra_topk_length)
            lists.append((*extra, self.spec.extra_page_size))
        return lists

    def listed(self) -> int:
        """Entries the call reads: those >= 0 within each row's length, of both lists."""
        lists = self.lists()
        return sum(int(((i >= 0) & in_length(i, n)).sum()) for _, i, n, _ in lists)

    def poisoned_outputs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """out and lse filled with NaN: after a call, any unwritten element shows."""
        spec, nan = self.spec, float("nan")
        shape = (self.batch, spec.q_len, spec.heads)
        out = torch.full((*shape, spec.latent_dim), nan, dtype=self.q.dtype, device=self.q.device)
        return out, torch.full(shape, nan, dtype=torch.float32, device=self.q.device)

    def gathered_bytes(self) -> int:
        """Cache bytes one call gathers: every listed entry (holes aside) once per query row, of
        both lists (the two caches are of one format)."""
        return self.listed() * self.spec.token_bytes

    def flops(self) -> int:
        """2 * (D + Dl) * H * listed entries (q.K over D values, P.V over Dl)."""
        spec = self.spec
        return 2 * (spec.head_dim + spec.latent_dim) * spec.heads * self.listed()


def make_sparse_workload(
    spec: SparseSpec,
    batch: int,
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    scale: float | None = None,
    cache_tokens: int | None = None,
    holes: float = 0.2,
    duplicates: float = 0.1,
) -> SparseWorkload:
    """q ~ N(0, 1), a cache of `cache_tokens` listed rows (default 2 x topk) in shuffled pages plus
    spare rows never listed (holding NEVER_LISTED), and indices of listed rows with a fraction
    `holes` of -1 entries and a fraction `duplicates` repeating an earlier entry of the row."""
    gen = torch.Generator().manual_seed(seed)
    device = torch.device(device)
    ps = spec.page_size
    listed = cache_tokens or max(1, 2 * spec.topk)
    pages = -(-listed // ps) + 2
    slots = torch.randperm(pages * ps, generator=gen)[:listed]  # the rows indices may name
    values = torch.randn(pages * ps, spec.head_dim, generator=gen)
    hidden = torch.ones(pages * ps, dtype=torch.bool)
    hidden[slots] = False
    values[hidden] = NEVER_LISTED
    cache = values.reshape(pages, ps, spec.head_dim)
    cache = quantize_fp8(cache) if spec.kv_format == "fp8" else cache.to(spec.torch_dtype)

    shape = (batch, spec.q_len, spec.topk)
    indices = slots[torch.randint(0, listed, shape, generator=gen)]
    if spec.topk > 1:
        earlier = (torch.rand(shape, generator=gen) * torch.arange(spec.topk)).long()
        repeat = torch.rand(shape, generator=gen) < duplicates
        indices = torch.where(repeat, torch.gather(indices, 2, earlier), indices)
    indices = torch.where(torch.rand(shape, generator=gen) < holes, -1, indices)
    q = torch.randn(batch, spec.q_len, spec.heads, spec.head_dim, generator=gen)
    return SparseWorkload(
        spec=spec,
        q=q.to(spec.torch_dtype).to(device),
        kv_cache=cache.to(device),
        indices=indices.to(torch.int32).to(device),
        scale=spec.default_scale if scale is None else scale,
    )
