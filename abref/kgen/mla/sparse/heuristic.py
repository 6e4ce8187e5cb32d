"""The default sparse design point (no tuned one exists yet): a rule of thumb over the layout
model, so it respects the arch's shared memory (sm_120: 99 KB per block) and register file.

For an fp8 cache, the dequantization in registers with 32-row tiles, else 16-row ones, else (and
for a bf16 cache) the deepest cp.async pipeline of 16-row tiles; for each, the most heads per
block up to two m16 tiles (BLOCK_H <= 32: a gathered tile serves 32 heads), then fewer, never
fewer than 16 where there are 16 (a padded m16 tile); 8 warps past 16 heads. Of those, the first
that leaves 8 warps per SM resident (sm_120: a 4-warp block must share its SM) and whose grid,
with splits of two tiles, reaches half the SMs (small batches: 16-head blocks rather than idle
SMs); then as many splits of the top-k list as one wave of blocks holds, at least two tiles each
unless that leaves over half the SMs idle; the PDL merge wherever the arch has it; and the split
softmax where a split holds at least SPLIT_SOFTMAX_TILES tiles.

Measured on the H200 (sweep of the ten sparse grid cases, 2026-11-30,
bench/results/h200-2026-11-30k-sparse): register dequantization won every case, the old default
(shared, 4 stages) was 14-63% slower than each winner; at B = 1 the winners fill the SMs, one
block each, with 1-2 tiles per split (H = 64: 16-head blocks x 32 splits 16.7 us, 32-head blocks
x 32 splits 19.1, x 64 splits 18.6; H = 16: 64-128 splits of one tile 15.1-15.2 us, 32 splits 16.0).
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
MIN_TILES_PER_SPLIT = 2  # shorter splits cost more in pipeline fill and combine than they add,
# unless the grid leaves over half the SMs idle without them
SPLIT_LIMIT = 64  # the default's own cap (kgen.mla.spec.MAX_SPLITS bounds any config)
SPLIT_SOFTMAX_TILES = 4  # tiles per split from which the split softmax pays for its barrier


def _pipelines(spec: SparseSpec) -> list[tuple[str, int, int]]:
    """(dequant, smem_stages, block_n), best first."""
    shared = [("shared", stages, 16) for stages in (4, 3, 2)]
    registers = [("registers", 2, 32), ("registers", 2, 16)] if spec.kv_format == "fp8" else []
    return registers + shared


def _candidates(spec: SparseSpec):
    """Best first: each pipeline with the most heads per block, then fewer."""
    least = min(16, spec.heads)  # a padded m16 tile only where there are fewer than 16 heads
    divisors = [d for d in range(spec.heads, least - 1, -1) if spec.heads % d == 0]
    head_counts = [d for d in divisors if math.ceil(d / 16) <= MAX_M_TILES]
    for dequant, stages, block_n in _pipelines(spec):
        for hpb in head_counts:
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
    """The first candidate that fits `arch` with MIN_WARPS_PER_SM resident and fills half the SMs
    (else the first with those warps, else the first that fits), then as many splits of the top-k
    list as one wave of blocks holds, and no more."""
    fitting = []
    for config in _candidates(spec):
        try:
            layout = sparse_layout_for(spec, config, arch)
        except ConfigError:
            continue
        if layout.registers_estimate <= REGISTER_LIMIT:
            fitting.append((config, layout))
    if not fitting:
        raise ConfigError(f"no default sparse config fits {spec.short_name()} on {arch.name}")

    def warps(layout) -> int:
        occupancy = arch.occupancy(layout.threads, layout.registers_estimate, layout.dynamic_smem)
        return occupancy.warps_per_sm

    resident = [(c, lay) for c, lay in fitting if warps(lay) >= MIN_WARPS_PER_SM] or fitting
    filling = [(c, lay) for c, lay in resident if 2 * _most_blocks(spec, batch, c) >= sm_count]
    config, layout = (filling or resident)[0]
    occupancy = arch.occupancy(layout.threads, layout.registers_estimate, layout.dynamic_smem)
    wave = sm_count * max(1, occupancy.blocks_per_sm)  # blocks resident at once
    blocks = _blocks(spec, batch, config)
    most = _most_splits(spec, config)
    if 2 * blocks * most < sm_count:  # splits of one tile rather than idle SMs
        most = math.ceil(spec.topk / config.block_n)
    # As kgen.mla.heuristic: as many splits as fit in one wave, never more; a few blocks past a
    # wave cost a second one (measured on the dense family, H200 sweep 2026-11-30d: 4 splits of
    # 32 blocks on 132 SMs 145 us, 5 splits 241 us).
    splits = min(most, max(1, wave // blocks), SPLIT_LIMIT)
    # The split-KV merge in a kernel of its own wherever the arch has it, as the dense default:
    # on the H200 the ten sparse grid cases' defaults took 1-13% less time with it, on the H200's
    # own defaults and on sm_120's at sm_120's occupancy (bench/RESULTS.md, twentieth session);
    # with one split there is no merge, and the kernel without the fused merge's code is still
    # 1% faster.
    pdl = int(arch.has_pdl)
    config = SparseConfig(**{**config.to_dict(), "kv_splits": splits, "pdl_combine": pdl})
    # The softmax split between a row group's warps (one barrier more per tile, a quarter of the
    # exponentials and partial-score loads per warp): measured on the H200 at sm_120's occupancy,
    # 0.4-7% faster on the seven grid cases whose splits hold 16-128 tiles, 0.4-1.1% slower on the
    # three B = 1 ones (splits of 2 tiles; bench/RESULTS.md, twenty-first session).
    tiles = math.ceil(math.ceil(spec.topk / config.block_n) / splits)
    if tiles >= SPLIT_SOFTMAX_TILES:
        split = SparseConfig(**{**config.to_dict(), "split_softmax": 1})
        try:
            sparse_layout_for(spec, split, arch)  # its P buffer must fit too
            config = split
        except ConfigError:
            pass
    return config


def _blocks(spec: SparseSpec, batch: int, config: SparseConfig) -> int:
    """Blocks of one split: one per query token and head group."""
    return max(1, batch * spec.q_len * (spec.heads // config.heads_per_block))


def _most_splits(spec: SparseSpec, config: SparseConfig) -> int:
    """Splits of the top-k list with MIN_TILES_PER_SPLIT tiles each (at least one split)."""
    return max(1, math.ceil(spec.topk / config.block_n) // MIN_TILES_PER_SPLIT)


def _most_blocks(spec: SparseSpec, batch: int, config: SparseConfig) -> int:
    """Blocks of the grid with splits of MIN_TILES_PER_SPLIT tiles."""
    return _blocks(spec, batch, config) * _most_splits(spec, config)
