"""Time configs on an H100 or H200 at sm_120's occupancy: every kgen kernel's preferred
shared-memory carveout set so an SM holds sm_120's 100 KB (sm_90 has 228 KB), so the blocks that
share an SM are those an sm_120 card would run (both have 64K registers per SM). SM count, clocks
and memory bandwidth stay the host GPU's: this answers "which of these configs keeps an SM busier
under sm_120's limits", not "how fast on an RTX PRO 6000".

First a check that the carveout holds (a spinning kernel: blocks of 44 KB fit two per 100 KB SM,
of 60 KB one), then each case's candidates, checked against the float64 oracle and timed (L2
flushed, median): the sm_120 heuristic default (for an sm_120 of this GPU's SM count), and where
given, `CASE:field=value,...` variants of it (KV splits refit to the variant's blocks per SM on
sm_120 unless set). A CASE is a grid name or, as bench/time_shipped.py --default takes them, a
shape given by a grid entry's fields (`H=64,T=1,B=1,S=32768`).

    PYTHONPATH=. python3 bench/sm120_like.py [--reps N] CASE[:field=value,...] ...

JSON lines to stdout; a line a run for the eye (`sm120_like: ...`) to stderr.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
from cuda.bindings import driver  # noqa: E402
from time_shipped import default_for, parse_shape  # noqa: E402

from kgen import device  # noqa: E402
from kgen.arch import ARCHS  # noqa: E402
from kgen.compiler import compile_cubin  # noqa: E402
from kgen.device import check  # noqa: E402
from kgen.launch import Kernel  # noqa: E402
from kgen.mla import SparseSpec, build, build_sparse  # noqa: E402
from kgen.tune.space import load_grid, parse_case_overrides  # noqa: E402
from kgen.tune.sweep import compile_space  # noqa: E402
from kgen.tune.trials import Trials  # noqa: E402

SM120 = ARCHS["sm_120"]
CARVEOUT = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
_carved: set[tuple[int, int]] = set()


def set_carveout(kernel: Kernel, dev: int, percent: int) -> None:
    """`kernel` prefers `percent` of the SM's shared memory on device `dev`."""
    check(
        driver.cuKernelSetAttribute(CARVEOUT, percent, kernel.handle, device.handle(dev)),
        f"cuKernelSetAttribute({kernel.name}, carveout {percent}%)",
    )


def carve(percent: int) -> None:
    """From now on every kernel kgen prepares prefers `percent` of the SM's shared memory."""
    prepare = Kernel.prepare

    def prepare_carved(self, dev: int, smem: int) -> None:
        prepare(self, dev, smem)
        if (id(self), dev) not in _carved:
            set_carveout(self, dev, percent)
            _carved.add((id(self), dev))

    Kernel.prepare = prepare_carved


SPIN = r"""
extern "C" __global__ void spin(long long cycles, int* sink) {
  extern __shared__ int buf[];
  buf[threadIdx.x] = threadIdx.x;
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
  if (threadIdx.x == 0) sink[blockIdx.x] = buf[threadIdx.x];
}
"""


def carveout_check(percent: int | None) -> dict:
    """Time 2 x SMs spinning blocks of 44 KB and of 60 KB (two fit a 100 KB SM, or one)."""
    result = compile_cubin(
        SPIN, "sm_{}{}".format(*torch.cuda.get_device_capability()), name="spin.cu"
    )
    lib = check(driver.cuLibraryLoadData(result.cubin, None, None, 0, None, None, 0), "load")
    sms = device.sm_count(0)
    sink = torch.zeros(2 * sms, dtype=torch.int32, device="cuda")
    row = {"carveout_percent": percent}
    kernel = Kernel("spin", check(driver.cuLibraryGetKernel(lib, b"spin"), "spin"))
    if percent is not None:
        set_carveout(kernel, 0, percent)
    for kb in (44, 60):
        kernel.prepare(0, kb << 10)
        args = [ctypes.c_longlong(200_000), ctypes.c_void_p(sink.data_ptr())]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        kernel.launch((2 * sms, 1, 1), (128, 1, 1), args, smem=kb << 10)
        start.record()
        kernel.launch((2 * sms, 1, 1), (128, 1, 1), args, smem=kb << 10)
        end.record()
        end.synchronize()
        row[f"{kb}KB_us"] = round(start.elapsed_time(end) * 1000, 1)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument(
        "--percent", type=int, default=43, help="preferred carveout, %% of max; 0: none"
    )
    parser.add_argument(
        "--default-arch", default="sm_120", help="whose heuristic default (sm_90: this GPU's)"
    )
    args = parser.parse_args()
    if args.percent:
        for percent in (None, args.percent):
            print(json.dumps(carveout_check(percent)), flush=True)
        carve(args.percent)
    arch = ARCHS[args.default_arch]
    grid = {c.name: c for c in load_grid()}
    sms = device.sm_count(0)
    runs = []
    for name in args.cases:
        case_name, fields = parse_case_overrides(name)
        case = grid[case_name] if case_name in grid else parse_shape(case_name)
        runs.append((name, case, default_for(case, fields, arch, sms)))
    native = "sm_{}{}".format(*torch.cuda.get_device_capability())
    compile_space([(case.spec, config) for _, case, config in runs], native)
    trials = Trials()
    for name, case, config in runs:
        (r,) = trials.variant(case, config, [config.kv_splits], seed=3, reps=args.reps)
        make = build_sparse if isinstance(case.spec, SparseSpec) else build
        occ = make(case.spec, config, SM120).resources.occupancy
        summary = {k: r.get(k) for k in ("status", "median_us", "error")}
        row = {"case": name, "config": config.short_name(), "splits": config.kv_splits, **summary}
        row["sm_120"] = {"blocks_per_sm": occ.blocks_per_sm, "warps_per_sm": occ.warps_per_sm}
        row["carveout_percent"], row["default_arch"] = args.percent, arch.name
        print(json.dumps(row), flush=True)
        error = r.get("error")  # the oracle's error, or what went wrong
        error = f"{error:.1e}" if isinstance(error, float) else str(error or "")[:60]
        print(
            f"sm120_like: {name[:40]:40s} {row['config']:42s} s{config.kv_splits:<4} "
            f"{r['status']:5s} {r.get('median_us') or 0:8.1f} us  err {error}  "
            f"sm_120 {occ.blocks_per_sm} blocks / {occ.warps_per_sm} warps an SM",
            file=sys.stderr,
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
