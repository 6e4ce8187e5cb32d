"""What the device machine's toolchain is: NVRTC version and library, and its ptxas report."""

from cuda.bindings import nvrtc

from kgen.compiler import compile_cubin, include_dir, nvrtc_version

print("nvrtc", nvrtc_version(), "headers", include_dir())
with open("/proc/self/maps") as maps:
    print(sorted({line.split()[-1] for line in maps if "nvrtc" in line}))
result = compile_cubin('extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2; }', "sm_90")
print("log:", repr(result.log[:300]))
print(nvrtc.nvrtcGetSupportedArchs())
