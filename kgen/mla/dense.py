"""The dense MLA family (decode and draft-tree verify over a paged cache) as the framework sees
it (kgen.mla.family): its Spec and Config, layout planner, program, kernel type, tuning bucket
and default; and `build`, its variant compiled.

The default is the heuristic's rule table (kgen.mla.heuristic) checked against the compiled
kernel: the layout model only estimates registers, and NVRTC versions differ (on the H200 one
variant took 167 registers with one and 173 with another, so 3 blocks per SM became 2 and the
default's splits ran in two waves, 40% slower), so the splits are refit to the compiled kernel's
blocks per SM, and a candidate whose kernel spills is passed over.
"""

from __future__ import annotations

import dataclasses
import warnings

from kgen.arch import Arch
from kgen.mla import heuristic
from kgen.mla.family import Family, PerformanceWarning, power_of_two_at_least
from kgen.mla.kernel import MLAKernel
from kgen.mla.layout import ConfigError, layout_for
from kgen.mla.program import mla_program
from kgen.mla.spec import Config, Spec


def bucket(batch: int, max_len: int) -> str:
    """Shape bucket: batch and sequence capacity, each rounded up to a power of two."""
    return f"b{power_of_two_at_least(batch)}_l{power_of_two_at_least(max_len)}"


def compiled_default(spec: Spec, batch: int, max_seq_len: int, arch: Arch, sm_count: int) -> Config:
    """The heuristic default, its KV splits refit to the blocks per SM of its compiled kernel.
    The cubin does not depend on the split count, so this compiles nothing the call would not,
    except where a candidate's kernel spills: it is passed over for the next (ptxas may cap an
    8-warp FMA block at 128 registers and spill, as for float32 blocks of 9-12 rows on sm_120 and
    sm_90), so that no default spills."""

    spills: dict[Config, int] = {}

    def spill_free(config: Config) -> bool:  # (built, or found in the cache)
        spills[config] = build(spec, config, arch).resources.spills
        return spills[config] == 0

    try:
        config = heuristic.default_config(
            spec, batch, max_seq_len, arch, sm_count, accept=spill_free
        )
    except ConfigError:
        if not spills:
            raise
        # Every candidate spills: the one that spills least, rather than no kernel at all.
        least = min(spills, key=spills.get)
        config = heuristic.default_config(
            spec, batch, max_seq_len, arch, sm_count, accept=lambda config: config == least
        )
        warnings.warn(
            f"kgen: no default config for {spec.short_name()} on {arch.name} compiles without "
            f"spills; {config.short_name()} spills least ({spills[least]} B)",
            PerformanceWarning,
            stacklevel=2,
        )
    return refit_splits(spec, config, batch, max_seq_len, arch, sm_count)


def refit_splits(
    spec: Spec, config: Config, batch: int, max_seq_len: int, arch: Arch, sm_count: int
) -> Config:
    """`config` with as many KV splits as one wave of its compiled kernel's blocks holds."""
    blocks_per_sm = build(spec, config, arch).resources.occupancy.blocks_per_sm
    splits = heuristic.one_wave_splits(spec, config, batch, max_seq_len, blocks_per_sm, sm_count)
    return dataclasses.replace(config, kv_splits=splits)


DENSE = Family(
    name="dense",
    spec_type=Spec,
    config_type=Config,
    kernel_type=MLAKernel,
    layout=layout_for,
    program=mla_program,
    bucket=lambda spec, batch, max_len: bucket(batch, max_len),
    default=compiled_default,
)


def build(spec: Spec, config: Config, arch: str | Arch = "sm_120") -> MLAKernel:
    """Compile (or fetch from the cache) one variant for `arch`; no GPU needed unless 'native'."""
    return DENSE.build(spec, config, arch)
