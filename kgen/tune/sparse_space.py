"""The design space of one sparse MLA spec: which SparseConfigs a sweep compiles, and which split
counts of the top-k list it times. Pruning uses sparse_layout_for, so a config the layout model
refuses (over 99 KB of shared memory on sm_120, a warp grid that cannot split the rows) never
reaches the compiler."""

from __future__ import annotations

import math
from dataclasses import dataclass

from kgen.arch import Arch
from kgen.mla import SparseConfig, SparseSpec
from kgen.mla.rules import allows
from kgen.mla.sparse.heuristic import entries
from kgen.mla.spec import MAX_SPLITS, head_groups_of
from kgen.tune.space import Case, Pruned, refuse_or_keep

# (smem_stages, block_n) of the cp.async gather pipeline (dequant="shared", and every bf16
# cache): 16-row tiles two to four deep, 32-row tiles two or three deep, one 64-row pair.
SHARED_TILES = ((2, 16), (3, 16), (4, 16), (2, 32), (3, 32), (2, 64))
REGISTER_TILES = (16, 32)  # block_n of dequant="registers" (always two dequantized tiles)


@dataclass(frozen=True)
class SparseAxes:
    """Values tried per axis of the sparse family; heads_per_block None: every divisor of H from
    16 up (fewer rows leave an m16 tile part empty), or every divisor where H < 16."""

    heads_per_block: tuple[int, ...] | None = None
    num_warps: tuple[int, ...] = (4, 8)
    col_groups: tuple[int, ...] = (2, 4, 8)
    shared_tiles: tuple[tuple[int, int], ...] = SHARED_TILES
    register_tiles: tuple[int, ...] = REGISTER_TILES
    gather_bytes: tuple[int, ...] = (8, 16)
    dequant: tuple[str, ...] = ("shared", "registers")
    min_blocks: tuple[int, ...] = (0, 1)
    merge: tuple[str, ...] = ("fused",)  # opt-in (kgen sweep --merge fused pdl): sm_90 and later
    softmax: tuple[str, ...] = ("warp", "split")


# The compact space of `kgen sweep --space` (kgen.tune.space.SPACES): every shipped winner and
# heuristic default dequantizes fp8 in registers and takes 4 or 8 column groups.
COMPACT_SPARSE_AXES = SparseAxes(dequant=("registers",), col_groups=(4, 8))


def enumerate_sparse_configs(spec: SparseSpec, axes: SparseAxes = SparseAxes()) -> list:
    """Every combination of the axes that kgen.mla.rules allows (kv_splits left at 1: a launch
    parameter). dequant applies to an fp8 cache; a bf16 cache is gathered into shared memory."""
    divisors = [d for d in range(1, spec.heads + 1) if spec.heads % d == 0]
    hpbs = axes.heads_per_block or tuple(d for d in divisors if d >= 16 or spec.heads < 16)
    dequants = axes.dequant if spec.format.quantized else ("shared",)
    pipelines = [("shared", st, n) for st, n in axes.shared_tiles] * ("shared" in dequants)
    pipelines += [("registers", 2, n) for n in axes.register_tiles] * ("registers" in dequants)
    configs = [
        SparseConfig(
            heads_per_block=h,
            num_warps=w,
            col_groups=c,
            smem_stages=st,
            block_n=n,
            gather_bytes=g,
            dequant=d,
            min_blocks=b,
            merge=m,
            softmax=f,
        )
        for h in hpbs
        for w in axes.num_warps
        for c in axes.col_groups
        for d, st, n in pipelines
        for g in axes.gather_bytes
        for b in axes.min_blocks
        for m in axes.merge
        for f in axes.softmax
    ]
    return [config for config in configs if allows(spec, config)]


def prune_sparse(
    spec: SparseSpec, configs: list, arch: Arch, also_fit: tuple[Arch, ...] = ()
) -> Pruned:
    """As kgen.tune.space.prune, with the sparse layout model."""
    from kgen.mla import sparse_layout_for

    return refuse_or_keep(spec, configs, arch, also_fit, sparse_layout_for)


def sparse_split_candidates(
    case: Case, config: SparseConfig, sm_count: int, blocks_per_sm: int = 2, max_candidates: int = 4
) -> list[int]:
    """Splits of the top-k list (the V4 op's two lists joined) worth timing: the most that fill
    every SM's `blocks_per_sm` block slots in one wave (the compiled kernel's occupancy, as for
    the dense family: a count past it leaves a tail wave), twice, half and a quarter of it; never
    more splits than gather tiles, nor than MAX_SPLITS (the combine's cap: a count past it is cut
    to it). Where twice the wave is past the tiles (small batches), also a half, a quarter and an
    eighth of the tiles. Counts that cut the list into the same number of tiles per split launch
    the same work and are timed once (as the count of non-empty splits)."""
    spec = case.spec
    blocks = case.batch * spec.q_len * head_groups_of(spec, config)
    tiles = max(1, math.ceil(entries(spec) / config.block_n))  # both lists of the V4 op
    wave = max(1, blocks_per_sm * sm_count // blocks)
    wanted = {1, max(1, wave // 4), max(1, wave // 2), wave, 2 * wave}
    if 2 * wave > tiles:
        wanted |= {min(s, tiles) for s in wanted} | {tiles // 2, tiles // 4, tiles // 8}
    wanted = {min(s, MAX_SPLITS) for s in wanted}
    options = sorted({-(-tiles // -(-tiles // s)) for s in wanted if 1 <= s <= tiles})
    return options[-max_candidates:]
