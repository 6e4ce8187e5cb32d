"""A/B of the PDL merge's slice cap (kgen.mla.workspace.MAX_COMBINE_SLICES): the shipped config of
each named grid case timed with the cap at each value, rounds alternating, every trial checked
against the float64 oracle as the sweep checks it (the `error` printed).

    PYTHONPATH=. python3 bench/combine_slices_ab.py [--rounds N] [--caps 16,32] CASE ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from time_shipped import case_config, shipped_configs  # noqa: E402

from kgen.arch import resolve_arch  # noqa: E402
from kgen.mla import workspace  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.sweep import compile_space  # noqa: E402
from kgen.tune.trials import Trials  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--caps", default="16,32")
    args = parser.parse_args()
    grid = {c.name: c for c in load_grid()}
    configs = shipped_configs()
    runs = [(name, *case_config(name, configs)) for name in args.cases]
    compile_space(
        [(grid[case].spec, config) for _, case, config in runs], resolve_arch("native").name
    )
    trials = Trials("write")
    for round_ in range(args.rounds):
        for cap in (int(c) for c in args.caps.split(",")):
            workspace.MAX_COMBINE_SLICES = cap
            for name, case, config in runs:
                (r,) = trials.variant(
                    grid[case], config, [config.kv_splits], seed=3, reps=args.reps
                )
                row = {"round": round_, "cap": cap, "case": name, "config": config.short_name()}
                row |= {k: r.get(k) for k in ("status", "median_us", "error")}
                print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
