"""What the layout of every compute path (and the sparse family's) shares: ConfigError and the
refusal helpers, the shared memory of the split-KV merge and the split softmax, the tensor-core
warp grid and tile row sizes. `kgen.mla.layout.layout_for` dispatches to the paths' planners.
"""

from __future__ import annotations

import math

from kgen.arch import Arch
from kgen.mla.spec import MAX_SPLITS
from kgen.params import ConfigError

CP_ASYNC_BYTES = (4, 8, 16)
MAX_LOAD_BYTES = 16
REGISTER_OVERHEAD = 32  # indices, pointers, loop state: an allowance
Q_REGISTER_BUDGET = 96  # beyond this many registers of q per thread, q is read from shared memory


def combine_smem(threads: int) -> int:
    """Shared memory the fused split-KV combine reuses (templates/mla/combine.cuh): MAX_SPLITS
    float weights, a float4 per thread, three ints."""
    return MAX_SPLITS * 4 + 16 * threads + 16


def refuser(spec, config, arch: Arch, error: type[ConfigError] = ConfigError):
    """A function that raises `error` naming a config field, the reason and the setting."""

    def refuse(field: str, reason: str) -> None:
        raise error(
            f"{type(config).__name__}.{field}={getattr(config, field)!r}: {reason} "
            f"(spec {spec.short_name()}, {arch.name})"
        )

    return refuse


def refuse_pdl_below_sm90(config, arch: Arch, refuse) -> None:
    """merge='pdl''s refusal (both tensor-core families, the tiled path): griddepcontrol needs
    sm_90 or later."""
    if config.merge == "pdl" and not arch.has_pdl:
        refuse(
            "merge",
            "programmatic dependent launch (griddepcontrol) needs sm_90 or later: take 'fused' "
            "(the merge inside the attention kernel)",
        )


def split_softmax_smem(m_tiles: int, block_n: int) -> int:
    """The split softmax's shared memory (both tensor-core families): 16-bit P rows of block_n + 8
    (ldmatrix rows on distinct banks), then a rescale factor (later m) and l per row."""
    return m_tiles * 16 * ((block_n + 8) * 2 + 2 * 4)


def mma_warp_grid(latent_dim: int, config, rows: int, refuse) -> tuple[int, int, int]:
    """(m_tiles, row_groups, warp_m) of the tensor-core paths' warp grid: num_warps /
    col_groups row groups share `rows` rows padded to m16 tiles, col_groups split the output
    columns in n16 pieces. Refuses (through `refuse`) a grid that does not tile them (that
    col_groups divides num_warps is kgen.mla.rules')."""
    cols = config.col_groups
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
