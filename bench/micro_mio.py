"""Throughput of the register-transposing and shared-memory fragment instructions, per SM and
clock, alone and beside mma.sync: movmatrix (MOVM), ldmatrix.x4 (.trans), shfl, and m16n8k16.

One block of WARPS warps per SM, each warp a loop of independent instructions; cycles from
clock64 around the loop. Prints instructions (and bytes moved into registers) per SM-clock.

    PYTHONPATH=. python3 bench/micro_mio.py
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from cuda.bindings import driver  # noqa: E402

from kgen.compiler import compile_cubin  # noqa: E402
from kgen.launch import Kernel, check  # noqa: E402

ITERS, WARPS = 2048, 16

SOURCE = (Path(__file__).parent / "micro_mio.cu").read_text()
KERNELS = {
    0: ("movm x8", 8, 8 * 128),
    1: ("ldmatrix.x4 x2", 2, 2 * 512),
    2: ("ldmatrix.x4.trans x2", 2, 2 * 512),
    3: ("shfl x8", 8, 8 * 128),
    4: ("mma x8", 8, 0),
    5: ("mma x8 + movm x8", 8, 8 * 128),
    6: ("mma x8 + ldmatrix.x4.trans x2", 8, 2 * 512),
    7: ("mma x8 + movm x4", 8, 4 * 128),
    8: ("mma x8 + ldmatrix.x4 x1", 8, 512),
    9: ("mma x8 + ldmatrix.x4 x2", 8, 2 * 512),
    10: ("mma x8 + ldmatrix.x4.trans x1", 8, 512),
    11: ("mma x8 + ldmatrix.x4 x2 + movm x8", 8, 2 * 512),
}


def entry_points(modes, max_threads: int) -> str:
    """The extern "C" kernels k<mode> of a source whose template body<MODE> holds the loops."""
    return "".join(
        f'extern "C" __global__ void __launch_bounds__({max_threads}) '
        f"k{mode}(unsigned long long* c, unsigned* s, int n) {{ body<{mode}>(c, s, n); }}\n"
        for mode in modes
    )


class ClockedLoops:
    """The kernels k<mode> of one source on this GPU, one block an SM, each block timing its loop
    with clock64: SM clocks per warp-iteration, the median over the SMs of the second launch."""

    def __init__(self, source: str, name: str, max_threads: int):
        self.props = torch.cuda.get_device_properties(0)
        arch = f"sm_{self.props.major}{self.props.minor}"
        cubin = compile_cubin(source, arch, name=name).cubin
        torch.zeros(1, device="cuda")  # torch's context current
        self.library = check(driver.cuLibraryLoadData(cubin, None, None, 0, None, None, 0), "load")
        self.sms = self.props.multi_processor_count
        self.cycles = torch.zeros(self.sms, dtype=torch.int64, device="cuda")
        self.sink = torch.zeros(self.sms * max_threads, dtype=torch.int32, device="cuda")

    def per_warp_iteration(self, mode: int, warps: int, iters: int) -> float:
        args = [
            ctypes.c_void_p(self.cycles.data_ptr()),
            ctypes.c_void_p(self.sink.data_ptr()),
            ctypes.c_int(iters),
        ]
        name = f"k{mode}"
        kernel = Kernel(name, check(driver.cuLibraryGetKernel(self.library, name.encode()), name))
        for _ in range(2):
            kernel.launch((self.sms, 1, 1), (warps * 32, 1, 1), args)
        torch.cuda.synchronize()
        return self.cycles.double().median().item() / iters / warps


def main() -> None:
    loops = ClockedLoops(SOURCE + entry_points(KERNELS, 512), "micro_mio.cu", WARPS * 32)
    print(f"{loops.props.name}, {loops.sms} SMs, {WARPS} warps per SM, {ITERS} iterations")
    head = ("loop body (per warp, per iteration)", "clk/iter/SM", "instr/clk/SM", "B/clk/SM")
    print(f"{head[0]:36s} {head[1]:>11s} {head[2]:>12s} {head[3]:>9s}")
    for mode, (label, count, nbytes) in KERNELS.items():
        per_iter = loops.per_warp_iteration(mode, WARPS, ITERS)  # SM clocks per warp-iteration
        print(f"{label:36s} {per_iter:11.2f} {count / per_iter:12.2f} {nbytes / per_iter:9.1f}")


if __name__ == "__main__":
    main()
