"""How the sweep's compiles scale with cores: run `kgen sweep --compile-only -j N ARGS` once per N
on a fresh kernel cache each (a folder of its own under OUT), and print, per N, the variants
compiled, the compile phase's wall time (from the sweep's results.json, meta.time), the rate, the
speed-up over the first N and the efficiency (speed-up / (N / first N)). ARGS pick the work
(grid cases, --space, axis flags); give at least a few variants per process at the largest N.

    PYTHONPATH=. python3 bench/compile_scaling.py --jobs 1 2 4 8 16 --out DIR -- \\
        --case kimi-tp8-decode-long dsv32-sparse-h16-b1 --arch sm_120

Each run's output folder and log stay in OUT (run-jN/); a line per N goes to stdout as it ends,
then the table as JSON lines (what the standing docs record).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(jobs: int, out: Path, args: list[str]) -> dict:
    """One compile-only sweep with `jobs` processes on a fresh cache: its meta.time."""
    folder = out / f"run-j{jobs}"
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "KGEN_CACHE_DIR": str(folder / "cache")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "kgen", "sweep", "--compile-only", "-j", str(jobs)]
    command += [*args, "--out", str(folder / "sweep")]
    with (folder / "log.txt").open("w") as log:
        code = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    if code != 0:
        raise SystemExit(f"-j {jobs}: kgen sweep exited {code}; see {folder / 'log.txt'}")
    meta = json.loads((folder / "sweep" / "results.json").read_text())["meta"]
    return meta["time"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, nargs="+", required=True, help="process counts")
    parser.add_argument("--out", type=Path, required=True, help="where the runs go")
    parser.add_argument("args", nargs="*", help="kgen sweep's arguments (after --)")
    options = parser.parse_args()
    if any(j < 1 for j in options.jobs):
        parser.error("argument --jobs: process counts must be >= 1")
    if "--out" in options.args or "-j" in options.args or "--jobs" in options.args:
        parser.error("the sweep's arguments: --out and -j are this tool's")
    rows = []
    for jobs in options.jobs:
        spent = run(jobs, options.out, options.args)
        rate = spent["compiled"] / spent["compile_wall_s"]
        first = rows[0] if rows else None
        speedup = rate / first["rate"] if first else 1.0
        rows.append(
            {
                "jobs": jobs,
                "variants": spent["compiled"],
                "wall_s": round(spent["compile_wall_s"], 1),
                "rate": round(rate, 3),
                "speedup": round(speedup, 2),
                "efficiency": round(speedup / (jobs / (first or {"jobs": jobs})["jobs"]), 2),
            }
        )
        r = rows[-1]
        print(
            f"-j {jobs:3d}: {r['variants']} variants in {r['wall_s']:.0f} s, {r['rate']:.2f}/s, "
            f"speed-up {r['speedup']:.2f}, efficiency {r['efficiency']:.2f}",
            flush=True,
        )
    for r in rows:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
