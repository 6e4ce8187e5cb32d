"""The split-KV workspace of a planned call and the arrival counters of the fused combine.

`plan` allocates it once per Runner: partial outputs and their log-sum-exps, and the counters,
zeroed there. The counters must be zero when a launch starts and every launch leaves them zero
again, so one buffer serves every launch of the Runner, one after another on a stream (or in a
CUDA graph): nothing is allocated or zeroed per call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def combine_fanin(splits: int) -> int:
    """Splits one block merges: ~sqrt(splits), so no block reads more than ~sqrt(S) partials."""
    return max(1, math.isqrt(splits - 1) + 1) if splits > 1 else 1


def combine_groups(splits: int) -> int:
    """Groups of fanin splits (templates/mla/combine.cuh's combine_groups)."""
    return -(-splits // combine_fanin(splits))


def workspace_slots(splits: int) -> int:
    """Partial slots per (sequence, head group): one per split, plus one per group when there are
    several groups."""
    groups = combine_groups(splits)
    return splits + groups if groups > 1 else splits


def counter_count(batch: int, head_groups: int, splits: int) -> int:
    """Arrival counters: one per group and one for the groups, per (sequence, head group)."""
    return batch * head_groups * (combine_groups(splits) + 1)


@dataclass(frozen=True)
class Workspace:
    """What a launch with several KV splits needs besides its inputs and outputs."""

    partials: object  # float32 [slots, latent_dim]: the splits' partial outputs
    partial_lse: object  # float32 [slots]
    counters: object  # int32, zero between launches


def allocate(
    batch: int, q_len: int, heads: int, latent_dim: int, head_groups: int, splits: int, device
) -> Workspace | None:
    """The workspace of `splits` KV splits (None for one split), with the counters zeroed."""
    import torch

    if splits == 1 or batch == 0:
        return None
    slots = batch * workspace_slots(splits) * q_len * heads
    return Workspace(
        partials=torch.empty((slots, latent_dim), dtype=torch.float32, device=device),
        partial_lse=torch.empty((slots,), dtype=torch.float32, device=device),
        counters=torch.zeros(
            counter_count(batch, head_groups, splits), dtype=torch.int32, device=device
        ),
    )
