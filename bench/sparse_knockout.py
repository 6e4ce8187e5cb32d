"""Knock-out timing of the sparse kernel (dequant='registers'): rebuild a sparse case's shipped
config with one part of its tile loop removed or redirected in the rendered source (the templates
are untouched) and time what is left, as bench/knockout.py does for the dense family. A knocked-out
kernel's results are wrong by design: nothing is checked, only timed (L2 flushed, median).

Knock-outs (join several with '+'):
  nocompute  no q.K^T, softmax or P.V: each tile is gathered, dequantized into shared memory and
             the block syncs (what the gather pipeline alone costs at this occupancy)
  hotrows    every gather reads cache row load_row() (one of BLOCK_N rows, L1/L2 hits) instead
             of its listed slot: the same instructions without DRAM's latency
  nostore    no dequantization and no store of the held rows (their words folded into one
             register so the loads stay live)
  noldk      q.K^T's K fragments loaded for the first k step's first n16 pair only, zeros after
             (the MMAs all run; ~1/(2 WARP_K) of the K ldmatrix traffic is left)
  noldv      P.V's V fragments loaded for each k step's first n16 pair only, zeros after
  noscale    no fp8 scale loads from shared memory (every scale 1)
  ldcs       the held rows' global loads with the streaming hint (__ldcs) instead of __ldg
  pf1, pf2, pf3  (knock-ins, results unchanged) the rows of the tile D = 1 (2, 3) past the one
             being loaded into registers asked of L2 (prefetch.global.L2, each row's 128-byte
             lines dealt over its threads; tiles 1..D before the loop): a deeper gather pipeline
             than the registers hold

    PYTHONPATH=. python3 bench/sparse_knockout.py [--reps N] CASE[:field=value,...]@KO+KO ...
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kgen.mla.sparse import kernel as kernel_module  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.sparse_trials import bench_workload  # noqa: E402
from kgen.tune.timing import Timer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from knockout import apply_edits  # noqa: E402
from time_shipped import case_config, shipped_configs  # noqa: E402

EDITS = {
    "nocompute": [
        (
            "      attend_tile(p, tile, tile_scales, tile_slots, qf, q_s, scores, sm, o, ln);\n",
            "      __syncthreads();\n",
        )
    ],
    "hotrows": [
        (
            "const unsigned char* row = slot >= 0 ? cache_row(p, slot) : nullptr;",
            "const unsigned char* row = slot >= 0 ? cache_row(p, load_row()) : nullptr;",
        )
    ],
    "nostore": [
        ("      held.store(tile, tile_scales);\n", "      held.fold(tile);\n"),
        (
            "  __device__ __forceinline__ void store(T* tile, float* row_scales) const {",
            "  __device__ __forceinline__ void fold(T* tile) const {\n"
            "    unsigned x = 0;\n"
            "#pragma unroll\n"
            "    for (int j = 0; j < ITEMS; ++j)\n"
            "      x ^= reinterpret_cast<const unsigned*>(&words[j])[0]"
            " ^ __float_as_uint(scales[j]);\n"
            "    if (x == 0x12345678u) tile[threadIdx.x] = T{};\n"
            "  }\n"
            "  __device__ __forceinline__ void store(T* tile, float* row_scales) const {",
        ),
    ],
}


def prefetch_edits(ahead: int) -> list[tuple[str, str]]:
    helper = (
        "__device__ __forceinline__ void prefetch_row(const Params& p, int slot) {\n"
        "  if (slot < 0) return;\n"
        "  const unsigned char* r = cache_row(p, slot);\n"
        "  for (int c = load_lane(); c * 128 < CACHE_ROW_BYTES + 127; c += LOAD_THREADS_PER_ROW)\n"
        '    asm volatile("prefetch.global.L2 [%0];"\n'
        '                 ::"l"(r + min(c * 128, CACHE_ROW_BYTES - 1)));\n'
        "}\n"
    )
    return [
        (
            "struct HeldRow {\n",
            helper + "struct HeldRow {\n",
        ),
        (
            "    int next_slot = fetch_slot(slots, begin + BLOCK_N, end);\n",
            "    int next_slot = fetch_slot(slots, begin + BLOCK_N, end);\n"
            f"    for (int d = 1; d <= {ahead}; ++d)\n"
            "      prefetch_row(p, fetch_slot(slots, begin + d * BLOCK_N, end));\n",
        ),
        (
            "      next_slot = fetch_slot(slots, begin + (it + 2) * BLOCK_N, end);\n",
            "      next_slot = fetch_slot(slots, begin + (it + 2) * BLOCK_N, end);\n"
            "      prefetch_row(p, fetch_slot(slots, begin + (it + 1 + "
            f"{ahead}) * BLOCK_N, end));\n",
        ),
    ]


EDITS |= {
    "noldk": [
        (
            "        unsigned k[4];\n        kgen::ldmatrix_x4(k, tile",
            "        unsigned k[4] = {0u, 0u, 0u, 0u};\n"
            "        if (kk == 0 && j == 0) kgen::ldmatrix_x4(k, tile",
        )
    ],
    "noldv": [
        (
            "    unsigned v[4];\n    kgen::ldmatrix_x4_trans(v, tile",
            "    unsigned v[4] = {0u, 0u, 0u, 0u};\n"
            "    if (j == 0) kgen::ldmatrix_x4_trans(v, tile",
        )
    ],
    "noscale": [
        (
            "const float s = g < SCALE_GROUPS ? "
            "row_scales[(8 * j + 2 * ln.qd + c) * SCALE_GROUPS + g] : 1.f;",
            "const float s = 1.f;",
        ),
        (
            "const float s0 = row_scales[n * SCALE_GROUPS + g], "
            "s1 = row_scales[(n + 1) * SCALE_GROUPS + g];",
            "const float s0 = 1.f, s1 = 1.f;",
        ),
    ],
    "ldcs": [
        (
            "words[j] = __ldg(reinterpret_cast<const Word*>(row + piece * GATHER_BYTES));",
            "words[j] = __ldcs(reinterpret_cast<const Word*>(row + piece * GATHER_BYTES));",
        ),
        (
            "words[j] = __ldg(reinterpret_cast<const Word*>(row + FP8_ROPE",
            "words[j] = __ldcs(reinterpret_cast<const Word*>(row + FP8_ROPE",
        ),
    ],
}
EDITS |= {f"pf{d}": prefetch_edits(d) for d in (1, 2, 3)}

_render = kernel_module.sparse_program


def edited(knockouts: list[str]):
    def render(*args, **kwargs):
        return apply_edits(_render(*args, **kwargs), knockouts, EDITS)

    return render


def build_knocked(spec, config, knockouts: list[str]):
    kernel_module._build.cache_clear()
    kernel_module.sparse_program = edited(knockouts)
    try:
        return kernel_module.build_sparse(spec, config, "native")
    finally:
        kernel_module.sparse_program = _render
        kernel_module._build.cache_clear()


def parse(run: str, configs: dict) -> tuple:
    """`CASE[:overrides]@KO+KO` -> (name, knock-outs, case name, config)."""
    name, _, kos = run.partition("@")
    knockouts = [k for k in kos.split("+") if k and k != "base"]
    return (name, knockouts, *case_config(name, configs))


def precompile(run: str) -> None:
    """Build one run's kernel into the disk cache (a worker process)."""
    grid = {c.name: c for c in load_grid()}
    _, knockouts, case, config = parse(run, shipped_configs())
    build_knocked(grid[case].spec, config, knockouts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    grid = {c.name: c for c in load_grid()}
    configs = shipped_configs()
    with ProcessPoolExecutor(8, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(precompile, args.runs))
    timer = Timer(torch.device("cuda"))
    workloads = {}
    print(f"{'case':56} {'knock-outs':24} {'regs':>4} {'us':>8}")
    for run in args.runs:
        name, knockouts, case, config = parse(run, configs)
        kernel = build_knocked(grid[case].spec, config, knockouts)
        if case not in workloads:
            workloads[case] = bench_workload(grid[case], torch.device("cuda"), seed=1)
        w = workloads[case]
        out, lse = w.poisoned_outputs()
        call = lambda: kernel(*w.args(), out=out, lse=lse)  # noqa: E731, B023
        call()
        torch.cuda.synchronize()
        regs = kernel.resources.registers
        us = timer.flushed(call, args.reps).median_us
        print(f"{name:56} {'+'.join(knockouts) or 'base':24} {regs:4d} {us:8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
