"""`kgen sweep`: a shape (or a grid file's cases) -> compile (and, on a GPU, verify and time) the
design space; a table on the terminal; results.csv, results.json and plots in --out. Without
--grid or a shape it sweeps the default grid (kgen/tune/grid.json, also `--grid default`). A
shape with --topk is a sparse top-k case (the indices of each sequence choose among --prefix
cache positions of its own). Ctrl-C stops a sweep, keeping what finished in
--out/progress.jsonl; the same command resumes from it."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import re
import signal
import sys
from pathlib import Path

from kgen.mla.kv_format import FORMATS
from kgen.mla.sparse.spec import GATHER_BYTES, MAX_TOPK
from kgen.mla.spec import BODIES, MAX_Q_LEN, MERGES, SOFTMAXES
from kgen.params import ParamError
from kgen.tune.space import (
    COMPACT_AXES,
    DEFAULT_GRID,
    SPACES,
    Axes,
    GridError,
    case_from_dict,
    load_grid,
)
from kgen.tune.sparse_space import COMPACT_SPARSE_AXES, SparseAxes

# The tensor-core integer axes that `kgen sweep` takes as flags (--col-groups ...; defaults:
# Axes): the values Config accepts, and what the axis does.
MMA_AXES = {
    "col_groups": (1, 32, "warps that share a block's rows and split its output columns"),
    "min_blocks": (0, 32, "blocks per SM the registers must allow (0: ptxas decides)"),
    "qk_ahead": (0, 1, "1 = q.K of the next tile beside softmax and P.V of this one"),
    "ring_slack": (
        0,
        1,
        "1 = the KV tile ring on a barrier a stage (three-row 12-warp blocks): row groups up to a "
        "tile apart",
    ),
}
# The axes of named values (--softmax warp split, ...; defaults: Axes): the values, what they do
NAMED_AXES = {
    "softmax": (
        SOFTMAXES,
        "mma and sparse: a tile's softmax computed whole by every warp of a row group (warp), or "
        "in slices between them, P shared through shared memory (split)",
    ),
    "merge": (
        MERGES,
        "mma, tiled and sparse: the split-KV merge in the attention kernel (fused), or in a "
        "kernel of its own launched with programmatic dependent launch, sm_90 and later (pdl)",
    ),
    "body": (
        BODIES,
        "mma: the kernel body: every warp copies, computes q.K^T, softmax and P.V of its rows "
        "(rows), or warps in two roles: copies and q.K^T, softmax and P.V a tile behind "
        "(specialized)",
    ),
}
# Former flags of renamed axes, for one release: 0/1 are the axis' two values (CHANGELOG.md)
FORMER_FLAGS = {"--split-softmax": "softmax", "--pdl-combine": "merge", "--specialize": "body"}
# Flags of axes that were removed: refused with what to do instead
REMOVED_FLAGS = {
    "--swap-rows": "the swapped-rows kernel body was removed (no shipped entry, default or "
    "measured winner took it): drop the flag",
    "--split-reduce": "the split reduce was removed (no shipped entry, default or measured "
    "winner took it): drop the flag (--softmax warp split sweeps the softmax)",
}
# A single shape's options, with their defaults: given with --grid they would be ignored.
SHAPE_DEFAULTS = {
    "q_len": 1,
    "batch": 1,
    "prefix": 4096,
    "mask": "none",
    "dtype": "bfloat16",
    "page_size": 64,
    "topk": None,
    "kv_format": None,  # the family's: a dense cache in its dtype, a sparse one "fp8"
}


def _int(low: int, high: int | None = None):
    """An argparse type: an integer in [low, high] (no upper bound where high is None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise argparse.ArgumentTypeError(f"must be an integer {bound}, got {value}")
        return value

    return parse


def _devices(text: str) -> tuple[int, ...] | str:
    """An argparse type: 'all' or GPU indices I,J,... (distinct, >= 0)."""
    if text.strip() == "all":
        return "all"
    try:
        indices = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'all' or GPU indices such as 0,2, got {text!r}"
        ) from None
    if any(i < 0 for i in indices) or len(set(indices)) != len(indices):
        raise argparse.ArgumentTypeError(f"expected distinct GPU indices >= 0, got {text!r}")
    return indices


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text}")
    return value


def _tile(low_stages: int):
    """An argparse type: STAGESxBLOCK_N, e.g. 3x16."""

    def parse(text: str) -> tuple[int, int]:
        stages, _, block_n = text.partition("x")
        try:
            pair = (int(stages), int(block_n))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected STAGESxBLOCK_N (e.g. 3x16), got {text!r}"
            ) from None
        if not (low_stages <= pair[0] <= 8 and 1 <= pair[1] <= 256):
            raise argparse.ArgumentTypeError(
                f"stages must be in [{low_stages}, 8] and block_n in [1, 256], got {text!r}"
            )
        return pair

    return parse


class _FormerFlag(argparse.Action):
    """A former flag of a renamed axis: its 0/1 values become the axis' named values, with a
    note on stderr."""

    def __call__(self, parser, namespace, values, option_string=None):
        named = NAMED_AXES[self.dest][0]
        print(
            f"{parser.prog}: {option_string} is deprecated (CHANGELOG.md): use --{self.dest} "
            + " ".join(named[v] for v in values),
            file=sys.stderr,
        )
        setattr(namespace, self.dest, [named[v] for v in values])


class _RemovedFlag(argparse.Action):
    """A flag of a removed axis: refused in one line saying what to do instead."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"argument {option_string}: {REMOVED_FLAGS[option_string]}")


def add_sweep_parser(commands) -> None:
    p = commands.add_parser(
        "sweep",
        help="compile (and on a GPU verify and time) the design space",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--grid",
        metavar="FILE",
        help=f"a grid file of cases, or '{DEFAULT_GRID}' (kgen/tune/grid.json, shipped with kgen: "
        "what a sweep without --grid or a shape takes)",
    )
    p.add_argument(
        "--case",
        action="extend",
        nargs="+",
        default=[],
        metavar="NAME",
        help="only the grid cases with these names (repeatable)",
    )
    p.add_argument(
        "--family", choices=["dense", "sparse"], help="only the grid cases of this kernel family"
    )
    p.add_argument("--heads", type=_int(1, 1024), help="a single shape: heads per GPU (H)")
    p.add_argument("--q-len", type=_int(1, MAX_Q_LEN), help="query tokens per sequence (default 1)")
    p.add_argument("--batch", type=_int(1), help="sequences (default 1)")
    p.add_argument("--prefix", type=_int(0), help="committed positions per sequence (default 4096)")
    p.add_argument("--mask", choices=["none", "causal", "tree"], help="(default none)")
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], help="(default bfloat16)")
    p.add_argument("--page-size", type=_int(1, 1 << 20), help="cache positions a page (default 64)")
    p.add_argument(
        "--topk",
        type=_int(1, MAX_TOPK),
        help="a sparse shape: cache entries listed per query token",
    )
    p.add_argument(
        "--kv-format",
        choices=["dtype", *FORMATS],
        help="the cache's format (kgen.mla.kv_format): dense 'dtype' (default: q's dtype), "
        "'fp8_tensor' (e4m3, one k_scale) or 'fp8' (656-byte rows); sparse 'fp8' (default), "
        "'bf16', 'v4_fp8', ...",
    )
    p.add_argument(
        "--space",
        choices=SPACES,
        default="compact",
        help="the design space: compact (default: on the axes where every shipped winner and "
        "heuristic default agrees, only their value; kgen.tune.space.COMPACT_AXES) or full "
        "(every value); an axis flag below replaces that axis' values in either",
    )
    p.add_argument("--arch", help="target arch (default: the GPU, or sm_120 without one)")
    p.add_argument("--compile-only", action="store_true", help="resources and occupancy, no timing")
    p.add_argument(
        "--heads-per-block",
        type=_int(1, 1024),
        nargs="+",
        help="axis values (default: divisors)",
    )
    p.add_argument("--num-warps", type=_int(1, 32), nargs="+", help="(default: 4 8)")
    p.add_argument(
        "--vec-width",
        type=_int(1, 16),
        nargs="+",
        help="axis values (default: 16-byte loads)",
    )
    p.add_argument(
        "--compute",
        nargs="+",
        choices=["fma", "mma", "tiled"],
        help="compute paths to sweep (mma: 16-bit dtypes only; tiled: float32 only; default: "
        "mma tiled, with --space full also fma)",
    )
    for field, (low, high, help) in MMA_AXES.items():
        p.add_argument(
            "--" + field.replace("_", "-"),
            type=_int(low, high),
            nargs="+",
            help=f"mma axis values: {help} (default: the --space's)",
        )
    for field, (values, help) in NAMED_AXES.items():
        p.add_argument(
            "--" + field,
            choices=values,
            nargs="+",
            help=f"axis values: {help} (default: the --space's)",
        )
    for flag, field in FORMER_FLAGS.items():
        p.add_argument(
            flag, dest=field, type=_int(0, 1), nargs="+", action=_FormerFlag, help=argparse.SUPPRESS
        )
    for flag in REMOVED_FLAGS:
        p.add_argument(flag, nargs="*", action=_RemovedFlag, help=argparse.SUPPRESS)
    p.add_argument(
        "--mma-tiles",
        type=_tile(0),
        nargs="+",
        metavar="STAGESxBLOCK_N",
        help="mma (smem_stages, block_n) pairs, e.g. 3x16 2x32 (default: kgen.tune.space)",
    )
    p.add_argument(
        "--sparse-tiles",
        type=_tile(1),
        nargs="+",
        metavar="STAGESxBLOCK_N",
        help="sparse cp.async pipelines (smem_stages, block_n), e.g. 2x16 3x16 2x32",
    )
    p.add_argument(
        "--register-tiles",
        type=_int(1, 256),
        nargs="+",
        help="sparse block_n values of dequant='registers' (default: kgen.tune.sparse_space)",
    )
    p.add_argument(
        "--gather-bytes",
        type=int,
        choices=GATHER_BYTES,
        nargs="+",
        help="sparse axis (default: 8 16)",
    )
    p.add_argument(
        "--dequant",
        nargs="+",
        choices=["shared", "registers"],
        help="sparse axis: where the fp8 cache is dequantized (default: registers, with --space "
        "full also shared)",
    )
    p.add_argument("--reps", type=_int(1), default=20, help="timed launches per variant")
    p.add_argument(
        "--case-seconds",
        type=_seconds,
        help="GPU: seconds of variant trials per case; the rest are left untimed (default: all)",
    )
    p.add_argument(
        "--seconds",
        type=_seconds,
        help="GPU: the whole sweep's time; each case's variant trials get an equal share of what "
        "is left when it starts (the rest are left untimed; default: no limit)",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=_int(1),
        help="compile processes (default: the cores this process may use)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--devices",
        type=_devices,
        metavar="all|I,J,...",
        help="GPUs to time on, a worker process each (default: the current GPU)",
    )
    where.add_argument(
        "--ray",
        metavar="auto|ADDRESS",
        help="compile and time on a Ray cluster: auto (this machine's, else a new local one) "
        "or a cluster's address (needs kgen[ray])",
    )
    p.add_argument(
        "--worker-status",
        action="store_true",
        help="a line per GPU worker under the progress bar, saying what it runs",
    )
    p.add_argument("--db", type=Path, help="tuning database to record winners in")
    p.add_argument("--out", type=Path, default=Path("sweep-out"))
    p.set_defaults(run=_run, parser=p)


def _cases(args, error) -> list:
    """The cases the arguments name; `error(message)` reports a misuse and exits."""
    given = [name for name in SHAPE_DEFAULTS if getattr(args, name) is not None]
    if args.heads is None:
        if given:
            error(f"--{given[0].replace('_', '-')} describes a single shape: give --heads too")
        try:
            cases = load_grid(args.grid or DEFAULT_GRID, args.family)
        except GridError as err:
            error(f"argument --grid: {err}")
        where = args.grid or "the default grid"
        if not cases:
            error(f"no {args.family} case in {where}")
        if args.case:
            names = [c.name for c in cases]
            unknown = [n for n in dict.fromkeys(args.case) if n not in names]
            if unknown:
                family = f"{args.family} " if args.family else ""
                error(
                    f"argument --case: no {family}case named {', '.join(unknown)} in {where}; "
                    f"its cases: {', '.join(names)}"
                )
            cases = [c for c in cases if c.name in args.case]
        return cases
    for flag, value in (("--grid", args.grid), ("--case", args.case), ("--family", args.family)):
        if value:
            error(f"{flag} picks grid cases; a shape (--heads) is a case of its own")
    shape = {name: default for name, default in SHAPE_DEFAULTS.items()}
    shape.update({name: getattr(args, name) for name in given})
    sparse = shape["topk"] is not None
    for name in given:
        if name == "mask" and sparse:
            error("--mask applies to dense shapes only")
    entry = {
        "H": args.heads,
        "T": shape["q_len"],
        "B": shape["batch"],
        "S": shape["prefix"],
        "dtype": shape["dtype"],
        "page_size": shape["page_size"],
    }
    if sparse:
        entry.update(topk=shape["topk"])
    else:
        entry.update(mask=shape["mask"])
    if shape["kv_format"] is not None:
        entry.update(kv_format=shape["kv_format"])
    try:
        return [case_from_dict(entry)]
    except ParamError as err:
        error(_naming_flag(err, {"heads": "--heads", "q_len": "--q-len"}))


def _naming_flag(err: ParamError, flags: dict[str, str] | None = None) -> str:
    """A Spec or Config error ('Config.num_warps=3: ...') prefixed with the option that set the
    field (`flags`, else --field-name)."""
    match = re.match(r"\w+\.(\w+)=", str(err))
    if not match:
        return str(err)
    field = match.group(1)
    flag = (flags or {}).get(field, "--" + field.replace("_", "-"))
    return f"argument {flag}: {err}"


def _options(args, cases, error):
    """The sweep's options; every axis value checked against the configs it builds."""
    from kgen.arch import resolve_arch
    from kgen.device import NoGPUError
    from kgen.tune.family import family_of
    from kgen.tune.sweep import RayCluster, SweepOptions

    if args.arch is not None:
        try:
            resolve_arch(args.arch)
        except (ValueError, NoGPUError) as err:
            error(f"argument --arch: {err}")
    dense, sparse = (
        (COMPACT_AXES, COMPACT_SPARSE_AXES) if args.space == "compact" else (Axes(), SparseAxes())
    )
    given = {  # axis field: values, for the flags given
        field: tuple(getattr(args, flag))
        for field, flag in (
            ("heads_per_block", "heads_per_block"),
            ("num_warps", "num_warps"),
            ("vec_width", "vec_width"),
            ("computes", "compute"),
            *((field, field) for field in (*MMA_AXES, *NAMED_AXES)),
            ("mma_stage_tiles", "mma_tiles"),
            ("shared_tiles", "sparse_tiles"),
            ("register_tiles", "register_tiles"),
            ("gather_bytes", "gather_bytes"),
            ("dequant", "dequant"),
        )
        if getattr(args, flag) is not None
    }
    axes = dataclasses.replace(dense, **{k: v for k, v in given.items() if k in _fields(Axes)})
    sparse_axes = dataclasses.replace(
        sparse, **{k: v for k, v in given.items() if k in _fields(SparseAxes)}
    )
    placement = None
    if args.devices is not None:
        placement = _local_devices(args, error)
    elif args.ray is not None:
        if importlib.util.find_spec("ray") is None:  # looked for, not imported
            error('argument --ray: Ray is not installed (pip install "kgen[ray]")')
        placement = RayCluster(args.ray)
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
        placement=placement,
        worker_status=args.worker_status,
    )
    # a value no config takes (num_warps 12 off the mma path, ...), in the full space too: a
    # flag means the same whichever --space it goes with
    full = dataclasses.replace(
        options,
        axes=dataclasses.replace(Axes(), **{k: v for k, v in given.items() if k in _fields(Axes)}),
        sparse_axes=dataclasses.replace(
            SparseAxes(), **{k: v for k, v in given.items() if k in _fields(SparseAxes)}
        ),
    )
    for case in cases:
        try:
            for checked in (options, full):
                family_of(case.spec).enumerate(case.spec, checked)
        except ParamError as err:
            error(_naming_flag(err, {"block_n": "--mma-tiles", "smem_stages": "--mma-tiles"}))
    return options


def _fields(kind) -> set[str]:
    return {f.name for f in dataclasses.fields(kind)}


def _local_devices(args, error):
    """--devices as a placement, each index checked against the GPUs this process sees."""
    from kgen.tune.sweep import Devices, gpu_count

    if args.compile_only:
        error("argument --devices: a --compile-only sweep times nothing on a GPU")
    count = gpu_count()
    if count == 0:
        error("argument --devices: no GPU found (torch sees none)")
    if args.devices == "all":
        return Devices(tuple(range(count)))
    missing = [i for i in args.devices if i >= count]
    if missing:
        error(f"argument --devices: no GPU {missing[0]}; this process sees {count} (0-{count - 1})")
    return Devices(args.devices)


def _check_out(args, error) -> None:
    for flag, path, want in (("--out", args.out, "a folder"), ("--db", args.db, "a file")):
        if path is None:
            continue
        if want == "a folder" and path.exists() and not path.is_dir():
            error(f"argument {flag}: {path} is not a folder")
        if want == "a file" and path.is_dir():
            error(f"argument {flag}: {path} is a folder; expected a tuning database file")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        error(f"argument --out: {args.out} cannot be created: {err.strerror}")


class SweepSignals:
    """SIGINT and SIGTERM during a sweep: the first raises KeyboardInterrupt in the main thread
    (the sweep then ends its workers and keeps what finished) and remembers which it was; one
    after it is ignored, so that the clean-up runs to its end."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.signum: int | None = None

    def __enter__(self):
        self._previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def _handle(self, signum, frame):
        if self.signum is None:
            self.signum = signum
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        for s, previous in self._previous.items():
            signal.signal(s, previous)
        return False


def parse_sweep(argv: list[str]) -> tuple[list, object]:
    """The cases and SweepOptions `kgen sweep ARGV` would run, checked as it checks them (a
    misuse exits with its message): for tools that drive the sweep's parts themselves."""
    parser = argparse.ArgumentParser(prog="kgen")
    add_sweep_parser(parser.add_subparsers())
    args = parser.parse_args(["sweep", *argv])
    cases = _cases(args, args.parser.error)
    return cases, _options(args, cases, args.parser.error)


def _run(args) -> int:
    from kgen.tune.dispatch import PlacementError
    from kgen.tune.report import plot, summary_table, time_summary, write_csv
    from kgen.tune.sweep import SweepInterrupted, run_sweep

    error = args.parser.error
    with SweepSignals() as stop:
        try:
            cases = _cases(args, error)
            options = _options(args, cases, error)
            _check_out(args, error)
            try:
                report = run_sweep(cases, args.out, options)
            except PlacementError as err:
                error(str(err))
            write_csv(report, args.out / "results.csv")
            plots = plot(report, args.out)
        except KeyboardInterrupt as err:
            what = (
                f"{err.done}, progress in {err.progress}"
                if isinstance(err, SweepInterrupted)
                else f"progress in {args.out / 'progress.jsonl'}"
            )
            print(
                f"kgen sweep: interrupted: {what}; run the same command to resume",
                file=sys.stderr,
            )
            return 128 + (stop.signum or signal.SIGINT)
    print(summary_table(report))
    print(time_summary(report))
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
    p.set_defaults(run=_tune, parser=p)


def _tune(args) -> int:
    from kgen.mla.tuning import SHIPPED, TuningDB, staleness

    if args.db is not None:
        try:
            json.loads(args.db.read_text())
        except (OSError, UnicodeDecodeError) as err:
            args.parser.error(
                f"argument --db: {args.db} cannot be read: {getattr(err, 'strerror', err)}"
            )
        except ValueError as err:
            args.parser.error(f"argument --db: {args.db} is not a tuning database (JSON: {err})")
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
