"""How a (Spec, Config) pair maps onto a block of the register-tiled CUDA-core path
(compute='tiled', templates/mla/fma/tiled.cuh), and whether it can work.

The block is fixed by the kernel: 8 warps of 8 query rows (at most 64 rows: q_len x
heads_per_block), KV tiles of 64 positions, each tile a pipeline of head-dim chunks of q and K
(64 dims where `smem_stages` such buffers fit the arch, else 32) and then of V rows (16 or 8
positions) through the cp.async ring buffers. `plan_tiled` refuses what cannot work
(ConfigError); the register estimate is only a pruning hint.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgen.arch import Arch
from kgen.mla.layout_rules import combine_smem, refuse_pdl_below_sm90, refuser
from kgen.mla.rules import DENSE, refuse_broken
from kgen.mla.spec import Config, Spec

WARPS = 8
TILE_ROWS = 64
BLOCK_N = 64
QK_CHUNKS = (64, 32)  # head dims of a q.K^T step: the widest whose stages fit
PAD = 4  # floats after each q and K row of a step: conflict-free float4 reads
REGISTER_OVERHEAD = 40


@dataclass(frozen=True)
class TiledLayout:
    rows: int  # query rows per block: q_len * heads_per_block (padded to TILE_ROWS)
    qk_chunk: int  # head dims of q and K per pipeline step
    threads: int
    stage_bytes: int  # one ring buffer: a q and a K chunk, or 8 or 16 V rows
    p_bytes: int  # the warps' P tiles
    dynamic_smem: int
    registers_estimate: int  # per thread, before compiling (a pruning hint, not a promise)

    @property
    def q_placement(self) -> str:
        """Where q's operands come from: shared memory, a chunk per step."""
        return "shared"


def tiled_heads(spec: Spec) -> list[int]:
    """The heads_per_block values whose rows (q_len each) fit one tiled block, most first."""
    return [
        h for h in range(spec.heads, 0, -1) if spec.heads % h == 0 and spec.q_len * h <= TILE_ROWS
    ]


def tiled_config(
    heads_per_block: int, smem_stages: int, kv_splits: int = 1, merge: str = "fused"
) -> Config:
    """A compute='tiled' Config: the kernel fixes the rest of the block (8 warps, tiles of 64
    positions, float4 copies). merge="pdl": the split-KV merge in a kernel of its own, as on the
    tensor-core path (sm_90 and later)."""
    return Config(
        heads_per_block=heads_per_block,
        kv_splits=kv_splits,
        vec_width=4,
        smem_stages=smem_stages,
        num_warps=WARPS,
        block_n=BLOCK_N,
        compute="tiled",
        merge=merge,
    )


def plan_tiled(spec: Spec, config: Config, arch: Arch) -> TiledLayout:
    refuse = refuser(spec, config, arch)
    if spec.dtype != "float32":
        refuse(
            "compute",
            f"'tiled' reads float4 operands: float32 only, not {spec.dtype} (16-bit inputs take "
            "'mma')",
        )
    refuse_broken(spec, config, DENSE, refuse)
    refuse_pdl_below_sm90(config, arch, refuse)
    rows = spec.q_len * config.heads_per_block
    if rows > TILE_ROWS:
        refuse(
            "heads_per_block",
            f"q_len x heads_per_block = {rows} rows; the tiled block holds at most {TILE_ROWS}",
        )
    if spec.head_dim % QK_CHUNKS[-1] or spec.latent_dim % 128:
        refuse(
            "compute",
            f"'tiled' needs latent + rope ({spec.head_dim}) a multiple of {QK_CHUNKS[-1]} and "
            f"latent_dim ({spec.latent_dim}) a multiple of 128",
        )
    threads = WARPS * 32
    p_bytes = WARPS * BLOCK_N * 8 * 4
    fixed = p_bytes + TILE_ROWS * 8 + 2 * BLOCK_N * 8  # P, draft bits, KV row pointers
    for kc in QK_CHUNKS:
        qk_floats = 2 * TILE_ROWS * (kc + PAD)
        vc = 16 if qk_floats >= 16 * spec.latent_dim else 8  # V rows a P.V step (the kernel's VC)
        stage_bytes = max(qk_floats, vc * spec.latent_dim) * 4
        smem = config.smem_stages * stage_bytes + fixed
        if spec.head_dim % kc == 0 and smem <= arch.smem_per_block:
            break
    else:
        refuse(
            "smem_stages",
            f"needs {smem} bytes of shared memory ({config.smem_stages} stages of {stage_bytes}, "
            f"P {p_bytes}, draft bits and KV row pointers), over {arch.name}'s "
            f"{arch.smem_per_block} per block",
        )
    o = 8 * spec.latent_dim // 32  # 8 rows x the lane's output columns
    registers = o + 16 + 8 + 16 + 4 + REGISTER_OVERHEAD  # o, scores, row states, K and q quads
    return TiledLayout(
        rows=rows,
        qk_chunk=kc,
        threads=threads,
        stage_bytes=stage_bytes,
        p_bytes=p_bytes,
        dynamic_smem=max(smem, combine_smem(threads)),
        registers_estimate=registers,
    )
