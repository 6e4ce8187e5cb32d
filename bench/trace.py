"""Where a launch's time goes, per block: the shipped config of each named grid case, rebuilt with
%globaltimer stamps inserted into its rendered source (the templates are not touched), one
L2-flushed launch. Per block: entry, after the prologue (split range checked), after the KV loop,
after its partial is written, after its share of the fused merge (with the PDL merge, a kernel of
its own, after it let the merge launch). Prints, per case, the span of the launch and the
medians / maxima of each phase, and the critical path's tail (the last split's partial -> the
result); with the fused merge, also when its last block reached each step of the merge.

    PYTHONPATH=. python3 bench/trace.py [--compile] [CASE ...]   # GPU; default: 16-bit dense

(Dense kernels only; an anchor the rendered source no longer holds once stops it with the anchor.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from cuda.bindings import driver  # noqa: E402
from time_shipped import shipped_configs  # noqa: E402

from kgen.launch import check, load_module  # noqa: E402
from kgen.mla.dense import DENSE  # noqa: E402
from kgen.mla.program import mla_program  # noqa: E402
from kgen.mla.workload import make_workload  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402

STAMPS = 18  # entry, prologue, loop, partial, combine; the combine's phases; SM id
COMBINE_STAMPS = (  # slot: what the block that finished last had just done
    (6, "arrived"),
    (10, "took1"),
    (13, "lse"),
    (14, "weights"),
    (15, "loaded"),
    (16, "merged"),
    (11, "took2"),
    (12, "took3+"),
    (7, "pieces"),
    (8, "reset"),
)
SLOTS = 1 << 16
PRELUDE = f"""
__device__ unsigned long long kgen_trace[{SLOTS}][{STAMPS}];
__device__ __forceinline__ void kgen_stamp(int k) {{
  if (threadIdx.x != 0) return;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  const int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  kgen_trace[block][k] = t;
  if (k == 0) {{
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    kgen_trace[block][{STAMPS - 1}] = sm;
  }}
}}
"""
COMBINE_EDITS = (  # inside the fused combine (templates/mla/combine.cuh); a block's last piece
    # overwrites the merge's stamps (13-16); 10-12 are its first, second and last piece taken
    (
        "  const Pieces pieces(num_splits);\n  for (;;) {\n",
        "  const Pieces pieces(num_splits);\n  int kgen_taken = 0;\n  for (;;) {\n",
    ),
    (
        "    const int piece = shared[2];\n",
        "    const int piece = shared[2];\n    kgen_stamp(10 + min(kgen_taken++, 2));\n",
    ),
    (
        " * ROWS + q0 + r);\n    }\n    __syncthreads();\n",
        " * ROWS + q0 + r);\n    }\n    __syncthreads();\n    kgen_stamp(13);\n",
    ),
    (
        " : -CUDART_INF_F;\n    }\n    __syncthreads();\n",
        " : -CUDART_INF_F;\n    }\n    __syncthreads();\n    kgen_stamp(14);\n",
    ),
    ("      if (slices > 1) {\n", "      kgen_stamp(15);\n      if (slices > 1) {\n"),
    (
        "    __syncthreads();\n  }\n}\n\n// Called by every block",
        "    __syncthreads();\n    kgen_stamp(16);\n  }\n}\n\n// Called by every block",
    ),
    (
        "  const int role = shared[0], earlier_helpers = shared[1];\n",
        "  const int role = shared[0], earlier_helpers = shared[1];\n  kgen_stamp(6);\n",
    ),
    (
        "  if (threadIdx.x != 0) return;\n  if (role == 1) {",
        "  kgen_stamp(7);\n  if (threadIdx.x != 0) return;\n  if (role == 1) {",
    ),
    (
        "    counters[ARRIVALS] = counters[STARTED] = counters[TAKEN] = counters[LEFT] = 0;\n",
        "    counters[ARRIVALS] = counters[STARTED] = counters[TAKEN] = counters[LEFT] = 0;\n"
        "    kgen_stamp(8);\n",
    ),
)
EDITS = (  # (anchor, replacement): each anchor must occur once in the rendered source
    ("namespace mla {", PRELUDE + "namespace mla {"),
    ("  const Lane ln;\n", "  const Lane ln;\n  kgen_stamp(0);\n"),
    (
        "(p, b, split, num_splits);  // syncs\n",
        "(p, b, split, num_splits);  // syncs\n  kgen_stamp(1);\n",
    ),
    ("\n  // Results", "\n  kgen_stamp(2);\n  // Results"),
    (
        "  end_split(p, b, num_splits, smem);\n}",
        "  kgen_stamp(3);\n  end_split(p, b, num_splits, smem);\n  kgen_stamp(4);\n}",
    ),
)


def traced(program, config):
    """`program` with the stamps in; the fused merge's too where it has one (no PDL merge)."""
    source = program.source
    anchor, new = EDITS[0]
    source = source.replace(anchor, new, 1)  # kgen_stamp defined before its first use
    for anchor, new in (*EDITS[1:], *(() if config.merge == "pdl" else COMBINE_EDITS)):
        assert source.count(anchor) == 1, f"trace anchor not found once: {anchor!r}"
        source = source.replace(anchor, new)
    return replace(program, name=program.name + "_trace", source=source)


# the dense family with the stamps in its program: its kernels are built and cached apart
TRACED = replace(
    DENSE,
    name="dense-traced",
    program=lambda spec, config, layout: traced(mla_program(spec, config, layout), config),
)
build = TRACED.build


def trace_case(case, config):
    w = make_workload(case.spec, case.seq_lens, seed=1)
    kernel = build(case.spec, config, "native")
    out, lse = w.poisoned_outputs()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    kernel(*w.args(), out=out, lse=lse)  # plan, load, warm
    torch.cuda.synchronize()
    library = load_module(kernel.binary).library
    ptr, size = check(driver.cuLibraryGetGlobal(library, b"kgen_trace"), "kgen_trace")
    spans = []
    for _ in range(5):
        check(driver.cuMemsetD8(ptr, 0, size), "memset")
        flush.zero_()
        kernel(*w.args(), out=out, lse=lse)
        torch.cuda.synchronize()
        host = np.zeros((SLOTS, STAMPS), dtype=np.uint64)
        check(driver.cuMemcpyDtoH(host.ctypes.data, ptr, size), "copy")
        spans.append(host)
    blocks = int(np.count_nonzero(spans[0][:, 0]))
    rows = []
    for host in spans:
        t = host[:blocks, :5].astype(np.int64)
        t0 = t[:, 0].min()
        rel = (t - t0) / 1000.0  # µs from the first block's entry
        rows.append(
            dict(
                span=rel[:, 4].max(),
                start_max=rel[:, 0].max(),
                prologue=np.median(rel[:, 1] - rel[:, 0]),
                loop=np.median(rel[:, 2] - rel[:, 1]),
                loop_max=(rel[:, 2] - rel[:, 1]).max(),
                write=np.median(rel[:, 3] - rel[:, 2]),
                last_partial=rel[:, 3].max(),
                tail=rel[:, 4].max() - rel[:, 3].max(),
                merge_max=(rel[:, 4] - rel[:, 3]).max(),
                sms=len(set(host[:blocks, STAMPS - 1].tolist())),
            )
        )
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    host = spans[-1][:blocks].astype(np.int64)
    last = int(np.argmax(host[:, 4]))  # the block that finished last: the final merger
    t3 = host[:, 3].max()
    phases = " ".join(
        f"{label}={(host[last, slot] - t3) / 1000:.1f}"
        for slot, label in COMBINE_STAMPS
        if host[last, slot]
    )
    med["phases"] = f"final merger (block {last}), µs after the last partial: {phases}"
    return blocks, med


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cases", nargs="*", metavar="CASE", help="dense grid cases")
    parser.add_argument("--compile", action="store_true", help="only build the traced kernels")
    args = parser.parse_args()
    grid = {c.name: c for c in load_grid(family="dense")}
    configs = shipped_configs()
    names = args.cases or [n for n in grid if grid[n].spec.dtype != "float32"]
    if args.compile:  # build the traced kernels first, in parallel
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: build(grid[n].spec, configs[n], "native"), names))
        return 0
    print(
        f"{'case':24} {'config':36} {'blocks':>6} {'SMs':>4} {'span':>6} {'start':>6} "
        f"{'prolog':>6} {'loop':>6} {'loopmx':>6} {'write':>6} {'lastpt':>6} {'tail':>6} "
        f"{'mrgmx':>6}"
    )
    for name in names:
        config = configs[name]
        blocks, m = trace_case(grid[name], config)
        print(
            f"{name:24} {config.short_name() + f' s{config.kv_splits}':36} {blocks:6d} "
            f"{m['sms']:4.0f} "
            f"{m['span']:6.1f} {m['start_max']:6.1f} {m['prologue']:6.1f} {m['loop']:6.1f} "
            f"{m['loop_max']:6.1f} {m['write']:6.1f} {m['last_partial']:6.1f} {m['tail']:6.1f} "
            f"{m['merge_max']:6.1f}",
            flush=True,
        )
        print(f"{'':24} {m['phases']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
