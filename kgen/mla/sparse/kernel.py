"""Build a sparse MLA variant (no GPU needed) and run it on torch tensors."""

from __future__ import annotations

import functools

from kgen.arch import Arch, resolve_arch
from kgen.build import build_program
from kgen.mla.compiled import CompiledKernel
from kgen.mla.sparse.layout import sparse_layout_for
from kgen.mla.sparse.program import ATTENTION, sparse_program
from kgen.mla.sparse.spec import SparseConfig, SparseSpec


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


def build_sparse(
    spec: SparseSpec, config: SparseConfig, arch: str | Arch = "sm_120"
) -> SparseKernel:
    """Compile (or fetch from the cache) one sparse variant for `arch`; no GPU needed unless
    'native'. An unworkable config raises SparseConfigError before anything is compiled."""
    if not isinstance(spec, SparseSpec):
        raise TypeError(f"spec: expected kgen.mla.SparseSpec, got {type(spec).__name__}")
    if not isinstance(config, SparseConfig):
        raise TypeError(f"config: expected kgen.mla.SparseConfig, got {type(config).__name__}")
    return _build(spec, config, resolve_arch(arch))


@functools.lru_cache(maxsize=1024)
def _build(spec: SparseSpec, config: SparseConfig, arch: Arch) -> SparseKernel:
    layout = sparse_layout_for(spec, config, arch)
    binary = build_program(sparse_program(spec, config, layout), arch)  # the same for every topk
    return SparseKernel(spec, config, arch, layout, binary)
