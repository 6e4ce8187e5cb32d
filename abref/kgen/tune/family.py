"""What the sweep needs of a kernel family, in one record per family: dense MLA (Spec, Config)
and sparse top-k MLA (SparseSpec, SparseConfig). The sweep's logic (compile, check, time, rank,
record) is the same for both; only these pieces differ. No torch here: the GPU side of a trial
is in kgen.tune.trials."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kgen.arch import Arch
from kgen.mla import Config, SparseConfig, build, build_sparse
from kgen.mla.choose import compiled_default
from kgen.mla.program import ATTENTION
from kgen.mla.sparse.heuristic import default_sparse_config
from kgen.mla.sparse.program import ATTENTION as SPARSE_ATTENTION
from kgen.mla.tuning import bucket, family_of_spec, sparse_bucket
from kgen.tune.space import Case, enumerate_configs, prune, split_candidates
from kgen.tune.sparse_space import enumerate_sparse_configs, prune_sparse, sparse_split_candidates


@dataclass(frozen=True)
class Family:
    name: str
    entry_point: str  # the kernel's name in the cubin
    config_type: type
    build: Callable  # (spec, config, arch) -> a kernel with .resources, .cubin, .binary, .layout
    enumerate: Callable  # (spec, SweepOptions) -> configs
    prune: Callable  # (spec, configs, arch, also_fit) -> Pruned
    default: Callable[[Case, Arch, int], object]  # the heuristic's config for (case, arch, SMs)
    # kv_splits worth timing, given the SMs and the compiled kernel's blocks per SM
    splits: Callable[[Case, object, int, int], list[int]]
    bucket: Callable[[Case], str]  # the tuning database's shape bucket
    held_to_no_spills: Callable[[object], bool]  # what a shipped winner must compile without


DENSE = Family(
    name="dense",
    entry_point=ATTENTION,
    config_type=Config,
    build=build,
    enumerate=lambda spec, options: enumerate_configs(spec, options.axes),
    prune=prune,
    default=lambda case, arch, sms: compiled_default(
        case.spec, case.batch, case.max_len, arch, sms
    ),
    splits=split_candidates,
    bucket=lambda case: bucket(case.batch, case.max_len),
    held_to_no_spills=lambda config: config.compute in ("mma", "tiled"),  # the FMA path is not
)

SPARSE = Family(
    name="sparse",
    entry_point=SPARSE_ATTENTION,
    config_type=SparseConfig,
    build=build_sparse,
    enumerate=lambda spec, options: enumerate_sparse_configs(spec, options.sparse_axes),
    prune=prune_sparse,
    default=lambda case, arch, sms: default_sparse_config(case.spec, case.batch, arch, sms),
    splits=sparse_split_candidates,
    bucket=lambda case: sparse_bucket(case.batch, case.spec.topk),
    held_to_no_spills=lambda config: True,
)

FAMILIES = {f.name: f for f in (DENSE, SPARSE)}


def family_of(spec) -> Family:
    """The family of a Spec or SparseSpec."""
    return FAMILIES[family_of_spec(spec)]
