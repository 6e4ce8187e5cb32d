"""Where a fused split-KV merge's time goes: the gridbar knock-in (bench/knockout.py) with the
`trace` knock-in records, per block, %globaltimer and clock64 at six points (kernel entry, merge
entry after the partials' stores, arrival counted, barrier passed, the merge's loads done, end);
each launch is timed as the sweep times it (L2 flushed first) and the trace read back after it.
Prints, as medians over the launches, when the blocks reach each point (µs after the first
block's entry) and how long each step takes.

    PYTHONPATH=. python3 bench/merge_trace.py [--reps N] CASE[:field=value,...]@gridbar+trace ...
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from cuda.bindings import driver  # noqa: E402
from knockout import TRACE_POINTS, build_knocked, parse  # noqa: E402
from time_shipped import shipped_configs  # noqa: E402

from kgen.device import check  # noqa: E402
from kgen.launch import load_module  # noqa: E402
from kgen.mla.workload import make_workload  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.timing import Timer  # noqa: E402


def one_launch(kernel, w, timer, dptr, nbytes, blocks):
    """One launch (timed as the sweep times it, or with timer None straight after the last) and
    its trace."""
    out, lse = w.poisoned_outputs()
    args = w.packed_args()
    check(driver.cuMemsetD8(dptr, 0, nbytes), "cuMemsetD8")
    if timer is None:
        kernel(*args, out=out, lse=lse)
    else:
        timer.flushed(lambda: kernel(*args, out=out, lse=lse), reps=1, warmup=0)
    torch.cuda.synchronize()
    host = np.zeros(nbytes // 8, dtype=np.uint64)
    check(driver.cuMemcpyDtoH(host.ctypes.data, dptr, nbytes), "cuMemcpyDtoH")
    t = host.reshape(-1, TRACE_POINTS, 2)[:blocks].astype(np.int64)
    return t[:, :, 0], t[:, :, 1]  # globaltimer ns, clock64


def summary(g, c) -> dict:
    """One launch's figures (µs)."""
    t0 = g[:, 0].min()
    rel = (g - t0) / 1000.0
    ghz = np.median((c[:, 5] - c[:, 0]) / np.maximum(g[:, 5] - g[:, 0], 1))

    def us(a, b):  # per block, from point a to point b (clock64, converted)
        return (c[:, b] - c[:, a]) / ghz / 1000.0

    twice = {}
    if c[:, 6].any():
        twice = {
            "first pass (median)": np.median(us(3, 6)),
            "second pass (median)": np.median(us(6, 4)),
        }
    return {
        "main loop ends (first)": rel[:, 1].min(),
        "main loop ends (median)": np.median(rel[:, 1]),
        "main loop ends (last)": rel[:, 1].max(),
        "last arrival counted": rel[:, 2].max(),
        "fence + atomic (median block)": np.median(us(1, 2)),
        "fence + atomic (last block)": us(1, 2)[np.argmax(rel[:, 2])],
        "barrier passed (first)": rel[:, 3].min(),
        "barrier passed (last)": rel[:, 3].max(),
        "loads (median block)": np.median(us(3, 4)),
        "loads (max)": us(3, 4).max(),
        **twice,
        "reduce + store (median)": np.median(us(4, 5)),
        "end (last block)": rel[:, 5].max(),
        "SM GHz": ghz,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument(
        "--flush", default="write", help="how L2 is flushed: write, read or none (not flushed)"
    )
    args = parser.parse_args()
    grid = {c.name: c for c in load_grid()}
    configs = shipped_configs()
    timer = None if args.flush == "none" else Timer(torch.device("cuda"), args.flush)
    for run in args.runs:
        name, knockouts, case, config = parse(run, configs, grid)
        assert "trace" in knockouts, f"{run}: needs the trace knock-in"
        kernel = build_knocked(case.spec, config, knockouts)
        w = make_workload(case.spec, case.seq_lens, seed=1)  # (torch's context current from here)
        library = load_module(kernel.binary).library
        dptr, nbytes = check(driver.cuLibraryGetGlobal(library, b"kgen_trace"), "kgen_trace")
        groups = -(-case.spec.heads // config.heads_per_block)
        blocks = groups * config.kv_splits * w.batch
        one_launch(kernel, w, timer, dptr, nbytes, blocks)
        launches = [one_launch(kernel, w, timer, dptr, nbytes, blocks) for _ in range(args.reps)]
        rows = [summary(*launch) for launch in launches]
        print(
            f"{name} {'+'.join(knockouts)} ({args.flush} flush): {blocks} blocks, medians of "
            f"{args.reps} launches (us)"
        )
        for key in rows[0]:
            print(f"  {key:32} {statistics.median(r[key] for r in rows):8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
