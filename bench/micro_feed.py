"""What mma.sync m16n8k16 sustains when its B fragments come from shared memory as the row path's
q.K^T takes them (one m16 tile a warp: one MMA per 16 x 8 fragment, so 512 bytes loaded for every
two MMAs), per SM clock, with WARPS warps an SM: ldmatrix.x4 against ld.shared.v4 (the fragments
of a dims order permuted alike in q and K), each alone, and the MMAs alone.

    PYTHONPATH=. python3 bench/micro_feed.py [WARPS ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from micro_mio import ClockedLoops, entry_points  # noqa: E402

ITERS = 4096
MODES = {
    0: ("ldmatrix.x4 x4 -> mma x8", 8, 4),
    1: ("ld.shared.v4 x4 -> mma x8", 8, 4),
    2: ("mma x8 (B in registers)", 8, 0),
    3: ("ldmatrix.x4 x4 alone", 0, 4),
    4: ("ld.shared.v4 x4 alone", 0, 4),
    5: ("ldmatrix.x4.trans x4 -> mma x8", 8, 4),
    6: ("ldmatrix.x4 x4 -> movmatrix x16 -> mma x8", 8, 4),
}
SOURCE = (Path(__file__).parent / "micro_feed.cu").read_text() + entry_points(MODES, 1024)


def main() -> None:
    warps_list = [int(w) for w in sys.argv[1:]] or [8, 12, 16]
    loops = ClockedLoops(SOURCE, "micro_feed.cu", 1024)
    print(f"{loops.props.name}, {loops.sms} SMs, one block an SM, {ITERS} iterations")
    print(
        f"{'loop body (per warp, per iteration)':44s} {'warps':>5s} {'clk/iter':>8s} "
        f"{'MMA/clk/SM':>10s} {'B/clk/SM':>8s} {'% of MMA alone':>14s}"
    )
    for warps in warps_list:
        alone = None
        for mode in sorted(MODES, key=lambda m: m != 2):  # the MMAs alone first: the baseline
            label, mmas, loads = MODES[mode]
            per_iter = loops.per_warp_iteration(mode, warps, ITERS)
            rate = mmas / per_iter
            alone = rate if mode == 2 else alone
            share = f"{100 * rate / alone:13.0f}%" if alone and mmas else ""
            print(
                f"{label:44s} {warps:5d} {per_iter:8.2f} {rate:10.3f} "
                f"{loads * 512 / per_iter:8.1f} {share:>14s}"
            )


if __name__ == "__main__":
    main()
