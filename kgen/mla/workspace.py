"""The split-KV workspace of one launch and the arrival counters of the fused combine.

Partials come from torch's caching allocator per call (graph-capturable). The counters must be
zero when a launch starts; every launch leaves them zero again, so one zeroed buffer per
(device, stream) serves every kernel launched on that stream, one launch after another.
"""

from __future__ import annotations

import math
import threading

_counters: dict[tuple[int, int], object] = {}
_lock = threading.Lock()


def combine_fanin(splits: int) -> int:
    """Splits one block merges: ~sqrt(splits), so no block reads more than ~sqrt(S) partials."""
    return max(1, math.isqrt(splits - 1) + 1) if splits > 1 else 1


def workspace_slots(splits: int) -> int:
    """Partial slots per (sequence, head group): one per split, plus one per group of fanin."""
    groups = -(-splits // combine_fanin(splits))
    return splits + groups if groups > 1 else splits


def counter_count(batch: int, head_groups: int, splits: int) -> int:
    groups = -(-splits // combine_fanin(splits))
    return batch * head_groups * (groups + 1)


def counters(device, stream: int, count: int):
    """A zeroed int32 buffer of at least `count` counters for launches on `stream`."""
    import torch

    key = (device.index, stream)
    with _lock:
        buf = _counters.get(key)
        if buf is None or buf.numel() < count:
            buf = torch.zeros(max(count, 1024), dtype=torch.int32, device=device)
            _counters[key] = buf
        return buf
