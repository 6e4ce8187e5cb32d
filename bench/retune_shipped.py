"""Re-tune the shipped configs after a kernel change that leaves the design space alone: each
16-bit grid case's shipped config (kgen/tuned/tuning.json; dense or sparse) is swept again with
every axis pinned to it, so only its KV split count is re-chosen (the sweep's split
candidates), checked against the float64 oracle and timed with the current code, and its entry
re-recorded (new code stamp, new trials) in --db. Far cheaper than a full sweep; it finds no new
configs. `--record` records the winners of an earlier run's DIR/<case>/results.json instead
(where the device's database did not come back, say). `--open AXIS=V,V` sweeps those values of
an axis instead of the shipped one (e.g. `--open merge=fused,pdl --open min_blocks=1,3`,
`--open mma_stage_tiles=2x16,3x16` for (stages, block_n) pairs; for the sparse family, those of
its axes).

    PYTHONPATH=. python3 bench/retune_shipped.py --out DIR --db DB [--reps N] [--open A=V,V] [CASE]
    python3 bench/retune_shipped.py --record --out DIR --db DB
    (--family dense|sparse: only that family's cases; --kv-format F: the dense cases on cache
    format F, the configs shipped for it)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen import device  # noqa: E402
from kgen.arch import resolve_arch  # noqa: E402
from kgen.mla import Config, SparseConfig, SparseSpec  # noqa: E402
from kgen.mla.heuristic import default_config  # noqa: E402
from kgen.mla.tuning import TuningDB  # noqa: E402
from kgen.tune.space import FIT_ARCHS, Axes, load_grid, on_kv_format  # noqa: E402
from kgen.tune.sparse_space import SparseAxes  # noqa: E402
from kgen.tune.sweep import SweepOptions, compile_space, record_best, run_sweep  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from time_shipped import shipped_configs  # noqa: E402


def pinned_axes(config: Config) -> Axes:
    """The sweep axes that enumerate exactly `config` (kv_splits aside)."""
    return Axes(
        heads_per_block=(config.heads_per_block,),
        num_warps=(config.num_warps,),
        vec_width=(config.vec_width,),
        computes=(config.compute,),
        tiled_stages=(config.smem_stages,),
        stage_tiles=((config.smem_stages, config.block_n),),
        mma_stage_tiles=((config.smem_stages, config.block_n),),
        col_groups=(config.col_groups,),
        min_blocks=(config.min_blocks,),
        qk_ahead=(config.qk_ahead,),
        softmax=(config.softmax,),
        merge=(config.merge,),
        body=(config.body,),
        ring_slack=(config.ring_slack,),
    )


def pinned_sparse_axes(config: SparseConfig) -> SparseAxes:
    """The sparse sweep axes that enumerate exactly `config` (kv_splits aside)."""
    registers = config.dequant == "registers"
    return SparseAxes(
        heads_per_block=(config.heads_per_block,),
        num_warps=(config.num_warps,),
        col_groups=(config.col_groups,),
        shared_tiles=() if registers else ((config.smem_stages, config.block_n),),
        register_tiles=(config.block_n,) if registers else (),
        gather_bytes=(config.gather_bytes,),
        dequant=(config.dequant,),
        min_blocks=(config.min_blocks,),
        merge=(config.merge,),
        softmax=(config.softmax,),
    )


def pinned_options(config, db: Path, reps: int, opened: dict) -> SweepOptions:
    """Sweep options whose space is `config` alone, in its family's axes, with the `opened` axes'
    values instead of its own (those of the family's axes)."""
    if isinstance(config, SparseConfig):
        axes = pinned_sparse_axes(config)
        axes = dataclasses.replace(axes, **{k: v for k, v in opened.items() if hasattr(axes, k)})
        return SweepOptions(sparse_axes=axes, db_path=db, reps=reps)
    axes = dataclasses.replace(pinned_axes(config), **opened)
    return SweepOptions(axes=axes, db_path=db, reps=reps)


def first_default(case, arch: str, sms: int):
    """The heuristic default's first candidate for a dense case (None for a sparse one, whose
    default compiles nothing to choose)."""
    if isinstance(case.spec, SparseSpec):
        return None
    return default_config(case.spec, case.batch, case.max_len, resolve_arch(arch), sms)


def parse_open(items: list[str]) -> dict:
    """`AXIS=V,V` items -> {axis: (V, V)} (integers where they are, names as merge=fused,pdl;
    `SxN` values are (S, N) pairs, as mma_stage_tiles=2x16,3x16 for (stages, block_n))."""
    opened = {}
    for item in items:
        axis, _, values = item.partition("=")
        opened[axis] = tuple(
            tuple(int(x) for x in v.split("x"))
            if "x" in v and v[0].isdigit()
            else int(v)
            if v.isdigit()
            else v
            for v in values.split(",")
        )
    return opened


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="grid cases (default: every 16-bit one)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--record", action="store_true", help="record --out's results only")
    parser.add_argument("--family", choices=("dense", "sparse"), help="only this family's cases")
    parser.add_argument("--open", action="append", default=[], help="AXIS=V,V: axis values")
    parser.add_argument(
        "--kv-format", help="the dense cases on this cache format: the configs shipped for it"
    )
    args = parser.parse_args()
    opened = parse_open(args.open)
    grid = {c.name: c for c in load_grid()}
    if args.kv_format:
        grid = {c.name: c for c in on_kv_format(list(grid.values()), args.kv_format)}
    configs = shipped_configs(args.kv_format)
    names = args.cases or [
        n
        for n, config in configs.items()
        if grid[n].spec.dtype != "float32"
        and args.family in (None, "sparse" if isinstance(config, SparseConfig) else "dense")
    ]
    if args.record:
        for name in names:
            report = json.loads((args.out / name / "results.json").read_text())
            record_best(TuningDB(args.db), grid[name], report["cases"][0], report["meta"])
        return 0
    arch = resolve_arch("native").name
    # Every kernel the sweeps below build, compiled at once in parallel (they then come from the
    # cache): the shipped configs for this GPU and for the target archs a winner must fit, and
    # the heuristic defaults the sweeps also time (their first candidates: compiled_default
    # passes over one that spills, which is then built in the sweep).
    pinned = [(grid[n].spec, configs[n]) for n in names]
    sms = device.sm_count(device.current())
    defaults = [(grid[n].spec, first_default(grid[n], arch, sms)) for n in names]
    compile_space(pinned + [d for d in defaults if d[1] is not None], arch)
    for fit in FIT_ARCHS:
        compile_space(pinned, fit)
    for name in names:
        options = pinned_options(configs[name], args.db, args.reps, opened)
        report = run_sweep([grid[name]], args.out / name, options)
        best = report["cases"][0].get("best") or {}
        print(json.dumps({"case": name, "best": best.get("config"), "us": best.get("median_us")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
