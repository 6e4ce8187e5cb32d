"""Time each named grid case's shipped config (kgen/tuned/tuning.json, its stamp ignored; dense or
sparse) with the flushed timer, after checking it against the float64 oracle. For comparing two
versions of the kernel code on the same configs: run it from each tree. `CASE:field=value,...`
times the shipped config with those fields changed (e.g. `dsv3-tp1-batch:min_blocks=2,kv_splits=8`;
integer fields). `--batch N` times every case at N sequences instead (how the time scales
with the grid's blocks). `--default` times the heuristic default config='auto' falls back to on this
GPU (kgen.mla.choose.compiled_default; dense cases) instead of the shipped config, with the
`:field=value` changes if given: run from two trees, or with and without a change, an A/B of the
heuristic. `--flush read` flushes L2 by reading instead of overwriting (kgen.tune.timing.FLUSHES).
`--dtype float16` times each case's config at that dtype instead of the case's own (what one dtype's
conversions cost against the other's). JSON lines to stdout.

    PYTHONPATH=. python3 bench/time_shipped.py [--reps N] [--default] [--flush write|read] [CASE...]

(default: every 16-bit dense case)
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
from kgen.mla import Config  # noqa: E402
from kgen.mla.choose import compiled_default, refit_splits  # noqa: E402
from kgen.tune.family import FAMILIES  # noqa: E402
from kgen.tune.space import load_grid, parse_case_overrides  # noqa: E402
from kgen.tune.sweep import compile_space  # noqa: E402
from kgen.tune.timing import FLUSHES  # noqa: E402
from kgen.tune.trials import Trials  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def shipped_configs() -> dict:
    """The shipped config of every named case: a Config or a SparseConfig."""
    entries = json.loads((ROOT / "kgen/tuned/tuning.json").read_text())["entries"]
    return {
        e["case"]: FAMILIES[e.get("family", "dense")].config_type(**e["config"])
        for e in entries.values()
        if "case" in e
    }


def case_config(name: str, configs: dict) -> tuple:
    """The grid case of `CASE[:field=value,...]` and its shipped config with those fields."""
    case, fields = parse_case_overrides(name)
    return case, dataclasses.replace(configs[case], **fields)


def changed_default(case, fields: dict, arch, sm_count: int) -> Config:
    """The heuristic default of a grid case with `fields` changed, its KV splits refit (as
    compiled_default does) to the changed kernel's blocks per SM unless `fields` sets them."""
    spec, batch, max_len = case.spec, case.batch, case.max_len
    config = dataclasses.replace(compiled_default(spec, batch, max_len, arch, sm_count), **fields)
    if not fields or "kv_splits" in fields:
        return config
    return refit_splits(spec, config, batch, max_len, arch, sm_count)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--default", action="store_true", help="time the heuristic default")
    parser.add_argument(
        "--batch", type=int, help="time each case at this many sequences (splits as configured)"
    )
    parser.add_argument(
        "--flush", choices=FLUSHES, default="write", help="how L2 is flushed (kgen.tune.timing)"
    )
    parser.add_argument("--dtype", help="time each case at this dtype (bfloat16 or float16)")
    args = parser.parse_args()
    grid = {c.name: c for c in load_grid()}
    if args.batch:
        grid = {n: dataclasses.replace(c, batch=args.batch) for n, c in grid.items()}
    if args.dtype:
        grid = {
            n: dataclasses.replace(c, spec=dataclasses.replace(c.spec, dtype=args.dtype))
            for n, c in grid.items()
        }
    configs = shipped_configs()
    names = args.cases or [
        n for n, c in configs.items() if isinstance(c, Config) and grid[n].spec.dtype != "float32"
    ]
    runs = [(name, *case_config(name, configs)) for name in names]
    arch = resolve_arch("native")
    if args.default:
        sms = device.sm_count(0)
        runs = [
            (name, case, changed_default(grid[case], parse_case_overrides(name)[1], arch, sms))
            for name, case, _ in runs
        ]
    trials = Trials(args.flush)
    compile_space([(grid[case].spec, config) for _, case, config in runs], arch.name)
    for name, case, config in runs:
        (r,) = trials.variant(grid[case], config, [config.kv_splits], seed=3, reps=args.reps)
        summary = {k: r.get(k) for k in ("status", "median_us", "error")}
        shape = {"batch": grid[case].batch, "dtype": grid[case].spec.dtype}
        print(
            json.dumps(
                {"case": name, "config": config.short_name(), "flush": args.flush} | shape | summary
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
