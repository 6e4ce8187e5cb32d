"""The sweep's oracle: MLA attention in float64 on the GPU (the same definition as the NumPy
reference in tests/, which a CPU test holds it to), fast enough for full benchmark shapes."""

from __future__ import annotations

import torch

from kgen.mla.workload import Workload


def visible(w: Workload, b: int, length: int) -> torch.Tensor:
    """bool [T, length]: which positions each query row of sequence b sees."""
    spec = w.spec
    prefix = length - spec.q_len
    seen = torch.zeros(spec.q_len, length, dtype=torch.bool, device=w.q.device)
    seen[:, :prefix] = True
    if spec.mask == "tree":
        rows = w.mask if w.mask.dim() == 2 else w.mask[b]
        seen[:, prefix:] = rows
    elif spec.mask == "causal":
        seen[:, prefix:] = torch.ones(
            spec.q_len, spec.q_len, dtype=torch.bool, device=w.q.device
        ).tril()
    else:
        seen[:, prefix:] = True
    return seen


@torch.no_grad()
def torch_reference(w: Workload) -> tuple[torch.Tensor, torch.Tensor]:
    """out [B, T, H, latent] and lse [B, T, H], float64, on w's device."""
    spec = w.spec
    q, kv = w.q.double(), w.cache_values().double()
    out = torch.zeros(
        w.batch, spec.q_len, spec.heads, spec.latent_dim, dtype=torch.float64, device=q.device
    )
    lse = torch.full(
        (w.batch, spec.q_len, spec.heads), float("-inf"), dtype=torch.float64, device=q.device
    )
    lens = w.seq_lens.tolist()
    for b, length in enumerate(lens):
        pages = w.block_table[b, : -(-length // spec.page_size)].long()
        keys = kv[pages].reshape(-1, spec.head_dim)[:length]  # gathered, in order
        logits = w.scale * torch.einsum("thd,nd->thn", q[b], keys)
        logits = logits.masked_fill(~visible(w, b, length)[:, None, :], float("-inf"))
        m = logits.amax(dim=-1, keepdim=True)
        seen = m != float("-inf")
        m = torch.where(seen, m, torch.zeros_like(m))
        p = torch.exp(logits - m)
        total = p.sum(dim=-1, keepdim=True)
        out[b] = torch.where(seen, (p @ keys[:, : spec.latent_dim]) / total, 0.0)
        lse[b] = torch.where(seen, m + torch.log(total), float("-inf"))[..., 0]
    return out, lse
