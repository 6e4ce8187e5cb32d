"""How a (Spec, Config) pair maps onto a thread block, and whether it can work on an arch.

Everything the template needs beyond Spec and Config is derived here, once; `layout_for` refuses a
combination that cannot work (with the field and the reason) before anything is compiled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kgen.arch import Arch
from kgen.mla.spec import MAX_SPLITS, Config, Spec
from kgen.params import ParamError

CP_ASYNC_BYTES = (4, 8, 16)
MAX_LOAD_BYTES = 16
REGISTER_OVERHEAD = 32  # indices, pointers, loop state: an allowance
Q_REGISTER_BUDGET = 96  # beyond this many registers of q per thread, q is read from shared memory


def combine_smem(threads: int) -> int:
    """Shared memory the fused split-KV combine reuses (templates/mla/combine.cuh): MAX_SPLITS
    float weights, a float4 per thread, three ints."""
    return MAX_SPLITS * 4 + 16 * threads + 16


class ConfigError(ParamError):
    """A Config that cannot work for this Spec on this arch."""


def refuser(spec, config, arch: Arch, error: type[ConfigError] = ConfigError):
    """A function that raises `error` naming a config field, the reason and the setting."""

    def refuse(field: str, reason: str) -> None:
        raise error(
            f"{type(config).__name__}.{field}={getattr(config, field)!r}: {reason} "
            f"(spec {spec.short_name()}, {arch.name})"
        )

    return refuse


def refuse_pdl_below_sm90(config, arch: Arch, refuse) -> None:
    """pdl_combine's refusal (both tensor-core families, the tiled path): griddepcontrol needs
    sm_90 or later."""
    if config.pdl_combine and not arch.has_pdl:
        refuse(
            "pdl_combine",
            "programmatic dependent launch (griddepcontrol) needs sm_90 or later: take 0 (the "
            "merge fused into the attention kernel)",
        )


def refuse_unsplit_softmax(config, refuse) -> None:
    """split_softmax's refusals (both tensor-core families, mla/mma/slices.cuh): the slices share
    one row group's softmax between its column groups, and keep a row's position pairs in one
    warp."""
    if config.split_softmax and config.col_groups == 1:
        refuse("split_softmax", "needs col_groups > 1: one column group has no softmax to share")
    if config.split_softmax and 32 % (config.block_n // 2):
        refuse("block_n", "split_softmax keeps a row's position pairs in one warp: 16, 32 or 64")


def split_softmax_smem(m_tiles: int, block_n: int) -> int:
    """The split softmax's shared memory (both tensor-core families): 16-bit P rows of block_n + 8
    (ldmatrix rows on distinct banks), then a rescale factor (later m) and l per row."""
    return m_tiles * 16 * ((block_n + 8) * 2 + 2 * 4)


# The tensor-core path's own axes, each with the CUDA-core paths that take it too (the others
# take it at 0)
MMA_AXES = {
    "min_blocks": (),
    "qk_ahead": (),
    "split_reduce": (),
    "split_softmax": (),
    "swap_rows": (),
    "pdl_combine": ("tiled",),
    "specialize": (),
    "ring_slack": (),
}


def refuse_mma_axes(config, refuse, path: str) -> None:
    """Refuse (through `refuse`) the first tensor-core axis `config` sets that its CUDA-core
    path (`path`, for messages) does not take."""
    for field, also in MMA_AXES.items():
        if config.compute not in also and getattr(config, field):
            takers = " and ".join(f"'{c}'" for c in ("mma", *also))
            refuse(field, f"applies to compute={takers} only; {path} takes 0")


def mma_warp_grid(latent_dim: int, config, rows: int, refuse) -> tuple[int, int, int]:
    """(m_tiles, row_groups, warp_m) of the tensor-core paths' warp grid: num_warps /
    col_groups row groups share `rows` rows padded to m16 tiles, col_groups split the output
    columns in n16 pieces. Refuses (through `refuse`) a grid that does not tile them."""
    cols = config.col_groups
    if config.num_warps % cols:
        refuse("col_groups", f"must divide num_warps={config.num_warps}")
    if latent_dim // 8 % (2 * cols):
        refuse("col_groups", f"must split the {latent_dim} output columns into n16 pieces")
    m_tiles = math.ceil(rows / 16)
    row_groups = config.num_warps // cols
    if m_tiles % row_groups:
        refuse(
            "col_groups",
            f"{row_groups} row groups (num_warps / col_groups) do not split {m_tiles} m16 tiles "
            f"of {rows} rows; use more col_groups or fewer warps",
        )
    return m_tiles, row_groups, m_tiles // row_groups


def swizzled_row_bytes(head_dim: int) -> int:
    """A 16-bit KV tile row of the tensor-core path in shared memory: whole 128-byte groups of
    eight 16-byte chunks (swizzled within each group, so ldmatrix's rows and each cp.async
    quarter-warp hit distinct banks)."""
    return -(-head_dim // 64) * 128


def padded_row_bytes(head_dim: int) -> int:
    """A 16-bit tile row in shared memory: an odd number of 16-byte chunks, so that ldmatrix's
    eight row addresses fall in distinct banks."""
    chunks = head_dim // 8
    return (chunks if chunks % 2 else chunks + 1) * 16


@dataclass(frozen=True)
class Layout:
    rows: int  # query rows per block: q_len * heads_per_block
    rows_per_warp: int
    row_warps: int  # warps that own rows
    pos_groups: int  # warps that share a row and split its positions
    threads: int
    q_source: str  # "registers" | "shared" | "global": where a warp reads q at each position
    q_smem_bytes: int
    chunks: int  # vec_width-wide chunks in one KV row
    lane_chunks: int  # chunks one lane holds
    lane_latent_chunks: int
    stage_bytes: int  # shared memory of the KV tiles
    merge_bytes: int  # shared memory to merge position groups
    registers_estimate: int  # per thread, before compiling (a pruning hint, not a promise)

    @property
    def dynamic_smem(self) -> int:
        return max(
            self.q_smem_bytes + self.stage_bytes, self.merge_bytes, combine_smem(self.threads)
        )


def warp_grid(rows: int, num_warps: int) -> tuple[int, int, int]:
    """(rows_per_warp, row_warps, pos_groups): rows spread over warps; spare warps split positions
    of a row."""
    if rows >= num_warps:
        rows_per_warp = math.ceil(rows / num_warps)
        return rows_per_warp, math.ceil(rows / rows_per_warp), 1
    return 1, rows, num_warps // rows


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def layout_for(spec: Spec, config: Config, arch: Arch):
    """The block layout of this variant on `arch` (a Layout for compute='fma', an MMALayout for
    'mma', a TiledLayout for 'tiled'), or ConfigError saying why it cannot work. A register
    estimate over the arch's limit is not a refusal: ptxas may do better, and spills are
    reported, not forbidden."""
    if config.compute == "mma":
        from kgen.mla.mma_layout import plan_mma

        return plan_mma(spec, config, arch)
    if config.compute == "tiled":
        from kgen.mla.tiled_layout import plan_tiled

        return plan_tiled(spec, config, arch)
    return plan_fma(spec, config, arch)


def plan_fma(spec: Spec, config: Config, arch: Arch) -> Layout:
    refuse = refuser(spec, config, arch)
    vec, esize = config.vec_width, spec.elem_bytes
    refuse_mma_axes(config, refuse, "the FMA path")
    if spec.heads % config.heads_per_block:
        refuse("heads_per_block", f"must divide heads={spec.heads}")
    if vec * esize > MAX_LOAD_BYTES:
        refuse(
            "vec_width",
            f"{vec} x {spec.dtype} is {vec * esize} bytes; one load moves at most "
            f"{MAX_LOAD_BYTES} (vec_width <= {MAX_LOAD_BYTES // esize})",
        )
    if spec.latent_dim % vec or spec.rope_dim % vec:
        refuse(
            "vec_width", f"must divide latent_dim={spec.latent_dim} and rope_dim={spec.rope_dim}"
        )
    if config.smem_stages >= 2 and vec * esize not in CP_ASYNC_BYTES:
        refuse(
            "smem_stages",
            f"a cp.async pipeline copies 4, 8 or 16 bytes, but vec_width="
            f"{vec} x {spec.dtype} is {vec * esize}; use vec_width >= {4 // esize}"
            " or smem_stages <= 1",
        )
    threads = config.num_warps * 32
    if threads > arch.max_threads_per_block:
        refuse("num_warps", f"{threads} threads exceed {arch.max_threads_per_block} per block")

    rows = spec.q_len * config.heads_per_block
    rows_per_warp, row_warps, pos_groups = warp_grid(rows, config.num_warps)
    if rows_per_warp > 32:
        refuse(
            "num_warps",
            f"{rows} rows over {config.num_warps} warps is {rows_per_warp} per warp;"
            " at most 32 (use more warps or fewer heads_per_block)",
        )

    chunks = spec.head_dim // vec
    lane_chunks = math.ceil(chunks / 32)
    lane_latent_chunks = math.ceil(spec.latent_dim // vec / 32)
    stage_bytes = config.smem_stages * config.block_n * spec.head_dim * esize
    if stage_bytes > arch.smem_per_block:
        refuse(
            "smem_stages",
            f"{config.smem_stages} stages x block_n {config.block_n} x "
            f"{spec.head_dim} x {esize} B = {stage_bytes} bytes of shared memory,"
            f" over {arch.name}'s {arch.smem_per_block} per block (lower "
            "smem_stages or block_n)",
        )
    merge_bytes = pos_groups * row_warps * (spec.latent_dim + 2) * 4 if pos_groups > 1 else 0
    # q stays in registers while few rows share a warp; else a shared copy if it fits beside
    # the KV tiles, else re-reads from global memory, which L1 keeps.
    q_source, q_smem_bytes = "registers", 0
    if rows_per_warp * lane_chunks * vec > Q_REGISTER_BUDGET:
        q_bytes = _round_up(row_warps * rows_per_warp * spec.head_dim * esize, 16)
        fits = q_bytes + stage_bytes <= arch.smem_per_block
        q_source, q_smem_bytes = ("shared", q_bytes) if fits else ("global", 0)

    regs = _registers_estimate(
        spec,
        config,
        rows_per_warp,
        lane_chunks,
        lane_latent_chunks,
        threads,
        q_source != "registers",
    )
    return Layout(
        rows,
        rows_per_warp,
        row_warps,
        pos_groups,
        threads,
        q_source,
        q_smem_bytes,
        chunks,
        lane_chunks,
        lane_latent_chunks,
        stage_bytes,
        merge_bytes,
        regs,
    )


def _registers_estimate(
    spec: Spec,
    config: Config,
    rows_per_warp: int,
    lane_chunks: int,
    lane_latent_chunks: int,
    threads: int,
    q_elsewhere: bool,
) -> int:
    vec, words = config.vec_width, config.vec_width * spec.elem_bytes / 4
    q = (1 if q_elsewhere else rows_per_warp) * lane_chunks * vec
    state = rows_per_warp * (lane_latent_chunks * vec + 2)
    k = lane_chunks * vec
    if config.smem_stages == 0:
        in_flight = config.block_n * lane_chunks * words
    elif config.smem_stages == 1:
        in_flight = math.ceil(config.block_n * spec.head_dim / vec / threads) * words
    else:
        in_flight = k  # the next position's chunks
    return math.ceil(q + state + k + in_flight + REGISTER_OVERHEAD)
