"""What the split-KV merge kernel (pdl_combine) adds to a call: each named grid case's shipped
config timed as the sweep times it (L2 flushed, median), whole, and with the runner sending only
the attention kernel (its partials written, nothing merged: the results are not checked). The
difference is what a free merge would save; at B = 1 it bounds how close a cheaper merge could
bring a case to its target. Cases whose config has no separate merge are timed whole only.

    PYTHONPATH=. python3 bench/combine_share.py [--reps N] CASE ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from time_shipped import case_config, shipped_configs  # noqa: E402

from kgen.mla import runner as runner_module  # noqa: E402
from kgen.tune.family import family_of  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.timing import Timer  # noqa: E402
from kgen.tune.trials import SIDES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    grid = {c.name: c for c in load_grid()}
    configs = shipped_configs()
    device = torch.device("cuda", torch.cuda.current_device())
    timer = Timer(device)
    for name in args.cases:
        case_name, config = case_config(name, configs)
        case = grid[case_name]
        family = family_of(case.spec)
        side = SIDES[family.name]
        w = side.workload(case, device, 3)
        kernel = family.build(case.spec, config, "native")
        call_args = side.timed_args(w)
        out, lse = w.poisoned_outputs()
        kernel(*call_args, out=out, lse=lse)
        runner = runner_module.runners._last[1]  # the runner that call made
        row = {"case": name, "config": config.short_name(), "splits": config.kv_splits}

        def call(k=kernel, a=call_args, o=out, s=lse):
            return k(*a, out=o, lse=s)

        if runner._combine is None:
            row["whole_us"] = timer.flushed(call, reps=args.reps).median_us
        else:
            sends = {"whole": runner._send, "attention": runner._launch.launch}
            for label in ("whole", "attention", "whole2", "attention2"):
                runner._send = sends[label.rstrip("2")]
                row[f"{label}_us"] = timer.flushed(call, reps=args.reps).median_us
            runner._send = sends["whole"]
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
