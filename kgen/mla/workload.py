"""Random paged MLA inputs: the same generator serves the tests, the sweep and the benchmarks."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kgen.mla.fp8 import dequantize_fp8, quantize_fp8, tensor_scale
from kgen.mla.inputs import pack_tree_mask
from kgen.mla.spec import Spec


@dataclass
class Workload:
    spec: Spec
    q: torch.Tensor  # [B, T, H, D]
    kv_cache: torch.Tensor  # [num_pages, page_size, D]; an fp8 cache: uint8 [.., token bytes]
    block_table: torch.Tensor  # int32 [B, max_pages]
    seq_lens: torch.Tensor  # int32 [B]
    mask: torch.Tensor | None  # bool [B, T, T] for tree specs, else None
    scale: float
    k_scale: torch.Tensor | None = None  # an "fp8_tensor" cache's float32 [1] scale

    @property
    def batch(self) -> int:
        return self.q.shape[0]

    def args(self) -> tuple:
        return (self.q, self.kv_cache, self.block_table, self.seq_lens, self.mask, self.scale)

    def packed_args(self) -> tuple:
        """args() with a tree mask as its bit rows: what a serving engine passes each layer,
        having packed the step's mask once (kgen.mla.pack_tree_mask); with the bool mask every
        call also runs the packing's two small kernels."""
        if self.mask is None:
            return self.args()
        bits = pack_tree_mask(self.mask)
        return (self.q, self.kv_cache, self.block_table, self.seq_lens, bits, self.scale)

    def extras(self) -> dict:
        """The call's keyword inputs beyond args() that are given: an "fp8_tensor" cache's
        k_scale (as SparseWorkload.extras gives the V4 op's)."""
        return {} if self.k_scale is None else {"k_scale": self.k_scale}

    def cache_values(self) -> torch.Tensor:
        """The values the cache holds: the cache itself, or an fp8 cache dequantized (float32),
        what the float64 reference reads."""
        if self.spec.kv_format == "dtype":
            return self.kv_cache
        return dequantize_fp8(self.kv_cache, self.spec.kv_format, scale=self.k_scale)

    def poisoned_outputs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """out and lse filled with NaN: after a call, any unwritten element shows."""
        spec, nan = self.spec, float("nan")
        shape = (self.batch, spec.q_len, spec.heads)
        out = torch.full((*shape, spec.latent_dim), nan, dtype=self.q.dtype, device=self.q.device)
        return out, torch.full(shape, nan, dtype=torch.float32, device=self.q.device)

    def kv_bytes(self) -> int:
        """Unique KV bytes one call must read: every sequence's positions once."""
        token_bytes = self.kv_cache.shape[-1] * self.kv_cache.element_size()
        return int(self.seq_lens.sum()) * token_bytes

    def flops(self) -> int:
        """2 * (D + Dl) * H * (visible positions summed over query rows)."""
        spec = self.spec
        prefix = (self.seq_lens.to(torch.int64) - spec.q_len).clamp(min=0)
        visible = int(prefix.sum()) * spec.q_len
        if spec.mask == "tree":
            visible += (
                int(self.mask.sum()) if self.mask.dim() == 3 else int(self.mask.sum()) * self.batch
            )
        elif spec.mask == "causal":
            visible += self.batch * spec.q_len * (spec.q_len + 1) // 2
        else:
            visible += self.batch
        return 2 * (spec.head_dim + spec.latent_dim) * spec.heads * visible


def random_tree(q_len: int, gen: torch.Generator) -> torch.Tensor:
    """A draft tree's ancestor-or-self mask: draft j's parent is a random earlier draft."""
    mask = torch.zeros(q_len, q_len, dtype=torch.bool)
    for j in range(q_len):
        mask[j, j] = True
        if j:
            parent = int(torch.randint(0, j, (1,), generator=gen))
            mask[j] |= mask[parent]
    return mask


def make_workload(
    spec: Spec,
    seq_lens: list[int],
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    scale: float | None = None,
    mask_kind: str = "tree",  # for tree specs: "tree" (ancestor masks) or "random" (any bits)
    spare_pages: int = 3,
    max_pages: int | None = None,
) -> Workload:
    """Random q and cache in spec.dtype, pages of each sequence scattered over a shuffled pool.

    Unused cache rows (past a sequence's length, spare pages) hold large values, so reading
    them by mistake shows up; q and KV are N(0, 1). An fp8 spec's cache is those values
    quantized (kgen.mla.quantize_fp8; "fp8_tensor": k_scale from the used rows, so an unused
    one saturates to 448 x k_scale, the largest used magnitude, in every value: weaker than
    1e4, but a row read by mistake still scores far from the others).
    """
    gen = torch.Generator().manual_seed(seed)  # small, structural draws (pages, trees)
    device = torch.device(device)
    big = torch.Generator(device=device).manual_seed(seed)  # the bulk values, drawn in place
    dtype = spec.torch_dtype
    batch, ps = len(seq_lens), spec.page_size
    pages_per_seq = [-(-n // ps) for n in seq_lens]
    width = max([max_pages or 0, *pages_per_seq, 1])
    num_pages = sum(pages_per_seq) + spare_pages
    order = torch.randperm(num_pages, generator=gen)

    table = torch.full((batch, width), -1, dtype=torch.int32)
    used = torch.zeros(num_pages, ps, dtype=torch.bool)
    start = 0
    for b, (n, count) in enumerate(zip(seq_lens, pages_per_seq, strict=True)):
        pages = order[start : start + count]
        start += count
        table[b, :count] = pages.to(torch.int32)
        full, rest = divmod(n, ps)
        used[pages[:full]] = True
        if rest:
            used[pages[full], :rest] = True
    table[table < 0] = int(order[-1]) if spare_pages else 0  # padding entries name a real page

    kv = torch.randn(
        num_pages, ps, spec.head_dim, generator=big, device=device, dtype=torch.float32
    )
    kv[~used.to(device)] = (
        1e4  # never visible: a kernel that reads these rows gets a visibly wrong answer
    )
    q = torch.randn(batch, spec.q_len, spec.heads, spec.head_dim, generator=big, device=device)
    mask = None
    if spec.mask == "tree":
        if mask_kind == "tree":
            mask = torch.stack([random_tree(spec.q_len, gen) for _ in range(batch)])
        else:
            mask = torch.rand(batch, spec.q_len, spec.q_len, generator=gen) < 0.5
    k_scale = None
    if spec.kv_format == "dtype":
        cache = kv.to(dtype)
    else:
        if spec.kv_format == "fp8_tensor":
            k_scale = tensor_scale(kv[used.to(device)][None]).reshape(1)
        cache = quantize_fp8(kv, spec.kv_format, scale=k_scale)
    return Workload(
        spec=spec,
        q=q.to(dtype),
        kv_cache=cache,
        k_scale=k_scale,
        block_table=table.to(device),
        seq_lens=torch.tensor(seq_lens, dtype=torch.int32).to(device),
        mask=None if mask is None else mask.to(device),
        scale=spec.default_scale if scale is None else scale,
    )
