"""How the sweep's compiles scale with cores. The variants `kgen sweep --compile-only ARGS` would
compile are compiled once per process count N, each time on a fresh kernel cache (a folder of
its own under OUT), by the sweep's own pool (kgen.tune.sweep.compile_space). Per N it prints the
variants compiled, the wall time, the rate, the speed-up over the first N, the efficiency
(speed-up / (N / first N)), and the two parts the efficiency splits into: the mean seconds one
compile takes in its process (slower at larger N where processes share cores, caches, memory
bandwidth or clocks) and the share of the processes' time spent compiling (the rest: process
start-up, and the tail where some processes have nothing left).

With --per-process P, N processes compile N x P of the variants, spread evenly over the whole
list (every variant where N x P reaches its length), so each N sees the same mix of variants and
the same number per process: the one-process point of a large job (the README's main job: 1,148
variants, about 20 minutes on one core) then costs P compiles.

    PYTHONPATH=. python3 bench/compile_scaling.py --jobs 1 4 8 16 --per-process 40 --out DIR
    PYTHONPATH=. python3 bench/compile_scaling.py --jobs 1 16 --out DIR -- \\
        --case kimi-tp8-decode-long dsv32-sparse-h16-b1

ARGS (after --) are kgen sweep's (grid cases, --space, axis flags; --arch, default sm_120); none:
the README's main job (the default grid, compact space). A line per N goes to stdout as it ends,
then the table as JSON lines (what the standing docs record).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen.arch import resolve_arch  # noqa: E402
from kgen.tune.cli import parse_sweep  # noqa: E402
from kgen.tune.sweep import compile_space, sweep_variants  # noqa: E402


def spread(pairs: list, count: int) -> list:
    """`count` of `pairs`, evenly spaced over the whole list (all of it when count reaches its
    length)."""
    if count >= len(pairs):
        return list(pairs)
    return [pairs[i * len(pairs) // count] for i in range(count)]


def run(jobs: int, pairs: list, arch: str, cache: Path) -> dict:
    """Compile `pairs` with `jobs` processes on the empty cache `cache`: the sweep's ledger."""
    cache.mkdir(parents=True, exist_ok=False)
    os.environ["KGEN_CACHE_DIR"] = str(cache)  # the pool's processes start with it
    ledger: dict = {}
    compile_space(pairs, arch, jobs=jobs, ledger=ledger)
    return ledger


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, nargs="+", required=True, help="process counts")
    parser.add_argument(
        "--per-process",
        type=int,
        help="variants a process (N x this of them, spread over the list; default: all, each N)",
    )
    parser.add_argument("--out", type=Path, required=True, help="where the caches go")
    parser.add_argument("args", nargs="*", help="kgen sweep's arguments (after --)")
    options = parser.parse_args()
    if any(j < 1 for j in options.jobs):
        parser.error("argument --jobs: process counts must be >= 1")
    if options.per_process is not None and options.per_process < 1:
        parser.error("argument --per-process: must be >= 1")
    if {"--out", "-j", "--jobs", "--devices", "--ray"} & set(options.args):
        parser.error("the sweep's arguments: --out, -j, --devices and --ray are not taken here")
    cases, sweep = parse_sweep(options.args)
    arch = resolve_arch(sweep.arch or "sm_120")
    pairs, _ = sweep_variants(cases, sweep, arch)
    print(f"{len(cases)} cases, {len(pairs)} variants for {arch.name}", flush=True)
    rows = []
    for jobs in options.jobs:
        count = len(pairs) if options.per_process is None else jobs * options.per_process
        todo = spread(pairs, count)
        ledger = run(jobs, todo, arch.name, options.out / f"run-j{jobs}" / "cache")
        wall, compiled = ledger["compile_wall_s"], ledger["compiled"]
        busy = sum(ledger["compile_workers"].values())
        workers = min(jobs, len(todo))
        rate = compiled / wall
        first = rows[0] if rows else None
        speedup = rate / first["rate"] if first else 1.0
        rows.append(
            {
                "jobs": jobs,
                "variants": compiled,
                "wall_s": round(wall, 1),
                "rate": round(rate, 3),
                "speedup": round(speedup, 2),
                "efficiency": round(speedup / (jobs / (first or {"jobs": jobs})["jobs"]), 2),
                "s_per_compile": round(busy / compiled, 2),
                "busy": round(busy / (workers * wall), 2),
            }
        )
        r = rows[-1]
        print(
            f"-j {jobs:3d}: {r['variants']} variants in {r['wall_s']:.0f} s, {r['rate']:.2f}/s, "
            f"speed-up {r['speedup']:.2f}, efficiency {r['efficiency']:.2f} "
            f"({r['s_per_compile']:.2f} s a compile, {r['busy']:.0%} busy)",
            flush=True,
        )
    for r in rows:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
