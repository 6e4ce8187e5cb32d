"""Can the split-KV merge run inside the attention kernel's launch, through a thread-block cluster's
distributed shared memory? Two questions before building it (bench/cluster_probe.cu):
1. how many clusters of 2-16 blocks (256 threads and the sparse h128-b1 block's 97,920 B of shared
   memory; the probe's few registers let two such blocks share an SM, where the real kernel's 158
   hold one) the GPU holds at once (cuOccupancyMaxActiveClusters): a cluster of all of a head
   group's splits must fit in one GPC;
2. what the merge costs inside the kernel: the probe's blocks (8 head groups x SPLITS splits, a
   16 x 512 float32 partial each) writing their partials to global memory as now, against the
   same grid launched as (1, SPLITS, 1) clusters merging through distributed shared memory.
L2 flushed, median of 50 (kgen.tune.timing).

    PYTHONPATH=. python3 bench/cluster_probe.py
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from cuda.bindings import driver  # noqa: E402

from kgen.compiler import compile_cubin  # noqa: E402
from kgen.device import check  # noqa: E402
from kgen.tune.timing import Timer  # noqa: E402

SMEM_REAL = 97920  # the sparse h128-b1 shipped block's
ROWS, COLS, GROUPS = 16, 512, 8
FA = driver.CUfunction_attribute


def cluster_attr(size: int) -> driver.CUlaunchAttribute:
    attr = driver.CUlaunchAttribute()
    attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = 1, size, 1
    return attr


def config(grid, smem: int, cluster: int, stream=0) -> driver.CUlaunchConfig:
    c = driver.CUlaunchConfig()
    c.gridDimX, c.gridDimY, c.gridDimZ = grid
    c.blockDimX, c.blockDimY, c.blockDimZ = 256, 1, 1
    c.sharedMemBytes = smem
    c.hStream = driver.CUstream(stream)
    attrs = [cluster_attr(cluster)] if cluster > 1 else []
    c.attrs, c.numAttrs = attrs, len(attrs)
    return c


def main() -> int:
    torch.cuda.init()
    torch.empty(1, device="cuda")
    props = torch.cuda.get_device_properties(0)
    arch = f"sm_{props.major}{props.minor}"
    source = (Path(__file__).parent / "cluster_probe.cu").read_text()
    cubin = compile_cubin(source, arch, name="cluster_probe.cu").cubin
    lib = check(driver.cuLibraryLoadData(cubin, None, None, 0, None, None, 0), "load")
    kernel = check(driver.cuLibraryGetKernel(lib, b"probe_merge"), "kernel")
    func = check(driver.cuKernelGetFunction(kernel), "function")
    check(
        driver.cuFuncSetAttribute(
            func, FA.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, SMEM_REAL
        ),
        "smem",
    )
    err = driver.cuFuncSetAttribute(func, FA.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
    print(f"{props.name}, {props.multi_processor_count} SMs; non-portable cluster sizes: {err[0]}")
    print("max active clusters of 256-thread blocks with 97,920 B smem (two fit an SM):")
    for size in (2, 4, 8, 16):
        err, n = driver.cuOccupancyMaxActiveClusters(
            func, config((GROUPS, size, 1), SMEM_REAL, size)
        )
        print(f"  cluster {size:2d}: {n if err == driver.CUresult.CUDA_SUCCESS else err}")
    timer = Timer(torch.device("cuda"))
    out = torch.empty(GROUPS * ROWS * COLS, dtype=torch.float32, device="cuda")
    partials = torch.empty(GROUPS * 16 * ROWS * COLS, dtype=torch.float32, device="cuda")
    print(f"{'splits':>6} {'launch':>22} {'us':>7}")
    for splits in (8, 16):
        for merge, cluster in ((0, 1), (0, splits), (1, splits)):
            flag = ctypes.c_int(merge)
            o, p = ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(partials.data_ptr())
            argv = (ctypes.c_void_p * 3)(
                ctypes.addressof(o), ctypes.addressof(p), ctypes.addressof(flag)
            )
            cfg = config(
                (GROUPS, splits, 1), SMEM_REAL, cluster, torch.cuda.current_stream().cuda_stream
            )

            def launch(cfg=cfg, argv=argv):
                check(driver.cuLaunchKernelEx(cfg, func, ctypes.addressof(argv), 0), "launch")

            launch()
            torch.cuda.synchronize()
            if merge:  # the merged rows against a torch merge of the same partials
                pm = torch.arange(splits, dtype=torch.float32, device="cuda")
                o_all = pm[:, None] + torch.arange(ROWS * COLS, device="cuda") * 1e-3
                w = torch.exp2(0.25 * pm - 0.25 * (splits - 1)) * 1.0
                total = (w * (1.0 + pm)).sum()
                want = ((w[:, None] * o_all).sum(0) / total).reshape(ROWS, COLS)
                got = out.reshape(GROUPS, ROWS, COLS)
                err_ = (got - want).abs().max().item()
            else:
                err_ = float("nan")
            us = timer.flushed(launch, 50).median_us
            what = ("cluster merge" if merge else "partials out") + (
                f", cluster {cluster}" if cluster > 1 else ""
            )
            print(f"{splits:6d} {what:>22} {us:7.2f}   max|err| {err_:.2e}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
