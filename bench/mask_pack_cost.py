"""What packing a bool tree mask costs inside a timed call: each 16-bit tree case's shipped config
timed (flushed median, the sweep's timer) with the workload's bool mask, which the call packs into
bit rows with two small torch kernels, and with the bit rows packed once beforehand
(kgen.mla.pack_tree_mask), as a serving engine passes them to each layer; both checked against
the float64 oracle first. JSON lines to stdout.

    PYTHONPATH=. python3 bench/mask_pack_cost.py [--reps N] [CASE ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kgen.mla import build  # noqa: E402
from kgen.mla.check import check_attention  # noqa: E402
from kgen.mla.workload import make_workload  # noqa: E402
from kgen.tune.reference import torch_reference  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.timing import Timer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from time_shipped import shipped_configs  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    configs = shipped_configs()
    grid = load_grid(family="dense")
    trees = [
        c
        for c in grid
        if c.spec.mask == "tree"
        and c.spec.dtype != "float32"
        and (c.name in args.cases or not args.cases)
    ]
    device = torch.device("cuda", torch.cuda.current_device())
    timer = Timer(device)
    for case in trees:
        config = configs[case.name]
        kernel = build(case.spec, config, "native")
        w = make_workload(case.spec, case.seq_lens, device=device, seed=3)
        ref = [x.cpu().numpy() for x in torch_reference(w)]
        row = {"case": case.name, "config": config.short_name()}
        for label, call_args in (("bool", w.args()), ("packed", w.packed_args())):
            out, lse = w.poisoned_outputs()
            kernel(*call_args, out=out, lse=lse)
            check_attention(
                out.double().cpu().numpy(), lse.double().cpu().numpy(), *ref, case.spec.dtype
            )
            timing = timer.flushed(
                lambda k=kernel, a=call_args, o=out, s=lse: k(*a, out=o, lse=s), reps=args.reps
            )
            row[f"{label}_us"] = timing.median_us
        row["pack_us"] = row["bool_us"] - row["packed_us"]
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
