"""The default design point when no tuned one exists: a rule of thumb over the occupancy model."""

from __future__ import annotations

import math

from kgen.arch import Arch
from kgen.mla.layout import ConfigError, plan
from kgen.mla.spec import Config, Spec

ROWS_PER_WARP_TARGET = 4  # q.k and p.v registers stay well under the 255 limit
MIN_TILES_PER_SPLIT = 2


def _widest_vec(spec: Spec) -> int:
    vec = 16 // spec.elem_bytes
    while spec.latent_dim % vec or spec.rope_dim % vec:
        vec //= 2
    return vec


def default_config(spec: Spec, batch: int, max_seq_len: int, arch: Arch, sm_count: int) -> Config:
    """Amortise KV reads over as many heads as registers allow, then split KV until the blocks
    fill every SM for the occupancy the layout allows."""
    vec = _widest_vec(spec)
    # Short tiles in a deep cp.async pipeline won most H200 sweeps (bench/RESULTS.md).
    stages, block_n = (3, 16) if vec * spec.elem_bytes >= 4 else (1, 16)
    while stages * block_n * spec.head_dim * spec.elem_bytes > arch.smem_per_block and stages > 2:
        stages -= 1
    best = None
    for hpb in sorted((d for d in range(1, spec.heads + 1) if spec.heads % d == 0), reverse=True):
        rows = spec.q_len * hpb
        warps = 8 if rows > 2 * ROWS_PER_WARP_TARGET else 4
        if math.ceil(rows / warps) > ROWS_PER_WARP_TARGET and hpb > 1:
            continue
        best = Config(
            heads_per_block=hpb, vec_width=vec, smem_stages=stages, num_warps=warps, block_n=block_n
        )
        try:
            layout = plan(spec, best, arch)
        except ConfigError:
            continue
        break
    if best is None:
        raise ConfigError(f"no default config fits {spec.short_name()} on {arch.name}")
    occupancy = arch.occupancy(layout.threads, layout.registers_estimate, layout.dynamic_smem)
    wanted_blocks = sm_count * max(1, occupancy.blocks_per_sm)
    blocks = batch * (spec.heads // best.heads_per_block)
    max_splits = max(1, math.ceil(max_seq_len / (MIN_TILES_PER_SPLIT * best.block_n)))
    splits = min(max_splits, max(1, math.ceil(wanted_blocks / max(1, blocks))), 256)
    return Config(**{**best.to_dict(), "kv_splits": splits})
