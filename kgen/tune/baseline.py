"""The plain torch implementation the sweep measures kgen against: gather the paged cache, then
bmm + mask + softmax + bmm, all in the inputs' dtype (what a user without kgen would write). An
fp8 cache is dequantized to q's dtype once, untimed: the baseline is torch on those values."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kgen.mla.workload import Workload
from kgen.tune.reference import visible


@dataclass
class Prepared:
    w: Workload
    pages: torch.Tensor  # int64 [B, pages needed]
    hidden: torch.Tensor  # bool [B, T, 1, L]: positions a row must not see
    length: int
    cache: torch.Tensor  # [pages, page_size, D] in q's dtype


class _TorchMLA:
    @staticmethod
    def prepare(w: Workload) -> Prepared:
        """The per-call-invariant parts: page index and the visibility mask (not timed)."""
        lens = w.seq_lens.tolist()
        length = max(lens)
        pages = w.block_table[:, : -(-length // w.spec.page_size)].long()
        hidden = torch.ones(w.batch, w.spec.q_len, 1, length, dtype=torch.bool, device=w.q.device)
        for b, n in enumerate(lens):
            hidden[b, :, 0, :n] = ~visible(w, b, n)
        return Prepared(w, pages, hidden, length, w.cache_values().to(w.q.dtype))

    def __call__(self, p: Prepared) -> tuple[torch.Tensor, torch.Tensor]:
        w, spec = p.w, p.w.spec
        keys = p.cache[p.pages].reshape(w.batch, -1, spec.head_dim)[:, : p.length]  # gather
        scores = torch.einsum("bthd,bnd->bthn", w.q, keys) * w.scale
        scores = scores.masked_fill(p.hidden, float("-inf"))
        lse = torch.logsumexp(scores.float(), dim=-1)
        probs = torch.softmax(scores, dim=-1)
        out = torch.einsum("bthn,bnd->bthd", probs, keys[..., : spec.latent_dim])
        return out, lse


torch_mla = _TorchMLA()
