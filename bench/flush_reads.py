"""What a plain streaming read pays under each L2 flush of kgen.tune.timing: torch's float sum
of N bytes (the grid's KV sizes, and 1 GiB, the size kgen's read ceiling uses) timed after a
write flush and after a read flush, alternating. One line per (MB, flush): median us and GB/s.

    PYTHONPATH=. python3 bench/flush_reads.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kgen.tune.timing import FLUSHES, Timer  # noqa: E402

# KV bytes of kimi-tp8-decode-long, kimi-tp8-decode-batch / page1-decode, dsv3-tp8-decode-batch /
# -wide, dsv3-tp8-decode-long (576 bf16 values a token), then 1 GiB
SIZES = [16384 * 1152, 32 * 4096 * 1152, 64 * 4096 * 1152, 32 * 16384 * 1152, 1 << 30]


def main() -> int:
    device = torch.device("cuda")
    timers = {flush: Timer(device, flush) for flush in FLUSHES}
    for n in SIZES:
        floats = torch.empty(n // 4, dtype=torch.float32, device=device).uniform_()
        for _round in range(2):
            for flush, timer in timers.items():
                us = timer.flushed(lambda f=floats: f.sum(), reps=20).median_us
                line = f"{n / 1e6:8.1f} MB  {flush:5}  {us:8.2f} us  {n / us / 1e3:7.0f} GB/s"
                print(line, flush=True)
        del floats
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
