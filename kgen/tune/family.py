"""What the sweep needs of a kernel family, in one record per family: the framework's family
(kgen.mla.families: spec and config types, build, tuning bucket, heuristic default) plus the
sweep's own pieces (the design space it enumerates and prunes, the split counts it times). The
sweep's logic (compile, check, time, rank, record) is the same for every family. No torch here:
the GPU side of a trial is in kgen.tune.trials."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kgen.arch import Arch
from kgen.mla import families
from kgen.mla.family import Family as MLAFamily
from kgen.tune.space import Case, enumerate_configs, prune, split_candidates
from kgen.tune.sparse_space import enumerate_sparse_configs, prune_sparse, sparse_split_candidates


@dataclass(frozen=True)
class Family:
    core: MLAFamily  # what the framework knows of the family
    enumerate: Callable  # (spec, SweepOptions) -> configs
    prune: Callable  # (spec, configs, arch, also_fit) -> Pruned
    # kv_splits worth timing, given the SMs and the compiled kernel's blocks per SM
    splits: Callable[[Case, object, int, int], list[int]]
    held_to_no_spills: Callable[[object], bool]  # what a shipped winner must compile without

    @property
    def name(self) -> str:
        return self.core.name

    @property
    def entry_point(self) -> str:
        """The attention kernel's name in the cubin."""
        return self.core.kernel_type.ENTRY

    @property
    def config_type(self) -> type:
        return self.core.config_type

    def build(self, spec, config, arch):
        """(spec, config, arch) -> a kernel with .resources, .cubin, .binary, .layout"""
        return self.core.build(spec, config, arch)

    def default(self, case: Case, arch: Arch, sms: int):
        """The heuristic's config for (case, arch, SMs)."""
        return self.core.default(case.spec, case.batch, case.max_len, arch, sms)

    def bucket(self, case: Case) -> str:
        """The tuning database's shape bucket."""
        return self.core.bucket(case.spec, case.batch, case.max_len)


DENSE = Family(
    core=families.FAMILIES["dense"],
    enumerate=lambda spec, options: enumerate_configs(spec, options.axes),
    prune=prune,
    splits=split_candidates,
    held_to_no_spills=lambda config: config.compute in ("mma", "tiled"),  # the FMA path is not
)

SPARSE = Family(
    core=families.FAMILIES["sparse"],
    enumerate=lambda spec, options: enumerate_sparse_configs(spec, options.sparse_axes),
    prune=prune_sparse,
    splits=sparse_split_candidates,
    held_to_no_spills=lambda config: True,
)

FAMILIES = {f.name: f for f in (DENSE, SPARSE)}


def family_of(spec) -> Family:
    """The family of a Spec or SparseSpec."""
    return FAMILIES[families.family_of(spec).name]
