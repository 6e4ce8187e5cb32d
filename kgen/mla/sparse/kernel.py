"""Build a sparse MLA variant (no GPU needed) and run it on torch tensors."""

from __future__ import annotations

import functools

from kgen.arch import Arch, resolve_arch
from kgen.build import Binary, build_program
from kgen.launch import function_usage
from kgen.mla.sparse.layout import SparseLayout, sparse_layout_for
from kgen.mla.sparse.program import ATTENTION, sparse_program
from kgen.mla.sparse.spec import SparseConfig, SparseSpec
from kgen.resources import Resources


class SparseKernel:
    """One compiled sparse variant: `source`, `cubin`, `resources`; call it with torch tensors."""

    def __init__(
        self,
        spec: SparseSpec,
        config: SparseConfig,
        arch: Arch,
        layout: SparseLayout,
        binary: Binary,
    ):
        self.spec, self.config, self.arch, self.layout, self.binary = (
            spec,
            config,
            arch,
            layout,
            binary,
        )

    @functools.cached_property
    def resources(self) -> Resources:
        """The kernel's registers, shared memory, spills and occupancy on its arch."""
        usage = function_usage(self.binary, ATTENTION)
        return Resources.of(
            ATTENTION, usage, self.arch, self.layout.threads, self.layout.dynamic_smem
        )

    @property
    def source(self) -> str:
        return self.binary.program.source

    @property
    def cubin(self) -> bytes:
        return self.binary.cubin

    def __repr__(self) -> str:
        return (
            f"SparseKernel({self.spec.short_name()}, {self.config.short_name()}, "
            f"splits={self.config.kv_splits}, {self.arch.name}: {self.resources.summary()})"
        )

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
    ):
        """out [B, T, H, 512] (q's dtype) and lse [B, T, H] (float32, natural log): attention of
        each query row over the cache slots its row of `indices` lists (see
        kgen.mla.sparse_attention). A plan for this call's batch is made on first use and kept."""
        from kgen.mla.sparse.runner import SparseRunner

        runner = SparseRunner.cached(self, q, scale)
        return runner.run(q, kv_cache, indices, out=out, lse=lse, validate=validate)


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
