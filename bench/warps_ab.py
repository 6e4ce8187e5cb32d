"""Time the heuristic default of off-grid shapes (kgen.mla.choose.compiled_default on this GPU)
against the same config on another warp count, its KV splits refit to that kernel's blocks per
SM: the A/B behind a default that changed its warps (twenty-sixth session: float32 FMA blocks of
9-12 rows moved from 8 warps, which spilled, to 4). Each shape is a grid entry's fields,
`H=3,T=3,mask=causal,B=1,S=2048,dtype=float32`; both kernels are checked against the float64
oracle first. JSON lines to stdout.

    PYTHONPATH=. python3 bench/warps_ab.py [--warps 8] [--reps N] SHAPE...
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgen import device  # noqa: E402
from kgen.arch import resolve_arch  # noqa: E402
from kgen.mla.choose import compiled_default, refit_splits  # noqa: E402
from kgen.mla.kernel import build  # noqa: E402
from kgen.tune.space import case_from_dict  # noqa: E402
from kgen.tune.trials import Trials  # noqa: E402


def parse_shape(text: str):
    """A grid case from `H=3,T=3,...` (integer fields as integers)."""
    fields = dict(item.split("=", 1) for item in text.split(","))
    entry = {k: int(v) if v.lstrip("-").isdigit() else v for k, v in fields.items()}
    return case_from_dict({"name": text} | entry)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="+")
    parser.add_argument("--warps", type=int, default=8, help="the warp count to compare against")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    arch, sms = resolve_arch("native"), device.sm_count(0)
    trials = Trials("write")
    for text in args.shapes:
        case = parse_shape(text)
        default = compiled_default(case.spec, case.batch, case.max_len, arch, sms)
        other = dataclasses.replace(default, num_warps=args.warps)
        other = refit_splits(case.spec, other, case.batch, case.max_len, arch, sms)
        for label, config in (("default", default), (f"warps{args.warps}", other)):
            res = build(case.spec, config, arch).resources
            (r,) = trials.variant(case, config, [config.kv_splits], seed=5, reps=args.reps)
            row = {"shape": text, "which": label, "config": config.short_name()}
            row |= {"regs": res.registers, "spills": res.spills}
            row |= {k: r.get(k) for k in ("status", "median_us", "error")}
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
