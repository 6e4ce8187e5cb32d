"""The default sparse design point (no tuned one exists yet): a rule of thumb over the layout
model, so it respects the arch's shared memory (sm_120: 99 KB per block) and register file.

The most heads per block up to two m16 tiles (BLOCK_H <= 32: the [BLOCK_H x 512] fp32
accumulator stays at 64 floats per thread over 8 warps, and a gathered tile serves 32 heads);
16-row gather tiles in the deepest cp.async pipeline that still leaves 8 warps per SM resident
(sm_120: a 4-warp block must share its SM); then as many splits of the top-k list as one wave
of blocks holds, and no more. Unmeasured: the sweep on a GPU replaces it.
"""

from __future__ import annotations

import math

from kgen.arch import Arch
from kgen.mla.layout import ConfigError
from kgen.mla.sparse.layout import sparse_layout_for
from kgen.mla.sparse.spec import SparseConfig, SparseSpec

MAX_M_TILES = 2
REGISTER_TARGET = 200
MIN_WARPS_PER_SM = 8
MIN_TILES_PER_SPLIT = 4  # shorter splits cost more in pipeline fill and combine than they add
SPLIT_LIMIT = 64  # the default's own cap (kgen.mla.spec.MAX_SPLITS bounds any config)


def _candidates(spec: SparseSpec):
    for hpb in sorted((d for d in range(1, spec.heads + 1) if spec.heads % d == 0), reverse=True):
        if math.ceil(hpb / 16) > MAX_M_TILES:
            continue
        warps = 8 if hpb > 16 else 4
        for stages in (4, 3, 2):
            yield SparseConfig(
                heads_per_block=hpb,
                block_n=16,
                smem_stages=stages,
                num_warps=warps,
                col_groups=4,
                min_blocks=1,
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
        if layout.registers_estimate > REGISTER_TARGET:
            continue
        fallback = fallback or (config, layout)
        blocks = arch.smem_per_sm // (layout.dynamic_smem + arch.smem_reserved_per_block)
        if blocks * config.num_warps >= MIN_WARPS_PER_SM:
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
