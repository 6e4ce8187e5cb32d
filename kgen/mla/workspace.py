"""The split-KV workspace of a planned call and the arrival counters of the fused combine.

`plan` allocates it once per Runner: partial outputs and their log-sum-exps, and the counters,
zeroed there. The counters must be zero when a launch starts and every launch leaves them zero
again, so one buffer serves every launch of the Runner, one after another on a stream (or in a
CUDA graph): nothing is allocated or zeroed per call.
"""

from __future__ import annotations

from dataclasses import dataclass

COMBINE = "mla_combine"  # the split merge's kernel, of merge="pdl" configs (either family)
GROUP_COUNTERS = 4  # per (sequence, block group): templates/mla/combine.cuh's ARRIVALS .. LEFT


def counter_count(batch: int, block_groups: int) -> int:
    """The fused combine's counters: GROUP_COUNTERS per (sequence, block group)."""
    return batch * block_groups * GROUP_COUNTERS


@dataclass(frozen=True)
class Workspace:
    """What a launch with several KV splits needs besides its inputs and outputs."""

    partials: object  # float32 [slots, latent_dim]: the splits' partial outputs
    partial_lse: object  # float32 [slots]
    counters: object  # int32, zero between launches


def allocate(
    batch: int, rows: int, latent_dim: int, block_groups: int, splits: int, device
) -> Workspace | None:
    """The workspace of `splits` KV splits (None for one split), with the counters zeroed: a
    slot per split of each of a block's `rows` rows (its tokens x heads_per_block) in each of
    the `block_groups` blocks of a sequence (or query token): a ragged last head or token
    group's missing rows have slots too (templates/mla/combine.cuh's slot_row)."""
    import torch

    if splits == 1 or batch == 0:
        return None
    slots = batch * splits * block_groups * rows
    return Workspace(
        partials=torch.empty((slots, latent_dim), dtype=torch.float32, device=device),
        partial_lse=torch.empty((slots,), dtype=torch.float32, device=device),
        counters=torch.zeros(counter_count(batch, block_groups), dtype=torch.int32, device=device),
    )


# mla_combine's slots read at a time per thread, and its block size at most (its __launch_bounds__):
# templates/mla/combine_kernel.cuh's COMBINE_LOADS and COMBINE_THREADS
COMBINE_LOADS = 8
COMBINE_THREADS = 512
COMBINE_BLOCKS = 256  # about two blocks per SM of an H200, to spread the merge's L2 reads
MIN_COMBINE_THREADS = 32  # a block is at least a warp
# slices of a row's slots at most: 32 x COMBINE_LOADS = 256 splits in one round of loads (16 left
# 132 splits, one per H200 SM, to two rounds)
MAX_COMBINE_SLICES = 32


def combine_shape(
    batch: int, block_groups: int, rows: int, latent_dim: int, splits: int
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, block) of mla_combine for a launch of `splits` KV splits: enough slices of the slots
    that a thread reads at most a few rounds of COMBINE_LOADS, and rows cut into column chunks
    until the grid has about COMBINE_BLOCKS blocks. The kernel reads its chunks and slices back
    from this shape, so it is the one place that chooses them."""
    quads = latent_dim // 4  # float4 columns of a row
    slices = 1
    while slices < MAX_COMBINE_SLICES and slices * COMBINE_LOADS < splits:
        slices *= 2
    chunks = 1
    while quads % (2 * chunks) == 0 and (
        quads // chunks * slices > COMBINE_THREADS
        or batch * block_groups * rows * chunks < COMBINE_BLOCKS
        and quads // chunks * slices >= 2 * MIN_COMBINE_THREADS
    ):
        chunks *= 2
    return (block_groups, rows * chunks, batch), (quads // chunks * slices, 1, 1)
