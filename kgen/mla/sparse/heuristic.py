"""The default sparse design point (no tuned one exists yet): a rule of thumb over the layout
model, so it respects the arch's shared memory (sm_120: 99 KB per block) and register file.

The most heads per block up to two m16 tiles (BLOCK_H <= 32: a gathered tile serves 32 heads),
8 warps past 16 heads; for an fp8 cache, the dequantization in registers with 32-row tiles, else
16-row ones, else (and for a bf16 cache) the deepest cp.async pipeline of 16-row tiles: the first
of those that leaves 8 warps per SM resident (sm_120: a 4-warp block must share its SM); then as
many splits of the top-k list as one wave of blocks holds, and no more. On the H200's sweep of the
ten sparse grid cases (2026-11-30, bench/results/h200-2026-11-30k-sparse) register dequantization
won every case, and the old default (shared, 4 stages) was 14-63% slower than each winner.
"""

from __future__ import annotations

import math

from kgen.arch import Arch
from kgen.mla.layout import ConfigError
from kgen.mla.sparse.layout import sparse_layout_for
from kgen.mla.sparse.spec import SparseConfig, SparseSpec

MAX_M_TILES = 2
REGISTER_LIMIT = 255  # past the estimate's reach of one thread: spills
MIN_WARPS_PER_SM = 8
MIN_TILES_PER_SPLIT = 4  # shorter splits cost more in pipeline fill and combine than they add
SPLIT_LIMIT = 64  # the default's own cap (kgen.mla.spec.MAX_SPLITS bounds any config)


def _pipelines(spec: SparseSpec) -> list[tuple[str, int, int]]:
    """(dequant, smem_stages, block_n), best first."""
    shared = [("shared", stages, 16) for stages in (4, 3, 2)]
    registers = [("registers", 2, 32), ("registers", 2, 16)] if spec.kv_format == "fp8" else []
    return registers + shared


def _candidates(spec: SparseSpec):
    for hpb in sorted((d for d in range(1, spec.heads + 1) if spec.heads % d == 0), reverse=True):
        if math.ceil(hpb / 16) > MAX_M_TILES:
            continue
        for dequant, stages, block_n in _pipelines(spec):
            yield SparseConfig(
                heads_per_block=hpb,
                block_n=block_n,
                smem_stages=stages,
                num_warps=8 if hpb > 16 else 4,
                col_groups=4,
                dequant=dequant,
                min_blocks=1,  # ptxas left alone spills 12 B at hb16 n16 on sm_90 (168 registers)
            )


def default_sparse_config(spec: SparseSpec, batch: int, arch: Arch, sm_count: int) -> SparseConfig:
    """The first candidate that fits `arch` with MIN_WARPS_PER_SM resident (else the first that
    fits), then as many splits of the top-k list as one wave of blocks holds (every SM at the
    occupancy the layout allows), and no more."""
    chosen = fallback = None
    for config in _candidates(spec):
        try:
            layout = sparse_layout_for(spec, config, arch)
        except ConfigError:
            continue
        if layout.registers_estimate > REGISTER_LIMIT:
            continue
        fallback = fallback or (config, layout)
        occupancy = arch.occupancy(layout.threads, layout.registers_estimate, layout.dynamic_smem)
        if occupancy.warps_per_sm >= MIN_WARPS_PER_SM:
            chosen = (config, layout)
            break
    chosen = chosen or fallback
    if chosen is None:
        raise ConfigError(f"no default sparse config fits {spec.short_name()} on {arch.name}")
    config, layout = chosen
    occupancy = arch.occupancy(layout.threads, layout.registers_estimate, layout.dynamic_smem)
    wave = sm_count * max(1, occupancy.blocks_per_sm)  # blocks resident at once
    blocks = max(1, batch * spec.q_len * (spec.heads // config.heads_per_block))
    most = max(1, math.ceil(spec.topk / (MIN_TILES_PER_SPLIT * config.block_n)))
    # As kgen.mla.heuristic: as many splits as fit in one wave, never more; a few blocks past a
    # wave cost a second one (measured on the dense family, H200 sweep 2026-11-30d: 4 splits of
    # 32 blocks on 132 SMs 145 us, 5 splits 241 us).
    splits = min(most, max(1, wave // blocks), SPLIT_LIMIT)
    return SparseConfig(**{**config.to_dict(), "kv_splits": splits})
