"""The FMA (CUDA-core, GEMV-style) path's block: a warp per few rows, dot products across its
lanes (templates/mla/fma/attention.cuh). `plan_fma` refuses what cannot work (ConfigError).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kgen.arch import Arch
from kgen.mla.layout_rules import (
    CP_ASYNC_BYTES,
    MAX_LOAD_BYTES,
    Q_REGISTER_BUDGET,
    REGISTER_OVERHEAD,
    combine_smem,
    refuser,
)
from kgen.mla.rules import DENSE, refuse_broken
from kgen.mla.spec import Config, Spec


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


def plan_fma(spec: Spec, config: Config, arch: Arch) -> Layout:
    refuse = refuser(spec, config, arch)
    vec, esize = config.vec_width, spec.elem_bytes
    refuse_broken(spec, config, DENSE, refuse)
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
