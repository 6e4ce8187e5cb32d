"""How a (Spec, Config) pair maps onto a block on the tensor-core path, and whether it can work.

Mirrors templates/mla/mma/attention.cuh: rows padded to m16 tiles, a ROW_GROUPS x COL_GROUPS warp
grid, the shared-memory layout (q, the cp.async KV stages, the partial scores) and a register
estimate. `plan_mma` refuses what cannot work (ConfigError); the register estimate is only a
pruning hint for the sweep.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from kgen.arch import Arch
from kgen.mla.layout_rules import (
    combine_smem,
    mma_warp_grid,
    refuse_pdl_below_sm90,
    refuser,
    split_softmax_smem,
    swizzled_row_bytes,
)
from kgen.mla.rules import DENSE, refuse_broken
from kgen.mla.spec import Config, Spec, block_tokens_of

REGISTER_OVERHEAD = 40  # indices, pointers, row states, loop state: an allowance
Q_REGISTER_LIMIT = 40  # q fragments a warp keeps in registers; beyond, q lives in shared memory
TIGHT_REGISTERS = 128  # at most this many per thread (16 warps a block, or 2 blocks of 8 per SM):
# the rope part of q moves to shared memory (4 registers a k step; such layouts spill without it)


THREE_ROW_WARPS = 12  # three row groups of 16 rows, four column groups each


def three_row_config(heads_per_block: int, **fields) -> Config:
    """A 12-warp tensor-core block of three 16-row groups on one KV pipeline (what fits sm_120's
    100 KB at 12 warps an SM; `heads_per_block` need not divide H): four column groups, 16-byte
    copies of 16-bit values, 16-position tiles unless `fields` says otherwise, and any other
    Config `fields`."""
    return Config(
        heads_per_block=heads_per_block,
        vec_width=8,
        num_warps=THREE_ROW_WARPS,
        col_groups=4,
        compute="mma",
        **{"block_n": 16, **fields},
    )


@dataclass(frozen=True)
class MMALayout:
    rows: int  # query rows per block: its tokens (q_len / token_groups) x heads_per_block
    m_tiles: int  # rows padded to m16 tiles
    row_groups: int
    col_groups: int
    # a warp's first k steps of q in registers; the later ones' columns in shared memory
    q_register_steps: int
    warp_m: int  # m16 tiles per warp
    o_tiles: int  # n8 tiles of output columns per warp
    threads: int
    q_bytes: int
    # the KV tiles' stages (an fp8 cache: its raw stages, and one 16-bit tile where they widen)
    stage_bytes: int
    score_bytes: int
    dynamic_smem: int
    registers_estimate: int  # per thread, before compiling (a pruning hint, not a promise)
    ring_bytes: int = 0  # ring_slack: the tile ring's barriers, full and empty a stage

    @property
    def main_smem(self) -> int:
        """Shared memory of the main loop (the combine reuses it, needing combine_smem)."""
        return self.q_bytes + self.stage_bytes + self.score_bytes + 16 + self.ring_bytes

    @property
    def q_placement(self) -> str:
        """Where q's A fragments come from: registers, shared memory or both (split)."""
        if self.q_bytes == 0:
            return "registers"
        return "split" if self.q_register_steps else "shared"

    @property
    def padding(self) -> float:
        """Fraction of the MMA rows that are padding."""
        return 1 - self.rows / (16 * self.m_tiles)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def plan_mma(spec: Spec, config: Config, arch: Arch) -> MMALayout:
    refuse = refuser(spec, config, arch)
    if spec.dtype not in ("float16", "bfloat16"):
        refuse(
            "compute",
            f"'mma' takes float16 or bfloat16 inputs, not {spec.dtype} (float32 stays on 'fma': "
            "TF32 would miss the 1e-5 tolerance)",
        )
    if config.vec_width * spec.elem_bytes != 16:
        refuse(
            "vec_width", f"'mma' copies 16-byte chunks: vec_width must be {16 // spec.elem_bytes}"
        )
    if spec.latent_dim % 16 or spec.head_dim % 16:
        refuse(
            "compute",
            f"'mma' needs latent_dim ({spec.latent_dim}) and latent + rope ({spec.head_dim}) to "
            "be multiples of 16",
        )
    refuse_broken(spec, config, DENSE, refuse)
    refuse_pdl_below_sm90(config, arch, refuse)
    specialized = config.body == "specialized"
    rows = block_tokens_of(spec, config) * config.heads_per_block
    threads = config.num_warps * 32
    if threads > arch.max_threads_per_block:
        refuse("num_warps", f"{threads} threads exceed {arch.max_threads_per_block} per block")
    if config.min_blocks * threads > arch.max_threads_per_sm:
        refuse(
            "min_blocks",
            f"{config.min_blocks} blocks of {threads} threads exceed {arch.name}'s "
            f"{arch.max_threads_per_sm} threads per SM",
        )
    # Specialized, the q role's half of the threads copies and each role is a warp grid
    role = replace(config, num_warps=config.num_warps // 2) if specialized else config
    copiers = role.num_warps * 32
    if copiers % config.block_n:
        copying = " of the q role" if specialized else ""
        refuse(
            "block_n",
            f"must divide the {copiers} threads{copying} (each position is copied by as many)",
        )
    cols = config.col_groups
    m_tiles, row_groups, warp_m = mma_warp_grid(spec.latent_dim, role, rows, refuse)

    row_bytes = swizzled_row_bytes(spec.head_dim)
    warp_k = math.ceil(spec.head_dim // 16 / cols)
    q_steps = warp_k if warp_m * warp_k * 4 <= Q_REGISTER_LIMIT else 0
    tight = arch.regs_per_sm // (threads * max(config.min_blocks, 1)) <= TIGHT_REGISTERS
    if q_steps and tight and not specialized:  # (the q role holds no output)
        q_steps = spec.latent_dim // 16 // cols  # the rope k steps from shared memory
    q_registers = warp_m * 4 * q_steps
    q_col = min(q_steps * cols * 16, spec.head_dim)  # the first column of q in shared memory
    q_chunks = (spec.head_dim - q_col) // 8
    q_bytes = m_tiles * 16 * (q_chunks if q_chunks % 2 or not q_chunks else q_chunks + 1) * 16
    stage_bytes = config.smem_stages * config.block_n * row_bytes
    if spec.format is not None:
        # an fp8 cache lands raw (its cached rows as they are), then widens into one 16-bit tile,
        # unless the MMAs read the raw rows as fragments
        stage_bytes = config.smem_stages * config.block_n * spec.format.row_bytes
        if spec.fp8_widened:
            stage_bytes += config.block_n * row_bytes
    s_stride = config.block_n + (24 - config.block_n % 16) % 16
    score_buffers = 2 if config.qk_ahead or specialized else 1
    score_bytes = score_buffers * cols * m_tiles * 16 * s_stride * 4
    if config.softmax == "split":
        score_bytes += split_softmax_smem(m_tiles, config.block_n)
    ring_bytes = _round_up(2 * config.smem_stages * 8, 16) if config.ring_slack else 0
    smem = q_bytes + stage_bytes + score_bytes + 16 + ring_bytes
    if max(smem, combine_smem(threads)) > arch.smem_per_block:
        refuse(
            "heads_per_block" if q_bytes > stage_bytes else "smem_stages",
            f"needs {smem} bytes of shared memory (q {q_bytes}, {config.smem_stages} KV stages "
            f"{stage_bytes}{' with the 16-bit tile' if spec.fp8_widened else ''}, scores "
            f"{score_bytes}), over {arch.name}'s {arch.smem_per_block} "
            "per block (fewer heads_per_block, smem_stages or block_n)",
        )
    o_tiles = spec.latent_dim // 8 // cols
    n_tiles = config.block_n // 8
    registers = _row_registers(config, warp_m, o_tiles, n_tiles, q_registers)
    return MMALayout(
        rows=rows,
        m_tiles=m_tiles,
        row_groups=row_groups,
        col_groups=cols,
        q_register_steps=q_steps,
        warp_m=warp_m,
        o_tiles=o_tiles,
        threads=threads,
        q_bytes=q_bytes,
        stage_bytes=stage_bytes,
        score_bytes=score_bytes,
        dynamic_smem=max(smem, combine_smem(threads)),
        registers_estimate=registers,
        ring_bytes=ring_bytes,
    )


def _row_registers(
    config: Config, warp_m: int, o_tiles: int, n_tiles: int, q_registers: int
) -> int:
    """The register estimate of the row path (rows on the m16 side); specialized, the larger of
    the two roles' (the q role holds q and the scores, the softmax role the output)."""
    if config.body == "specialized":
        q_role = max(q_registers, warp_m * 4) + warp_m * n_tiles * 4 + 4 + REGISTER_OVERHEAD
        v_role = warp_m * o_tiles * 4 + warp_m * 4 + 4 + warp_m * 8 + REGISTER_OVERHEAD
        return max(q_role, v_role)
    return (
        warp_m * o_tiles * 4  # the output accumulator
        + (2 if config.qk_ahead else 1) * warp_m * n_tiles * 4  # scores (and the next tile's)
        + warp_m * (4 if config.softmax == "split" else (config.block_n // 16) * 4)  # P fragments
        + max(q_registers, warp_m * 4)  # q fragments
        + 4  # K/V fragments
        + warp_m * 8  # row states and draft bits
        + REGISTER_OVERHEAD
    )
