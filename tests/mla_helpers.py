"""Running an MLA kernel on a workload with poisoned outputs, and its float64 reference; a
runner's launch recorded instead of made (CPU tests)."""

from __future__ import annotations

import numpy as np

from kgen.mla.workload import Workload

from .reference import mla_reference


def reference_for(w: Workload):
    spec = w.spec
    mask = {"none": None, "causal": "causal"}.get(spec.mask)
    if spec.mask == "tree":
        mask = w.mask.cpu().numpy()
    return mla_reference(
        w.q.double().cpu().numpy(),
        w.cache_values().double().cpu().numpy(),
        w.block_table.cpu().numpy(),
        w.seq_lens.cpu().numpy(),
        mask,
        w.scale,
        spec.latent_dim,
    )


def run_poisoned(kernel, w: Workload, **kwargs):
    """Call the kernel with out and lse pre-filled with NaN, so an unwritten element shows."""
    import torch

    out, lse = w.poisoned_outputs()
    kernel(*w.args(), out=out, lse=lse, **kwargs)
    torch.cuda.synchronize()
    return out, lse


def to_numpy(out, lse):
    return out.double().cpu().numpy(), lse.double().cpu().numpy()


def never_visible(w: Workload) -> np.ndarray:
    """bool [num_pages, page_size]: cache rows no query row of any sequence may read."""
    spec = w.spec
    ps = spec.page_size
    hidden = np.ones(tuple(w.kv_cache.shape[:2]), dtype=bool)
    table, lens = w.block_table.cpu().numpy(), w.seq_lens.cpu().numpy()
    for b, length in enumerate(lens):
        prefix = length - spec.q_len
        seen = np.zeros(length, dtype=bool)
        seen[:prefix] = True
        if spec.mask == "tree":
            rows = w.mask.cpu().numpy()
            rows = rows if rows.ndim == 2 else rows[b]
            seen[prefix:] = rows.any(axis=0)
        else:
            seen[prefix:] = True
        for n in np.flatnonzero(seen):
            hidden[table[b, n // ps], n % ps] = False
    return hidden


class RecordedLaunch:
    """Stands in for a runner's PackedLaunch (monkeypatched over `_packed_launch`): keeps a copy
    of the parameters of each launch, and the stream it went to."""

    def __init__(self, params):
        self.params, self.sent = params, []

    def launch(self, stream: int) -> None:
        p = self.params
        self.sent.append({name: getattr(p, name) for name, _ in p._fields_} | {"stream": stream})
