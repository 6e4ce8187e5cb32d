"""Time configs of shapes off the grid: each argument `SHAPE[:field=value,...]` is a shape given by
a grid entry's fields (`H=3,T=3,mask=causal,B=1,S=2048,dtype=float32`) and the heuristic default
this GPU's config='auto' falls back to (kgen.mla.choose.compiled_default), with those config fields
changed and its KV splits refit to the changed kernel's blocks per SM (unless `kv_splits` is
given). For A/Bs of a default against its neighbours: the twenty-sixth session's float32 defaults
that moved from 8 warps to 4 (`SHAPE SHAPE:num_warps=8`), or block shapes no grid case divides.
Each kernel is checked against the float64 oracle first. JSON lines to stdout.

    PYTHONPATH=. python3 bench/offgrid.py [--reps N] SHAPE[:field=value,...] ...
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
from kgen.tune.space import case_from_dict, parse_case_overrides, parse_fields  # noqa: E402
from kgen.tune.sweep import compile_space  # noqa: E402
from kgen.tune.trials import Trials  # noqa: E402


def parse_shape(text: str):
    """A grid case from `H=3,T=3,...` (a grid entry's fields)."""
    return case_from_dict({"name": text} | parse_fields(text))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="SHAPE[:field=value,...]")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    arch, sms = resolve_arch("native"), device.sm_count(0)
    runs = []
    for text in args.runs:
        shape, fields = parse_case_overrides(text)
        case = parse_shape(shape)
        config = compiled_default(case.spec, case.batch, case.max_len, arch, sms)
        runs.append((text, case, fields, dataclasses.replace(config, **fields)))
    # every kernel compiled at once (the cubin does not depend on the split count)
    compile_space([(case.spec, config) for _, case, _, config in runs], arch.name)
    trials = Trials("write")
    for text, case, fields, config in runs:
        if fields and "kv_splits" not in fields:
            config = refit_splits(case.spec, config, case.batch, case.max_len, arch, sms)
        res = build(case.spec, config, arch).resources
        (r,) = trials.variant(case, config, [config.kv_splits], seed=5, reps=args.reps)
        row = {"run": text, "config": config.short_name(), "kv_splits": config.kv_splits}
        row |= {"regs": res.registers, "spills": res.spills}
        row |= {"blocks_per_sm": res.occupancy.blocks_per_sm}
        row |= {k: r.get(k) for k in ("status", "median_us", "error")}
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
