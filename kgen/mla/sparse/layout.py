"""How a (SparseSpec, SparseConfig) pair maps onto a thread block, and whether it can work on an
arch. Mirrors templates/mla_sparse/: the warp grid over m16 tiles of heads, the shared-memory
layout (q, the gathered tiles, the dequantized tile, partial scores, slots) and a register
estimate. `sparse_layout_for` refuses what cannot work (SparseConfigError naming the field and the
reason) before anything is compiled; the register estimate is only a pruning hint."""

from __future__ import annotations

import math
from dataclasses import dataclass

from kgen.arch import Arch
from kgen.mla.layout_rules import (
    ConfigError,
    combine_smem,
    mma_warp_grid,
    padded_row_bytes,
    refuse_pdl_below_sm90,
    refuser,
    split_softmax_smem,
)
from kgen.mla.rules import SPARSE, refuse_broken
from kgen.mla.sparse.spec import SparseConfig, SparseSpec

Q_REGISTER_LIMIT = 40  # q fragments a warp keeps in registers; beyond, q lives in shared memory
REGISTER_OVERHEAD = 40  # indices, pointers, row states, loop state: an allowance


class SparseConfigError(ConfigError):
    """A SparseConfig that cannot work for this SparseSpec on this arch."""


@dataclass(frozen=True)
class SparseLayout:
    rows: int  # query rows per block: heads_per_block (one query token per block)
    m_tiles: int
    row_groups: int
    col_groups: int
    warp_m: int  # m16 tiles per warp
    o_tiles: int  # n8 tiles of output columns per warp
    threads: int
    q_in_registers: bool
    stage_row_bytes: int  # one gathered row in a pipeline stage (16-bit rows padded for ldmatrix)
    tile_row_bytes: int  # one row of a 16-bit tile that ldmatrix reads
    q_bytes: int
    stage_bytes: int  # the cp.async stages (raw fp8 or 16-bit tiles)
    tile_bytes: int  # dequantized 16-bit tiles (fp8 only)
    score_bytes: int
    softmax_bytes: int  # softmax="split": 16-bit P, then a rescale factor (later m) and l per row
    slot_bytes: int  # the cache slot of every row of every stage (-1: masked)
    scale_bytes: int  # fp8: the float32 scales of every row of every dequantized tile
    gather_items: int  # gather instructions per thread per tile
    registers_estimate: int

    @property
    def q_placement(self) -> str:
        """Where q's A fragments come from: registers or shared memory."""
        return "registers" if self.q_in_registers else "shared"

    @property
    def main_smem(self) -> int:
        return (
            self.q_bytes
            + self.stage_bytes
            + self.tile_bytes
            + self.score_bytes
            + self.slot_bytes
            + self.scale_bytes
            + self.softmax_bytes
        )

    @property
    def dynamic_smem(self) -> int:
        return max(self.main_smem, combine_smem(self.threads))


def scaled_tile(spec: SparseSpec) -> bool:
    """Whether the gather stores each fp8 value times its scale in the 16-bit tile
    (templates/mla_sparse/gather.cuh): with UE8M0 scales and bfloat16 q. A power-of-two scale
    moves only the exponent, and e4m3's 3 mantissa bits fit bfloat16's 7, so the tile is exact
    and q.K and P.V are the 16-bit cache's. float32 scales round, and float16's range cannot hold
    e4m3 x 2^k: those tiles stay unscaled, their scales applied in float32."""
    fmt = spec.format
    return fmt.quantized and fmt.scale == "ue8m0" and spec.dtype == "bfloat16"


def scale_columns(spec: SparseSpec) -> int:
    """Scales a dequantized tile row keeps beside it in shared memory: one a scale group of an
    unscaled fp8 tile, none for a 16-bit cache or a scaled tile."""
    return 0 if scaled_tile(spec) else spec.format.scale_groups


def run_dims(spec: SparseSpec) -> int:
    """The dims of q.K dealt to a row group's warps in runs (templates/mla_sparse/attention.cuh):
    the e4m3 dims of an fp8 format, else V's 512."""
    return spec.format.e4m3_dims or spec.latent_dim


def stage_row(spec: SparseSpec) -> int:
    """Bytes of one raw fp8 row in a gather stage: the token's row, then (scales per page) its
    scale row, padded to 16 bytes."""
    fmt = spec.format
    extra = fmt.scale_row_bytes if fmt.scales_at == "page" else 0
    return -(-(fmt.row_bytes + extra) // 16) * 16


def sparse_layout_for(spec: SparseSpec, config: SparseConfig, arch: Arch) -> SparseLayout:
    refuse = refuser(spec, config, arch, SparseConfigError)

    fmt = spec.format
    fp8_cache = fmt.quantized
    refuse_broken(spec, config, SPARSE, refuse)
    threads = config.num_warps * 32
    if threads > arch.max_threads_per_block:
        refuse("num_warps", f"{threads} threads exceed {arch.max_threads_per_block} per block")
    if threads % config.block_n:
        refuse("block_n", f"must divide the {threads} threads (each row is gathered by as many)")
    refuse_pdl_below_sm90(config, arch, refuse)
    if config.min_blocks * threads > arch.max_threads_per_sm:
        refuse(
            "min_blocks",
            f"{config.min_blocks} blocks of {threads} threads exceed {arch.name}'s "
            f"{arch.max_threads_per_sm} threads per SM",
        )
    cols = config.col_groups
    rows = config.heads_per_block
    m_tiles, row_groups, warp_m = mma_warp_grid(spec.latent_dim, config, rows, refuse)
    if run_dims(spec) // 16 % cols:
        refuse(
            "col_groups",
            f"must divide the {run_dims(spec) // 16} k steps of the {run_dims(spec)} "
            f"{'quantized ' if fp8_cache else ''}dims of {spec.kv_format!r} (they are split "
            "evenly among a row group's warps)",
        )

    tile_row_bytes = padded_row_bytes(spec.head_dim)
    stage_row_bytes = stage_row(spec) if fp8_cache else tile_row_bytes
    q_registers = warp_m * math.ceil(spec.head_dim // 16 / cols) * 4
    q_in_registers = q_registers <= Q_REGISTER_LIMIT
    q_bytes = 0 if q_in_registers else m_tiles * 16 * tile_row_bytes
    block_n = config.block_n
    if config.dequant == "registers":
        stage_bytes, tile_bytes = 0, 2 * block_n * tile_row_bytes
    else:
        stage_bytes = config.smem_stages * block_n * stage_row_bytes
        tile_bytes = block_n * tile_row_bytes if fp8_cache else 0
    s_stride = block_n + (24 - block_n % 16) % 16
    score_bytes = cols * m_tiles * 16 * s_stride * 4
    slot_bytes = max(config.smem_stages, 2) * block_n * 4
    scale_bytes = (tile_bytes // tile_row_bytes) * scale_columns(spec) * 4  # per dequantized row
    softmax_bytes = split_softmax_smem(m_tiles, block_n) if config.softmax == "split" else 0
    smem = (
        q_bytes + stage_bytes + tile_bytes + score_bytes + slot_bytes + scale_bytes + softmax_bytes
    )
    if max(smem, combine_smem(threads)) > arch.smem_per_block:
        refuse(
            "heads_per_block" if q_bytes > stage_bytes + tile_bytes else "smem_stages",
            f"needs {smem} bytes of shared memory (q {q_bytes}, {config.smem_stages} gather "
            f"stages {stage_bytes}, dequantized tiles {tile_bytes}, scores {score_bytes}, "
            f"split softmax {softmax_bytes}), over "
            f"{arch.name}'s {arch.smem_per_block} per block (fewer heads_per_block, smem_stages "
            "or block_n)",
        )

    per_row = threads // block_n
    if config.dequant == "registers":  # e4m3 pieces carry their scale; the scales are not copied
        items = (fmt.e4m3_dims + 2 * fmt.rope_dims) // config.gather_bytes
    elif fp8_cache:
        items = fmt.row_bytes // config.gather_bytes + (fmt.scales_at == "page")
    else:
        items = spec.token_bytes // config.gather_bytes
    gather_items = math.ceil(items / per_row)
    o_tiles = spec.latent_dim // 8 // cols
    in_flight = (
        gather_items * (config.gather_bytes // 4 + 1) if config.dequant == "registers" else 0
    )
    registers = (
        warp_m * o_tiles * 4  # the output accumulator
        + warp_m * (block_n // 8) * 4  # scores
        + warp_m * (block_n // 16) * 4  # P fragments
        + (q_registers if q_in_registers else warp_m * 4)
        + 4  # K/V fragments
        + warp_m * 4  # row states
        + in_flight
        + REGISTER_OVERHEAD
    )
    return SparseLayout(
        rows=rows,
        m_tiles=m_tiles,
        row_groups=row_groups,
        col_groups=cols,
        warp_m=warp_m,
        o_tiles=o_tiles,
        threads=threads,
        q_in_registers=q_in_registers,
        stage_row_bytes=stage_row_bytes,
        tile_row_bytes=tile_row_bytes,
        q_bytes=q_bytes,
        stage_bytes=stage_bytes,
        tile_bytes=tile_bytes,
        score_bytes=score_bytes,
        softmax_bytes=softmax_bytes,
        slot_bytes=slot_bytes,
        scale_bytes=scale_bytes,
        gather_items=gather_items,
        registers_estimate=registers,
    )
