"""`kgen sweep`: a shape (or a grid file's cases) -> compile (and, on a GPU, verify and time) the
design space; a table on the terminal; results.csv, results.json and plots in --out. A shape
with --topk is a sparse top-k case (the indices of each sequence choose among --prefix cache
positions of its own)."""

from __future__ import annotations

import json
from pathlib import Path

from kgen.params import ParamError
from kgen.tune.space import Axes, case_from_dict, load_grid
from kgen.tune.sparse_space import SparseAxes

# The tensor-core integer axes that `kgen sweep` takes as flags (--col-groups ...; defaults: Axes).
MMA_AXES = {
    "col_groups": "warps that share a block's rows and split its output columns",
    "min_blocks": "blocks per SM the registers must allow (0: ptxas decides)",
    "qk_ahead": "1 = q.K of the next tile beside softmax and P.V of this one",
    "split_reduce": "1 = the column groups' partial scores summed once, a slice per warp",
    "split_softmax": "1 = each tile's softmax split in slices between a row group's warps, P "
    "shared through shared memory",
    "swap_rows": "1 = the rows (at most 8) on the n8 side of both products, not padded to m16",
    "pdl_combine": "1 = the split-KV merge in a kernel of its own, launched with programmatic "
    "dependent launch (sm_90 and later)",
    "specialize": "1 = warps in two roles: q.K^T and the copies, softmax and P.V a tile behind",
    "ring_slack": "k >= 1 = the KV tile ring on a barrier a stage (three-row 12-warp blocks): row "
    "groups up to k tiles apart",
}


def add_sweep_parser(commands) -> None:
    p = commands.add_parser(
        "sweep", help="compile (and on a GPU verify and time) the design space", description=__doc__
    )
    p.add_argument("--grid", type=Path, help="a grid file of cases (bench/grid.json)")
    p.add_argument(
        "--case", action="append", default=[], help="only the grid cases with these names"
    )
    p.add_argument(
        "--family", choices=["dense", "sparse"], help="only the grid cases of this kernel family"
    )
    p.add_argument("--heads", type=int, help="a single shape: heads per GPU (H)")
    p.add_argument("--q-len", type=int, default=1)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prefix", type=int, default=4096, help="committed positions per sequence")
    p.add_argument("--mask", choices=["none", "causal", "tree"], default="none")
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="bfloat16")
    p.add_argument("--page-size", type=int, default=64)
    p.add_argument("--topk", type=int, help="a sparse shape: cache entries listed per query token")
    p.add_argument("--kv-format", choices=["fp8", "bf16"], default="fp8", help="sparse cache")
    p.add_argument("--arch", help="target arch (default: the GPU, or sm_120 without one)")
    p.add_argument("--compile-only", action="store_true", help="resources and occupancy, no timing")
    p.add_argument("--heads-per-block", type=int, nargs="+", help="axis values (default: divisors)")
    p.add_argument("--num-warps", type=int, nargs="+", default=[4, 8])
    p.add_argument("--vec-width", type=int, nargs="+", help="axis values (default: 16-byte loads)")
    p.add_argument(
        "--compute",
        nargs="+",
        choices=["fma", "mma", "tiled"],
        default=["fma", "mma", "tiled"],
        help="compute paths to sweep (mma: 16-bit dtypes only; tiled: float32 only)",
    )
    for field, help in MMA_AXES.items():
        p.add_argument(
            "--" + field.replace("_", "-"),
            type=int,
            nargs="+",
            default=list(getattr(Axes(), field)),
            help=f"mma axis values: {help}",
        )
    p.add_argument(
        "--mma-tiles",
        nargs="+",
        default=None,
        metavar="STAGESxBLOCK_N",
        help="mma (smem_stages, block_n) pairs, e.g. 3x16 2x32 (default: kgen.tune.space)",
    )
    p.add_argument(
        "--sparse-tiles",
        nargs="+",
        default=None,
        metavar="STAGESxBLOCK_N",
        help="sparse cp.async pipelines (smem_stages, block_n), e.g. 2x16 3x16 2x32",
    )
    p.add_argument(
        "--register-tiles",
        type=int,
        nargs="+",
        default=None,
        help="sparse block_n values of dequant='registers' (default: kgen.tune.sparse_space)",
    )
    p.add_argument("--gather-bytes", type=int, nargs="+", default=[8, 16], help="sparse axis")
    p.add_argument(
        "--dequant",
        nargs="+",
        choices=["shared", "registers"],
        default=["shared", "registers"],
        help="sparse axis: where the fp8 cache is dequantized",
    )
    p.add_argument("--reps", type=int, default=20, help="timed launches per variant")
    p.add_argument(
        "--case-seconds",
        type=float,
        help="GPU: seconds of variant trials per case; the rest are left untimed (default: all)",
    )
    p.add_argument(
        "--seconds",
        type=float,
        help="GPU: the whole sweep's time; each case's variant trials get an equal share of what "
        "is left when it starts (the rest are left untimed; default: no limit)",
    )
    p.add_argument("--jobs", type=int, help="compile processes (default: all cores)")
    p.add_argument("--db", type=Path, help="tuning database to record winners in")
    p.add_argument("--out", type=Path, default=Path("sweep-out"))
    p.set_defaults(run=_run)


def _tiles(pairs: list[str], flag: str = "--mma-tiles") -> tuple[tuple[int, int], ...]:
    try:
        return tuple(tuple(int(x) for x in pair.split("x")) for pair in pairs)
    except ValueError:
        raise SystemExit(f"kgen sweep: {flag} takes STAGESxBLOCK_N pairs, got {pairs}") from None


def _run(args) -> int:
    from kgen.tune.report import plot, summary_table, write_csv
    from kgen.tune.sweep import SweepOptions, run_sweep

    if args.grid:
        cases = load_grid(args.grid, args.family)
        if not cases:
            raise SystemExit(f"kgen sweep: no {args.family} case in {args.grid}")
        if args.case:
            cases = [c for c in cases if c.name in args.case]
            if not cases:
                raise SystemExit(f"kgen sweep: no case named {args.case} in {args.grid}")
    elif args.heads:
        shape = {
            "H": args.heads,
            "T": args.q_len,
            "B": args.batch,
            "S": args.prefix,
            "dtype": args.dtype,
            "page_size": args.page_size,
        }
        if args.topk:
            shape.update(topk=args.topk, kv_format=args.kv_format)
        else:
            shape.update(mask=args.mask)
        try:
            cases = [case_from_dict(shape)]
        except ParamError as err:
            raise SystemExit(f"kgen sweep: {err}") from None
    else:
        raise SystemExit("kgen sweep: give --grid FILE or a shape (--heads H [--q-len T ...])")
    axes = Axes(
        heads_per_block=tuple(args.heads_per_block) if args.heads_per_block else None,
        num_warps=tuple(args.num_warps),
        vec_width=tuple(args.vec_width) if args.vec_width else None,
        computes=tuple(args.compute),
        **{field: tuple(getattr(args, field)) for field in MMA_AXES},
        **({"mma_stage_tiles": _tiles(args.mma_tiles)} if args.mma_tiles else {}),
    )
    sparse_axes = SparseAxes(
        heads_per_block=tuple(args.heads_per_block) if args.heads_per_block else None,
        num_warps=tuple(args.num_warps),
        col_groups=tuple(args.col_groups),
        min_blocks=tuple(args.min_blocks),
        pdl_combine=tuple(args.pdl_combine),
        split_softmax=tuple(args.split_softmax),
        gather_bytes=tuple(args.gather_bytes),
        dequant=tuple(args.dequant),
        **(
            {"shared_tiles": _tiles(args.sparse_tiles, "--sparse-tiles")}
            if args.sparse_tiles
            else {}
        ),
        **({"register_tiles": tuple(args.register_tiles)} if args.register_tiles else {}),
    )
    options = SweepOptions(
        arch=args.arch,
        compile_only=True if args.compile_only else None,
        axes=axes,
        sparse_axes=sparse_axes,
        reps=args.reps,
        case_seconds=args.case_seconds,
        seconds=args.seconds,
        jobs=args.jobs,
        db_path=args.db,
    )
    report = run_sweep(cases, args.out, options)
    write_csv(report, args.out / "results.csv")
    plots = plot(report, args.out)
    print(summary_table(report))
    meta = report["meta"]
    print(
        f"\n{meta['mode']} sweep for {meta['arch']} (kgen {meta['kgen']}, NVRTC {meta['nvrtc']}): "
        f"{args.out / 'results.json'}, {args.out / 'results.csv'}"
        + "".join(f", {p}" for p in plots)
    )
    if "ceilings" in meta:
        print(
            "ceilings:",
            json.dumps(
                {
                    k: round(v, 1) if isinstance(v, float) else v
                    for k, v in meta["ceilings"].items()
                    if k != "id"
                }
            ),
        )
    return 0


def add_tune_parser(commands) -> None:
    p = commands.add_parser(
        "tune", help="list the tuning databases' entries, marking stale ones (not used)"
    )
    p.add_argument("action", choices=["ls"])
    p.add_argument("--db", type=Path, help="a tuning database (default: the user's and shipped)")
    p.set_defaults(run=_tune)


def _tune(args) -> int:
    from kgen.mla.tuning import SHIPPED, TuningDB, staleness

    dbs = [TuningDB(args.db)] if args.db else [TuningDB.user(), TuningDB(SHIPPED)]
    stale = 0
    for db in dbs:
        entries = db.entries()
        print(f"{db.path}: {len(entries)} entries")
        for key, entry in entries.items():
            why = staleness(entry)
            stale += why is not None
            config = entry.get("config", {})
            name = ", ".join(f"{k}={v}" for k, v in config.items())
            status = f"STALE: {why}" if why else "ok"
            print(f"  {key}  {entry.get('median_us', float('nan')):9.1f} us  {status}\n    {name}")
    print(f"{stale} stale entries (never used by config='auto')")
    return 0
