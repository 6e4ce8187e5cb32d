"""The default design point when no tuned one exists: a rule of thumb over the layout models.

16-bit dtypes take the tensor-core path; float32 stays on CUDA cores (no TF32: its tolerance is
1e-5), on the register-tiled path where a block holds at least 32 of its 64 rows, else the
GEMV-style FMA path. Every candidate goes through `layout_for` for the target arch, so the
default respects its shared memory (sm_120: 99 KB per block) and stays under its register file.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import replace

from kgen.arch import Arch
from kgen.mla.layout import ConfigError, layout_for
from kgen.mla.mma_layout import THREE_ROW_WARPS, three_row_config
from kgen.mla.spec import Config, Spec, head_groups_of
from kgen.mla.tiled_layout import tiled_config, tiled_heads

ROWS_PER_WARP_TARGET = 4  # FMA: q.k and p.v registers stay well under the 255 limit
MMA_MAX_M_TILES = 2  # rows per block the tensor-core default amortises a KV tile over
MMA_REGISTER_TARGET = 200
MIN_TILES_PER_SPLIT = 2
MMA_MIN_SPLIT_POSITIONS = 128  # shorter splits cost more in pipeline fill and combine than they add
FEW_BLOCKS_PER_SM = 8  # under 1/8 block per SM before splitting: 8-warp blocks win (batch 1)


def widest_vec(spec: Spec) -> int:
    vec = 16 // spec.elem_bytes
    while spec.latent_dim % vec or spec.rope_dim % vec:
        vec //= 2
    return vec


def _divisors_descending(n: int) -> list[int]:
    return sorted((d for d in range(1, n + 1) if n % d == 0), reverse=True)


def _mma_shapes(
    spec: Spec, batch: int, sm_count: int, max_m_tiles: int = MMA_MAX_M_TILES, min_blocks: int = 1
):
    """From the H200 sweeps (bench/RESULTS.md, 2026-11-30): up to two m16 tiles of rows per block
    (the most heads that give at most 32 rows). Two tiles: 8 warps, 2 row groups x 4 column
    groups, 32-position tiles two deep. One tile: 4 warps with a quarter of the output columns
    each, 16-position tiles three deep; where there are few blocks before splitting (batch 1), an
    8-warp block of 8 column groups and 32-position tiles next. Every shape splits the softmax
    between the column groups: in the eleventh session's H200 sweeps, without q.K ahead, that was
    as fast or faster than each warp's whole softmax in 609 of 619 pairs of otherwise equal configs
    and splits (median 4-16% faster by warps and stages; at worst 1.4% slower).
    Shallower pipelines follow, so that two blocks can share an SM where shared memory is short
    (sm_120: 100 KB per SM). `min_blocks` as given (1, the default: registers as needed, no
    spills)."""
    for hpb in _divisors_descending(spec.heads):
        m_tiles = math.ceil(spec.q_len * hpb / 16)
        if m_tiles > max_m_tiles:
            continue
        few_blocks = batch * (spec.heads // hpb) * FEW_BLOCKS_PER_SM < sm_count
        if m_tiles == 2:
            shapes = [(8, 4, 2, 32), (8, 4, 3, 16), (8, 4, 2, 16)]
        elif few_blocks:
            shapes = [(4, 4, 3, 16), (8, 8, 2, 32), (4, 4, 2, 16)]
        else:
            shapes = [(4, 4, 3, 16), (4, 4, 2, 16)]
        for warps, cols, stages, block_n in shapes:
            yield Config(
                heads_per_block=hpb,
                vec_width=16 // spec.elem_bytes,
                smem_stages=stages,
                num_warps=warps,
                block_n=block_n,
                compute="mma",
                col_groups=cols,
                min_blocks=min_blocks,
                split_softmax=1,
            )


def _blocks_per_sm(arch: Arch, smem: int) -> int:
    return arch.smem_per_sm // (smem + arch.smem_reserved_per_block)


def _fma_candidates(spec: Spec, arch: Arch):
    vec = widest_vec(spec)
    # Short tiles in a deep cp.async pipeline won most H200 sweeps (bench/RESULTS.md).
    stages, block_n = (3, 16) if vec * spec.elem_bytes >= 4 else (1, 16)
    while stages * block_n * spec.head_dim * spec.elem_bytes > arch.smem_per_block and stages > 2:
        stages -= 1
    for hpb in _divisors_descending(spec.heads):
        rows = spec.q_len * hpb
        warps = 8 if rows > 2 * ROWS_PER_WARP_TARGET else 4
        if math.ceil(rows / warps) > ROWS_PER_WARP_TARGET and hpb > 1:
            continue
        # then the same rows on 4 warps, for where ptxas caps the 8-warp block's registers and
        # spills (compiled_default passes such a candidate over)
        four = warps == 8 and math.ceil(rows / 4) <= ROWS_PER_WARP_TARGET
        for w in (warps, 4) if four else (warps,):
            config = Config(
                heads_per_block=hpb, vec_width=vec, smem_stages=stages, num_warps=w, block_n=block_n
            )
            yield config, 0  # (config, the blocks per SM it must reach: any)


def _mma_candidates(spec: Spec, arch: Arch, batch: int, sm_count: int):
    """(config, the blocks per SM it must reach), most wanted first. First, 4-warp blocks of one
    m16 tile of rows with 16-position tiles three deep, where three share an SM (228 KB of shared
    memory: the H200; not sm_120's 100 KB or sm_80's 164 KB): in the eleventh session's H200
    sweeps they beat the 8-warp two-tile blocks on every H >= 64 and verify case, 5-11% (12 warps
    per SM against 8); registers as ptxas fits three blocks (min_blocks 0: 168 there, no spills).
    Then, where those do not fit, one 12-warp block of three row groups (_three_row_groups); then
    the shapes of _mma_shapes, two blocks per SM. Verification whose m16 tile those 4-warp blocks
    would pad by a quarter or more (PADDED_TILE: q_len 3, 6, 12 hold 12 rows of 16) takes the
    three-row block first, wherever it fits: on the H200, three 4-warp blocks an SM against it,
    12-17% faster on four such shapes, and 5-6% slower on two of unpadded tiles (q_len 4 and 16;
    thirty-fifth session, bench/RESULTS.md)."""
    ones = list(_mma_shapes(spec, batch, sm_count, max_m_tiles=1, min_blocks=0))
    three = _three_row_groups(spec, arch)
    padded = spec.q_len > 1 and bool(ones) and _padding(spec, ones[0]) >= PADDED_TILE
    if three is not None and padded:
        yield three, 1
    for config in ones:
        if config.smem_stages >= 3:
            yield config, 3
    if three is not None and not padded:
        yield three, 1
    for config in _mma_shapes(spec, batch, sm_count):
        yield config, 2


PADDED_TILE = 0.25  # the share of a block's m16 rows left as padding that a three-row block beats


def _padding(spec: Spec, config: Config) -> float:
    """The share of the rows of `config`'s m16 tiles that are padding."""
    rows = spec.q_len * config.heads_per_block
    return 1 - rows / (16 * math.ceil(rows / 16))


THREE_ROWS = 48  # the rows of a three-row-group block: three m16 tiles
# Where 48 / q_len heads do not divide H, the last head group is ragged: at most this share of the
# blocks' rows may be idle (measured at sm_120's occupancy, thirty-fifth session: 3% idle
# rows, H = 32 and 64, gained 8-10%; 12.5%, H = 8 and 16, gained nothing or lost 11%).
THREE_ROW_MAX_IDLE = 0.05
# The least the three-row block gained over two 4-warp blocks an SM where both grids filled the
# SMs alike (8.4%, H = 32 verification: thirty-fifth session); where one wave of it (one block an
# SM) fills fewer SMs than theirs by more than that, the two blocks stay (it lost 23-30% with a
# third of the SMs idle: H = 64, B = 4 and H = 128, B = 8 verification at one split).
THREE_ROW_MIN_GAIN = 1.08


def _three_row_groups(spec: Spec, arch: Arch) -> Config | None:
    """Where three 4-warp blocks do not fit an SM (sm_120's 100 KB, sm_80's 164 KB at three
    stages): one 12-warp block of three 16-row groups on one KV pipeline, 12 warps an SM instead
    of the two 4-warp blocks' 8. Decode: 48 heads a block, only where 48 divides H; measured on
    the H200 (twenty-sixth session, bench/RESULTS.md), against two 4-warp blocks an SM: 10-16%
    faster on four shapes that 48 rows divide (against three, 4-8% slower: so not where three
    fit); ragged, at H = 128 (head groups of 48, 48 and 32, 11% of the rows idle, B = 8 over
    8192 positions), 5% slower (twenty-seventh session). Verification: 48 / q_len heads a block
    (q_len dividing 48), ragged where they do not divide H if at most THREE_ROW_MAX_IDLE of the
    rows idle, four stages: at sm_120's occupancy 8-15% faster on verification of 32-128 heads
    at B = 1 (thirty-fifth session: draft trees of 8 and 16 tokens, 16k-64k positions; 4 stages
    1-2% faster than 2 or 3), and 8-30% faster than the old default on the ten shapes of q_len
    2-16, B = 1-16 that the rule then moved (most where the old block padded its m16 tile:
    q_len 3, 6, 12). default_config takes it only where its wave fills the SMs about as
    well as the two blocks' (THREE_ROW_MIN_GAIN; decode's block, measured where it filled them,
    is taken as it was). Its KV tile ring runs on a barrier a stage (ring_slack 1: row groups up
    to a tile apart, copies two tiles ahead): 1.8-3.0% faster than the block barrier a tile on
    five verification shapes at sm_120's occupancy (thirty-sixth session; slack 2 no better),
    where the arch has the PDL merge it was measured with (sm_90, sm_120): beside the fused
    merge's code it spills (sm_80 / 86 / 89, NVRTC 13.5: 4-8 B in up to a fifth of the
    candidates), so there the block barrier a tile stays. Decode's block takes the ring there
    too, at four stages: at sm_120's occupancy 3.5-6.0% faster than three stages in lock-step on
    six shapes (H = 48 and 96, B = 1-32, 4k-64k positions; four stages in lock-step level with
    three, ring_slack 2 slower; thirty-seventh session), where three stages on the ring spill on
    sm_120 (32 B); without the ring it keeps three stages."""
    ring_slack = 1 if arch.has_pdl else 0
    if spec.q_len == 1:
        if not spec.masks_nothing or spec.heads % THREE_ROWS:
            return None
        return three_row_config(
            THREE_ROWS,
            smem_stages=4 if ring_slack else 3,
            min_blocks=1,
            split_softmax=1,
            ring_slack=ring_slack,
        )
    if THREE_ROWS % spec.q_len or THREE_ROWS // spec.q_len > spec.heads:
        return None
    heads = THREE_ROWS // spec.q_len
    padded = math.ceil(spec.heads / heads) * heads
    if padded - spec.heads > THREE_ROW_MAX_IDLE * padded:
        return None
    return three_row_config(
        heads, smem_stages=4, min_blocks=1, split_softmax=1, ring_slack=ring_slack
    )


TILED_MIN_ROWS = 32  # rows a tiled block must hold of its 64 (below, padding is most of its work)


def _tiled_candidates(spec: Spec):
    """The register-tiled float32 block holding the most heads that give at most 64 rows, where
    they are at least TILED_MIN_ROWS, its steps two deep: on the H200 (bench/RESULTS.md,
    eighteenth session) seed-fp32-verify took 604 us so (q.K^T steps of 64 head dims, the only
    depth whose stages fit sm_120 at that width) against 602 three deep and 1296 on the
    GEMV-style FMA path."""
    fitting = tiled_heads(spec)
    if fitting and spec.q_len * fitting[0] >= TILED_MIN_ROWS:
        yield tiled_config(fitting[0], smem_stages=2), 1


def _first_fitting(spec: Spec, arch: Arch, compute: str, batch: int, sm_count: int, accept):
    """The first candidate under the register limit that reaches its blocks per SM; else the
    first under the limit that asks for at most two. Candidates `accept` refuses are passed over."""
    if compute == "mma":
        candidates = _mma_candidates(spec, arch, batch, sm_count)
    elif compute == "tiled":
        candidates = _tiled_candidates(spec)
    else:
        candidates = _fma_candidates(spec, arch)
    limit = MMA_REGISTER_TARGET if compute == "mma" else arch.max_regs_per_thread
    fallbacks = []
    for config, blocks in candidates:
        try:
            layout = layout_for(spec, config, arch)
        except ConfigError:
            continue
        if layout.registers_estimate > limit:
            continue
        if _blocks_per_sm(arch, layout.dynamic_smem) >= blocks:
            if accept(_with_pdl(config, arch)):
                return config, layout
        elif blocks <= 2:
            fallbacks.append((config, layout))
    # (accepted only now: compiled_default compiles a fallback only where one is returned)
    return next((found for found in fallbacks if accept(_with_pdl(found[0], arch))), None)


def default_config(
    spec: Spec,
    batch: int,
    max_seq_len: int,
    arch: Arch,
    sm_count: int,
    accept: Callable[[Config], bool] = lambda config: True,
) -> Config:
    """The first candidate that fits the arch (tensor cores first for 16-bit dtypes; dims they
    cannot tile fall back to FMA), then as many KV splits as one wave of blocks holds (every SM
    at the occupancy the layout allows), and no more. `accept` may refuse candidates the layout
    model cannot judge (kgen.mla.choose.compiled_default: those whose compiled kernel spills);
    it sees each as it would be returned, but for its KV splits (which change no code)."""
    computes = ("tiled", "fma") if spec.dtype == "float32" else ("mma", "fma")
    for compute in computes:
        found = _first_fitting(spec, arch, compute, batch, sm_count, accept)
        found = found or _first_of_last_resorts(spec, arch, compute, accept)
        if found is not None:
            config, layout = found
            break
    else:
        raise ConfigError(f"no default config fits {spec.short_name()} on {arch.name}")
    shape = (spec, batch, max_seq_len, arch, sm_count)
    if config.compute == "mma" and config.num_warps == THREE_ROW_WARPS and spec.q_len > 1:
        config, layout, splits, fill = _fuller_of_three_or_next(config, layout, shape, accept)
    else:
        splits, fill = _one_wave(config, layout, *shape)
    specialized = _specialized(spec, config, arch) if config.compute == "mma" else None
    if specialized is not None and accept(_with_pdl(specialized[0], arch)):
        # one head group: always (measured); several: where its wave fills the SMs about as well
        ws_splits, ws_fill = _one_wave(*specialized, *shape)
        if config.heads_per_block == spec.heads or SPECIALIZED_MIN_GAIN * ws_fill >= fill:
            (config, layout), splits = specialized, ws_splits
    return replace(_with_pdl(config, arch), kv_splits=splits)


def _last_resorts(spec: Spec, compute: str):
    """Blocks of `compute` for shapes the rules above leave without a config, judged by the
    layout and the compiled kernel alone (their register estimates are no guide): draft rows past
    two m16 tiles (q_len > 32 on the tensor cores: one head a block, in three row groups where
    they hold its rows, else two or four), and shallower FMA pipelines (float32 at one head, one
    token: three stages spill 8 B on sm_90)."""
    if compute == "mma":
        for stages in (4, 3, 2):
            yield three_row_config(1, smem_stages=stages, min_blocks=1, split_softmax=1)
        for warps, stages in itertools.product((8, 16), (3, 2)):
            yield Config(
                heads_per_block=1,
                vec_width=16 // spec.elem_bytes,
                smem_stages=stages,
                num_warps=warps,
                block_n=16,
                compute="mma",
                col_groups=4,
                min_blocks=1,
                split_softmax=1,
            )
        return
    if compute == "tiled":
        return
    vec = widest_vec(spec)
    for hpb in _divisors_descending(spec.heads):
        for warps, stages in itertools.product((4, 8, 16), (2, 1)):
            yield Config(
                heads_per_block=hpb, vec_width=vec, smem_stages=stages, num_warps=warps, block_n=16
            )


def _first_of_last_resorts(spec: Spec, arch: Arch, compute: str, accept):
    """(config, layout) of the first of `_last_resorts` that the arch takes and `accept` passes."""
    for config in _last_resorts(spec, compute):
        try:
            layout = layout_for(spec, config, arch)
        except ConfigError:
            continue
        if accept(_with_pdl(config, arch)):
            return config, layout
    return None


def _fuller_of_three_or_next(config: Config, layout, shape: tuple, accept):
    """The three-row block (one an SM), or the first other candidate (two or three 4-warp
    blocks an SM) where one wave of that fills the SMs' slots better by more than
    THREE_ROW_MIN_GAIN: (config, layout, splits, wave fill). `shape`: (spec, batch, max_seq_len,
    arch, sm_count)."""
    spec, batch, _, arch, sm_count = shape
    splits, fill = _one_wave(config, layout, *shape)
    other = _first_fitting(
        spec, arch, "mma", batch, sm_count, lambda c: c.num_warps != THREE_ROW_WARPS and accept(c)
    )
    if other is not None:
        other_splits, other_fill = _one_wave(*other, *shape)
        if THREE_ROW_MIN_GAIN * fill < other_fill:
            return *other, other_splits, other_fill
    return config, layout, splits, fill


def _one_wave(
    config: Config, layout, spec: Spec, batch: int, max_seq_len: int, arch: Arch, sm_count: int
) -> tuple[int, float]:
    """The default's KV splits for `config` (one_wave_splits, at the layout model's blocks per SM)
    and the share of its waves' block slots that grid fills."""
    blocks = arch.occupancy(layout.threads, layout.registers_estimate, layout.dynamic_smem)
    per_sm = max(1, blocks.blocks_per_sm)
    splits = one_wave_splits(spec, config, batch, max_seq_len, per_sm, sm_count)
    grid, slots = batch * head_groups_of(spec, config) * splits, sm_count * per_sm
    return splits, grid / (math.ceil(grid / slots) * slots)


SPECIALIZED_MAX_HEADS = 16  # decode of at most 16 heads: memory-bound, one m16 tile per block
ONE_SPECIALIZED_BLOCK_SMEM = 100 * 1024  # SMs this small run one specialised block (sm_120's)
# The least the specialised block gained over the one-role default in several head groups at
# sm_120's occupancy, grids filling the SMs alike (3.5%: thirty-fourth session); where one wave of
# it (one block an SM) fills fewer of the SMs than the one-role default's (two an SM) does, by
# more than that, the one-role default stays (sm_120's 188 SMs at B x head groups = 64: 68% of
# them against 85%).
SPECIALIZED_MIN_GAIN = 1.035


def _specialized(spec: Spec, config: Config, arch: Arch):
    """Decode whose block holds at most 16 heads: warps in two roles, 16-position tiles four deep
    (87 KB), (config, layout); None where it does not apply or fit. Measured (bench/RESULTS.md):
    where the block holds all of H <= 16 heads, 2-6% faster than the one-role default on the
    H200, two blocks an SM (seventeenth session), and 4-12% at sm_120's occupancy, one block an
    SM against two of 44 KB (twentieth, bench/sm120_like.py). So: where two fit an SM, or one
    fills an SM of at most sm_120's 100 KB (sm_86 and sm_89 too, unmeasured); not on sm_80
    (164 KB, where one-role blocks of 3 stages fit twice: unmeasured). Decode in several head
    groups takes it only where one block fills the SM: at sm_120's occupancy 3.5-9% faster than
    the one-role default on every shape measured (H = 32-128, B = 1-16, 4k-64k positions, the
    compute-bound ones too; thirty-fourth session), where its grid fills the SMs about as well
    (default_config: SPECIALIZED_MIN_GAIN); on the H200, two blocks an SM against three one-role
    ones, the compute-bound shapes lose a third with it (sixteenth session)."""
    several_groups = config.heads_per_block != spec.heads
    if (
        spec.q_len != 1
        or config.heads_per_block > SPECIALIZED_MAX_HEADS
        or (several_groups and arch.smem_per_sm > ONE_SPECIALIZED_BLOCK_SMEM)
    ):
        return None
    candidate = Config(
        **{
            **config.to_dict(),
            "smem_stages": 4,
            "block_n": 16,
            "num_warps": 8,
            "col_groups": 4,
            "min_blocks": 0,
            "qk_ahead": 0,
            "split_softmax": 1,
            "swap_rows": 0,
            "specialize": 1,
        }
    )
    try:
        layout = layout_for(spec, candidate, arch)
    except ConfigError:
        return None
    one_block = _blocks_per_sm(arch, layout.dynamic_smem) < 2
    if layout.registers_estimate > MMA_REGISTER_TARGET or (
        one_block and arch.smem_per_sm > ONE_SPECIALIZED_BLOCK_SMEM
    ):
        return None
    return candidate, layout


def _with_pdl(config: Config, arch: Arch) -> Config:
    """`config` with the split-KV merge in a kernel of its own (programmatic dependent launch)
    wherever the arch has it (sm_90, sm_120): on the H200 the heuristic defaults of the 13 dense
    16-bit grid cases took 1-12% less time with it on 12 of them and 7% more on
    kimi-tp1-verify-tree (same splits and occupancy; bench/RESULTS.md, seventeenth session)."""
    return replace(config, pdl_combine=int(config.compute == "mma" and arch.has_pdl))


def one_wave_splits(
    spec: Spec, config: Config, batch: int, max_seq_len: int, blocks_per_sm: int, sm_count: int
) -> int:
    """As many KV splits as one wave of blocks holds (`blocks_per_sm` on every SM), never more:
    a few blocks past a wave cost a second one (H200 sweep, 2026-11-30d: 4 splits of 32 blocks on
    132 SMs 145 us, 5 splits 241 us); and no split shorter than is worth its pipeline fill. On
    the tiled path, two whole waves where they fill the SMs better than one: seed-fp32-verify's 8
    blocks a split took 595-596 us at 33 splits (264 blocks, two waves of 132) against 602-605 at
    16 (128 blocks, 4 SMs idle) on the H200 (bench/RESULTS.md, nineteenth session)."""
    wave = sm_count * max(1, blocks_per_sm)  # blocks resident at once
    blocks = max(1, batch * head_groups_of(spec, config))
    shortest = (
        MMA_MIN_SPLIT_POSITIONS if config.compute == "mma" else MIN_TILES_PER_SPLIT * config.block_n
    )
    max_splits = max(1, math.ceil(max_seq_len / shortest))
    splits, two_waves = max(1, wave // blocks), 2 * wave // blocks
    if config.compute == "tiled" and two_waves > 2 * splits:  # two waves fill more slots
        splits = two_waves
    return min(max_splits, splits, 256)
