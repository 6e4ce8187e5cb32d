"""Prototype: sparse MLA decode with e4m3 tensor-core MMAs on the raw fp8 cache (fp8mma.cu; 16 heads
a block). Each run is checked against the float64 oracle (kgen.tune.sparse_trials.sparse_oracle:
relative L2 error of out per row, absolute error of lse) and timed (kernel alone, L2 flushed,
median of 20); the splits' partials are merged by torch here, outside the timing.

    PYTHONPATH=. python3 bench/fp8mma/fp8mma.py [--splits 1 2 4] [--stages 3 4] [CASE ...]

(default: the H = 16 sparse grid cases)
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import functools
import itertools
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
from cuda.bindings import driver  # noqa: E402

from kgen.compiler import compile_cubin  # noqa: E402
from kgen.launch import Kernel, check  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.sparse_trials import bench_workload, sparse_oracle  # noqa: E402
from kgen.tune.timing import Timer  # noqa: E402

SOURCE = (Path(__file__).parent / "fp8mma.cu").read_text()
CASES = ("dsv32-sparse-h16-b128", "dsv32-sparse-h16-verify", "dsv32-sparse-h16-b32")
ROW_BYTES, BLOCK_N, HEADS = 656, 32, 16


class Params(ctypes.Structure):
    _fields_ = [
        ("q", ctypes.c_void_p),
        ("q_sb", ctypes.c_int64),
        ("q_st", ctypes.c_int64),
        ("kv", ctypes.c_void_p),
        ("num_slots", ctypes.c_int64),
        ("indices", ctypes.c_void_p),
        ("topk", ctypes.c_int32),
        ("q_len", ctypes.c_int32),
        ("out", ctypes.c_void_p),
        ("lse", ctypes.c_void_p),
        ("ws_o", ctypes.c_void_p),
        ("ws_ml", ctypes.c_void_p),
        ("scale_log2", ctypes.c_float),
    ]


def smem_bytes(stages: int) -> int:
    return stages * BLOCK_N * ROW_BYTES + stages * BLOCK_N * 4 + 4 * HEADS * 40 * 4


@functools.cache
def kernel(arch: str, stages: int, f16: bool) -> tuple[Kernel, str]:
    defines = f"#define STAGES {stages}\n#define PATH_F16 {int(f16)}\n"
    result = compile_cubin(defines + SOURCE, arch, name=f"fp8mma_s{stages}_f{int(f16)}.cu")
    lib = check(driver.cuLibraryLoadData(result.cubin, None, None, 0, None, None, 0), "load")
    regs = next((line for line in result.log.splitlines() if "registers" in line), "")
    entry = check(driver.cuLibraryGetKernel(lib, b"fp8mma_sparse"), "fp8mma_sparse")
    return Kernel("fp8mma_sparse", entry), regs


def runner(w, arch: str, stages: int, splits: int, f16: bool):
    """A callable that runs the kernel once, and one that returns (out, lse) merged."""
    batch, q_len = w.q.shape[0], w.q.shape[1]
    bt = batch * q_len
    dev = w.q.device
    out = torch.full((bt, HEADS, 512), float("nan"), dtype=torch.bfloat16, device=dev)
    lse = torch.full((bt, HEADS), float("nan"), dtype=torch.float32, device=dev)
    ws_o = torch.empty((bt, splits, HEADS, 512), dtype=torch.float32, device=dev)
    ws_ml = torch.empty((bt, splits, 2, HEADS), dtype=torch.float32, device=dev)
    indices = w.indices.reshape(bt, -1).contiguous()
    p = Params(
        q=w.q.data_ptr(),
        q_sb=w.q.stride(0),
        q_st=w.q.stride(1),
        kv=w.kv_cache.data_ptr(),
        num_slots=w.kv_cache.shape[0] * w.kv_cache.shape[1],
        indices=indices.data_ptr(),
        topk=indices.shape[1],
        q_len=q_len,
        out=out.data_ptr(),
        lse=lse.data_ptr(),
        ws_o=ws_o.data_ptr(),
        ws_ml=ws_ml.data_ptr(),
        scale_log2=w.scale * math.log2(math.e),
    )
    k, _ = kernel(arch, stages, f16)
    smem = smem_bytes(stages)

    def launch():
        stream = torch.cuda.current_stream().cuda_stream
        k.launch((1, splits, bt), (128, 1, 1), [p], stream=stream, smem=smem)

    def result():
        launch()
        if splits == 1:
            o, s = out, lse
        else:
            m, l_ = ws_ml[:, :, 0], ws_ml[:, :, 1]  # [bt, splits, 16], log2 units
            top = m.amax(dim=1, keepdim=True)
            top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
            wgt = torch.exp2(m - top)
            total = (wgt * l_).sum(dim=1)
            o = (wgt[..., None] * ws_o).sum(dim=1) / total[..., None]
            s = (top[:, 0] + torch.log2(total)) * math.log(2)
        return o.reshape(batch, q_len, HEADS, 512), s.reshape(batch, q_len, HEADS)

    return launch, result, indices  # (indices kept alive with the launch)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=list(CASES))
    parser.add_argument("--splits", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--stages", type=int, nargs="+", default=[3, 4])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument(
        "--hot",
        action="store_true",
        help="each query token's slots replaced by 32 of its own (L2 hits after the first tile: "
        "DRAM's latency mostly gone; checked against the oracle of those indices)",
    )
    parser.add_argument(
        "--path",
        choices=("e4m3", "f16"),
        nargs="+",
        default=["e4m3", "f16"],
        help="e4m3: m16n8k32 e4m3 MMAs (hi/lo q and P); f16: e4m3 bytes to float16, m16n8k16",
    )
    args = parser.parse_args()
    props = torch.cuda.get_device_properties(0)
    arch = f"sm_{props.major}{props.minor}"
    for path in args.path:
        for stages in args.stages:
            regs = kernel(arch, stages, path == "f16")[1].strip()
            print(f"{path} stages {stages}: {regs}; {smem_bytes(stages)} B smem")
    grid = {c.name: c for c in load_grid()}
    timer = Timer(torch.device("cuda"))
    head = ("case", "path", "st", "splits", "max rel err", "max lse err", "us")
    print("{:24} {:>5} {:>2} {:>6} {:>11} {:>11} {:>8}".format(*head))
    for name in args.cases:
        w = bench_workload(grid[name], torch.device("cuda"), seed=1)
        if args.hot:
            rows = w.indices.shape[0] * w.indices.shape[1]
            own = torch.arange(rows, device=w.indices.device, dtype=w.indices.dtype) * BLOCK_N
            hot = w.indices % BLOCK_N + own.reshape(w.indices.shape[:2])[..., None]
            w = dataclasses.replace(w, indices=hot)
        want_out, want_lse = sparse_oracle(w)
        for path, stages, splits in itertools.product(args.path, args.stages, args.splits):
            launch, result, _keep = runner(w, arch, stages, splits, path == "f16")
            out, lse = result()
            torch.cuda.synchronize()
            diff = (out.double() - want_out).flatten(2)  # per (b, t) row, as the tests judge
            ref = want_out.flatten(2).norm(dim=-1).clamp_min(1e-30)
            rel = (diff.norm(dim=-1) / ref).nan_to_num(float("inf"))
            lse_err = (lse.double() - want_lse).abs().nan_to_num(float("inf"))
            us = timer.flushed(launch, args.reps).median_us
            print(
                f"{name[13:]:24} {path:>5} {stages:2d} {splits:6d} {rel.max().item():11.2e} "
                f"{lse_err.max().item():11.2e} {us:8.1f}",
                flush=True,
            )
        del w, want_out, want_lse
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
