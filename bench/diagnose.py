"""What this machine's toolchain is: the NVRTC version and the library loaded, the architectures
it compiles for, and whether ptxas's resource report reaches the program log (kgen reads
registers and spills from it; kgen.build refuses a kernel without it).

    PYTHONPATH=. python3 bench/diagnose.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cuda.bindings import nvrtc  # noqa: E402

from kgen.compiler import compile_cubin, include_dir, nvrtc_version  # noqa: E402

KERNEL = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2; }'


def main() -> int:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    print("nvrtc", nvrtc_version(), "headers", include_dir())
    with open("/proc/self/maps") as maps:
        print(sorted({line.split()[-1] for line in maps if "nvrtc" in line}))
    print("archs", nvrtc.nvrtcGetSupportedArchs()[1])
    for arch in ("sm_90", "sm_120"):
        log = compile_cubin(KERNEL, arch).log
        print(f"{arch} ptxas report: {'yes' if 'registers' in log else 'MISSING'}: {log[:200]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
