"""Time grid cases on this GPU with the flushed timer (kgen.tune.timing: L2 flushed, median), each
kernel checked against the float64 oracle first. JSON lines to stdout, one per case.

What is timed: each case's shipped config (kgen/tuned/tuning.json, its stamp ignored; dense or
sparse), or with --default the heuristic default config='auto' falls back to on a GPU without
tuned entries (dense: kgen.mla.dense.compiled_default; sparse:
kgen.mla.sparse.heuristic.default_sparse_config), or with --torch the plain torch implementation
(gather, matmuls and softmax in the case's dtype: kgen.tune.baseline), or with --gather (sparse
cases) the read-only gather of the rows the case lists (kgen.tune.gather: the bytes any kernel of
the case must read, read and nothing computed). With --kv-format the dense 16-bit cases run on
that cache format instead (an fp8 cache: the configs shipped for it, or with --default the
heuristic's). Run from two trees it is an
A/B of kernel code on the same configs (bench/ab.sh); with and without --default, of tuning
against the heuristic.

A CASE is a grid name, optionally with config fields changed: `dsv3-tp1-batch:min_blocks=2,
kv_splits=8` (a dense default's KV splits are refit to the changed kernel's blocks per SM unless
given). With --default a CASE may also be a shape off the grid, written as a grid entry's fields:
`H=3,T=3,mask=causal,B=1,S=2048,dtype=float32` (its fields after a colon as above).

    PYTHONPATH=. python3 bench/time_shipped.py [--reps N] [--default] [CASE ...]

No CASE: every grid case (kgen/tune/grid.json; without --default or --torch, those with a
shipped config). A DeepSeek-V4 case (kv_format v4_fp8, a second cache) is timed as the sweep
times it (kgen.tune.sparse_trials: two caches, a sink per head), checked against the float64
oracle of both lists first.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen.mla import SparseSpec  # noqa: E402
from kgen.tune.family import FAMILIES  # noqa: E402
from kgen.tune.space import (  # noqa: E402
    case_from_dict,
    load_grid,
    on_kv_format,
    parse_case_overrides,
    parse_fields,
)
from kgen.tune.timing import FLUSHES  # noqa: E402


def shipped_configs(kv_format: str | None = None) -> dict:
    """The shipped config of every named case: a Config or a SparseConfig; with `kv_format`, the
    dense cases' configs for that cache format (the entries tuned on it) instead."""
    entries = json.loads((ROOT / "kgen/tuned/tuning.json").read_text())["entries"]

    def wanted(e: dict) -> bool:
        if e.get("family", "dense") != "dense":
            return kv_format is None
        return e["spec"].get("kv_format", "dtype") == (kv_format or "dtype")

    return {
        e["case"]: FAMILIES[e.get("family", "dense")].config_type(**e["config"])
        for e in entries.values()
        if "case" in e and wanted(e)
    }


def case_config(name: str, configs: dict) -> tuple:
    """The grid case of `CASE[:field=value,...]` and its shipped config with those fields."""
    case, fields = parse_case_overrides(name)
    return case, dataclasses.replace(configs[case], **fields)


def parse_shape(text: str):
    """A grid case from `H=3,T=3,...` (a grid entry's fields)."""
    return case_from_dict({"name": text} | parse_fields(text))


def default_for(case, fields: dict, arch, sm_count: int):
    """The heuristic default of `case` on `arch` for `sm_count` SMs with `fields` changed; a dense
    default's KV splits refit (as compiled_default does) to the changed kernel's blocks per SM
    unless `fields` sets them, a sparse default's kept unless set."""
    from kgen.mla.dense import compiled_default, refit_splits
    from kgen.mla.sparse.heuristic import default_sparse_config

    if isinstance(case.spec, SparseSpec):
        config = default_sparse_config(case.spec, case.batch, arch, sm_count)
        return dataclasses.replace(config, **fields)
    spec, batch, max_len = case.spec, case.batch, case.max_len
    config = dataclasses.replace(compiled_default(spec, batch, max_len, arch, sm_count), **fields)
    if not fields or "kv_splits" in fields:
        return config
    return refit_splits(spec, config, batch, max_len, arch, sm_count)


def resolve(name: str, grid: dict, configs: dict, default: bool, arch, sm_count: int):
    """(case, config) of one CASE argument."""
    case_name, fields = parse_case_overrides(name)
    if case_name in grid:
        case = grid[case_name]
    elif default:
        case = parse_shape(case_name)
    else:
        raise SystemExit(f"{case_name!r}: no grid case (shapes off the grid need --default)")
    if default:
        return case, default_for(case, fields, arch, sm_count)
    if case_name not in configs:
        raise SystemExit(f"{case_name!r}: no shipped config (time its default with --default)")
    return case, dataclasses.replace(configs[case_name], **fields)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cases", nargs="*", metavar="CASE[:field=value,...]")
    parser.add_argument("--reps", type=int, default=20, help="timed launches a case (median)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--default", action="store_true", help="time the heuristic default")
    which.add_argument("--torch", action="store_true", help="time the plain torch implementation")
    which.add_argument(
        "--gather", action="store_true", help="sparse cases: time a read-only gather of their rows"
    )
    parser.add_argument(
        "--batch", type=int, help="time each grid case at this many sequences instead"
    )
    parser.add_argument(
        "--flush", choices=FLUSHES, default="write", help="how L2 is flushed (kgen.tune.timing)"
    )
    parser.add_argument("--dtype", help="time each grid case at this dtype (bfloat16, float16)")
    parser.add_argument(
        "--kv-format",
        help="time each dense 16-bit grid case on this cache format (fp8_tensor, fp8): the configs "
        "shipped for that format, or with --default the heuristic's",
    )
    args = parser.parse_args()

    from kgen import device
    from kgen.arch import resolve_arch
    from kgen.tune.sweep import compile_space
    from kgen.tune.trials import Trials

    grid = {c.name: c for c in load_grid()}
    if args.batch:
        grid = {n: dataclasses.replace(c, batch=args.batch) for n, c in grid.items()}
    if args.dtype:
        grid = {
            n: dataclasses.replace(c, spec=dataclasses.replace(c.spec, dtype=args.dtype))
            for n, c in grid.items()
        }
    if args.kv_format:
        if args.torch or args.gather:
            parser.error("--kv-format times kgen's kernels: not with --torch or --gather")
        grid = {c.name: c for c in on_kv_format(list(grid.values()), args.kv_format)}
    configs = shipped_configs(args.kv_format)
    arch, sms = resolve_arch("native"), device.sm_count(0)
    names = args.cases or list(grid)
    if not (
        args.cases or args.default or args.torch or args.gather
    ):  # every grid case that has a shipped config
        untuned = [n for n in names if n not in configs]
        names = [n for n in names if n in configs]
        if untuned:
            print(f"no shipped config (see --default): {', '.join(untuned)}", file=sys.stderr)
    if args.torch:
        trials = Trials(args.flush)
        for name in names:
            r = trials.baseline(grid[name], seed=5, reps=args.reps)
            row = {"case": name, "config": "torch", "flush": args.flush}
            row |= {k: r.get(k) for k in ("status", "median_us", "p10_us", "p90_us", "error")}
            print(json.dumps(row), flush=True)
        return 0
    if args.gather:
        return time_gathers([grid[n] for n in names], args.flush, args.reps)
    runs = [(name, *resolve(name, grid, configs, args.default, arch, sms)) for name in names]
    compile_space([(case.spec, config) for _, case, config in runs], arch.name)  # in parallel
    trials = Trials(args.flush)
    for name, case, config in runs:
        (r,) = trials.variant(case, config, [config.kv_splits], seed=3, reps=args.reps)
        res = r.get("resources", {})
        row = {"case": name, "config": config.short_name(), "kv_splits": config.kv_splits}
        row |= {"flush": args.flush, "batch": case.batch, "dtype": case.spec.dtype}
        row |= {"kv_format": case.spec.kv_format}
        row |= {k: r.get(k) for k in ("status", "median_us", "p10_us", "p90_us", "error")}
        row |= {k: res.get(k) for k in ("registers", "spills", "warps_per_sm")}
        print(json.dumps(row), flush=True)
    return 0


def time_gathers(cases: list, flush: str, reps: int) -> int:
    """A JSON line per sparse case: its read-only gather's median and the bytes it read."""
    import torch

    from kgen.tune.gather import read_rows
    from kgen.tune.sparse_trials import bench_workload
    from kgen.tune.timing import Timer

    timer = Timer(torch.device("cuda"), flush)
    for case in cases:
        if not isinstance(case.spec, SparseSpec):
            continue
        run = read_rows(bench_workload(case, torch.device("cuda"), seed=3))
        t = timer.flushed(run, reps=reps)
        row = {"case": case.name, "config": "gather", "flush": flush, "status": "ok"}
        row |= {"median_us": t.median_us, "p10_us": t.p10_us, "p90_us": t.p90_us}
        row |= {"bytes": run.bytes, "gbs": run.bytes / t.median_us / 1e3}
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
