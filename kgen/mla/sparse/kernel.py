"""A compiled sparse MLA variant, called with torch tensors (kgen.mla.build_sparse makes one)."""

from __future__ import annotations

from kgen.mla.compiled import CompiledKernel
from kgen.mla.sparse.program import ATTENTION


class SparseKernel(CompiledKernel):
    """One compiled sparse variant: `source`, `cubin`, `resources`; call it with torch tensors."""

    ENTRY = ATTENTION

    def __call__(
        self,
        q,
        kv_cache,
        indices,
        scale: float | None = None,
        *,
        out=None,
        lse=None,
        validate: bool = False,
        **lists,
    ):
        """out [B, T, H, 512] (q's dtype) and lse [B, T, H] (float32, natural log): attention of
        each query row over the cache slots its row of `indices` lists (see
        kgen.mla.sparse_attention; `lists`: the V4 op's lengths, sink and second cache, as
        runner.run takes them). A plan for this call's batch is made on first use and kept."""
        from kgen.mla.sparse.runner import SparseRunner

        runner = SparseRunner.cached(self, q, scale)
        return runner.run(q, kv_cache, indices, out=out, lse=lse, validate=validate, **lists)

    def runner(self, batch: int, device: int, scale: float | None = None):
        """A SparseRunner of this kernel for `batch` sequences on CUDA device `device`
        (kgen.mla.plan_sparse chooses the kernel too)."""
        import torch

        from kgen.mla.sparse.runner import SparseRunner

        return SparseRunner(self, batch, torch.device("cuda", device), scale)
