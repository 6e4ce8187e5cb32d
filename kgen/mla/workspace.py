"""The split-KV workspace of one launch and the arrival counters of the fused combine.

Partials come from torch's caching allocator per call (graph-capturable). The counters must be
zero when a launch starts; every launch leaves them zero again, so one zeroed buffer per
(device, stream) serves every kernel launched on that stream, one launch after another. A buffer
outgrown by a larger launch is kept alive, not freed: a CUDA graph may have captured its address.

Known limit (issue 3/4's subject): a buffer first allocated while a stream is being captured is
zeroed by a memset inside that graph only; a second graph captured on the same stream before the
first is ever replayed would start from uninitialised counters. Run a call eagerly on the capture
stream first, or replay the first graph once.
"""

from __future__ import annotations

import math
import threading

_counters: dict[tuple[int, int], object] = {}
_outgrown: list[object] = []  # never freed: captured graphs may still point at them
_lock = threading.Lock()


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


def counters(device, stream: int, count: int):
    """A zeroed int32 buffer of at least `count` counters for launches on `stream`."""
    import torch

    key = (device.index, stream)
    with _lock:
        buf = _counters.get(key)
        if buf is None or buf.numel() < count:
            if buf is not None:
                _outgrown.append(buf)
            buf = torch.zeros(max(count, 1024), dtype=torch.int32, device=device)
            _counters[key] = buf
        return buf
