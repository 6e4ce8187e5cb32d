"""A/B of an L2 eviction priority on the KV tile copies (bench/knockout.py's evict1st edit)
under both of kgen.tune.timing's L2 flushes: "write" (kgen's timing: L2 left full of dirty
lines, which the kernel's reads must write back as they evict them) and "read" (L2 left clean).
Each variant's outputs are compared bit for bit with the unedited kernel's. Prints one line per
(case, flush, variant): median us.

    PYTHONPATH=. python3 bench/evict_ab.py [--reps N] CASE ...
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from knockout import build_knocked, precompile  # noqa: E402
from time_shipped import case_config, shipped_configs  # noqa: E402

from kgen.mla.workload import make_workload  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.timing import FLUSHES, Timer  # noqa: E402

VARIANTS = {"base": [], "evict1st": ["evict1st"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    grid = {c.name: c for c in load_grid()}
    configs = shipped_configs()
    runs = [f"{name}@{'+'.join(kos) or 'base'}" for name in args.cases for kos in VARIANTS.values()]
    with ProcessPoolExecutor(8, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(precompile, runs))  # into the disk cache, in parallel
    timers = {flush: Timer(torch.device("cuda"), flush) for flush in FLUSHES}
    for name in args.cases:
        case, config = case_config(name, configs)
        w = make_workload(grid[case].spec, grid[case].seq_lens, seed=1)
        kernels = {v: build_knocked(grid[case].spec, config, kos) for v, kos in VARIANTS.items()}
        outs = {}
        for v, kernel in kernels.items():
            out, lse = w.poisoned_outputs()
            kernel(*w.args(), out=out, lse=lse)
            torch.cuda.synchronize()
            outs[v] = (out, lse)
        same = all(
            torch.equal(outs[v][0], outs["base"][0]) and torch.equal(outs[v][1], outs["base"][1])
            for v in outs
        )
        for flush, timer in timers.items():
            for _round in range(2):
                for v, kernel in kernels.items():
                    out, lse = outs[v]
                    a = w.args()
                    run = lambda: kernel(*a, out=out, lse=lse)  # noqa: B023, E731
                    us = timer.flushed(run, args.reps).median_us
                    print(f"{name:28} {flush:5} {v:9} {us:8.2f}  identical={same}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
