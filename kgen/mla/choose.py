"""config='auto': the tuned config for this GPU and shape bucket, else the heuristic default.
The one place a config is chosen. It only looks things up and compiles (or finds in the cache)
the kernel the call runs anyway, never benchmarks, so it is safe inside CUDA-graph capture."""

from __future__ import annotations

import dataclasses
import functools
import warnings

from kgen import device
from kgen.arch import Arch, resolve_arch, usual_sm_count
from kgen.compiler import nvrtc_version
from kgen.mla import heuristic
from kgen.mla.kernel import build
from kgen.mla.layout import ConfigError
from kgen.mla.spec import Config, Spec
from kgen.mla.tuning import bucket, find_tuned


class PerformanceWarning(UserWarning):
    """The config kgen chose is known to run below what the shape could (it spills)."""


@functools.lru_cache(maxsize=4096)
def choose_config(spec: Spec, batch: int, max_seq_len: int, index: int) -> Config:
    """The config for `batch` sequences of up to `max_seq_len` positions on GPU `index`."""
    arch = resolve_arch("native", index)
    found = find_tuned(
        device.name(index), arch.name, spec, bucket(batch, max_seq_len), nvrtc_version()
    )
    if found.config is not None:
        return found.config
    return compiled_default(spec, batch, max_seq_len, arch, device.sm_count(index))


def default_config(
    spec: Spec,
    arch: str | Arch = "sm_120",
    batch: int = 1,
    max_seq_len: int = 16384,
    sm_count: int | None = None,
) -> Config:
    """The config `config="auto"` runs for `spec` on `arch` where no tuned entry exists (every
    card kgen has no tuning database for): no GPU needed, so a user sees what would run on their
    card. `sm_count` defaults to the arch's usual card (kgen.arch.USUAL_SM_COUNT); the KV splits
    fill one wave of its blocks."""
    arch = resolve_arch(arch)
    if not isinstance(spec, Spec):
        raise TypeError(f"spec: expected kgen.mla.Spec, got {type(spec).__name__}")
    for name, value, low in (("batch", batch, 1), ("max_seq_len", max_seq_len, spec.q_len)):
        if not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    sms = usual_sm_count(arch) if sm_count is None else sm_count
    return compiled_default(spec, batch, max_seq_len, arch, sms)


def compiled_default(spec: Spec, batch: int, max_seq_len: int, arch: Arch, sm_count: int) -> Config:
    """The heuristic default, its KV splits refit to the blocks per SM of its compiled kernel.
    The layout model only estimates registers, and NVRTC versions differ: on the H200 one
    variant took 167 registers with one and 173 with another, so 3 blocks per SM became 2 and the
    default's splits ran in two waves, 40% slower. The cubin does not depend on the split count,
    so this compiles nothing the call would not, except where a candidate's kernel spills: it is
    passed over for the next (ptxas may cap an 8-warp FMA block at 128 registers and spill, as
    for float32 blocks of 9-12 rows on sm_120 and sm_90), so that no default spills."""

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
