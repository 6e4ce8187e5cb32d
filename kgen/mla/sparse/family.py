"""The sparse top-k MLA family as the framework sees it (kgen.mla.family): its SparseSpec and
SparseConfig, layout planner, program, kernel type, tuning bucket and default (the rule table
of kgen.mla.sparse.heuristic); and `build_sparse`, its variant compiled."""

from __future__ import annotations

from kgen.arch import Arch
from kgen.mla.family import Family, power_of_two_at_least
from kgen.mla.sparse.heuristic import default_sparse_config
from kgen.mla.sparse.kernel import SparseKernel
from kgen.mla.sparse.layout import sparse_layout_for
from kgen.mla.sparse.program import sparse_program
from kgen.mla.sparse.spec import SparseConfig, SparseSpec


def sparse_bucket(batch: int, topk: int) -> str:
    """Sparse shape bucket: batch and top-k, each rounded up to a power of two."""
    return f"b{power_of_two_at_least(batch)}_k{power_of_two_at_least(topk)}"


SPARSE = Family(
    name="sparse",
    spec_type=SparseSpec,
    config_type=SparseConfig,
    kernel_type=SparseKernel,
    layout=sparse_layout_for,
    program=sparse_program,  # the same for every topk: topk is a launch parameter
    bucket=lambda spec, batch, max_len: sparse_bucket(batch, spec.topk),
    default=lambda spec, batch, max_len, arch, sm_count: default_sparse_config(
        spec, batch, arch, sm_count
    ),
    bucket_fields=("topk",),
)


def build_sparse(
    spec: SparseSpec, config: SparseConfig, arch: str | Arch = "sm_120"
) -> SparseKernel:
    """Compile (or fetch from the cache) one sparse variant for `arch`; no GPU needed unless
    'native'. An unworkable config raises SparseConfigError before anything is compiled."""
    return SPARSE.build(spec, config, arch)
