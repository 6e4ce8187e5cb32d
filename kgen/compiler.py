"""NVRTC through cuda-python: CUDA C++ source -> cubin for one arch. Knows nothing of templates."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from cuda.bindings import nvrtc

# No -lineinfo by default: NVRTC writes the working directory into the cubin with it, and the same
# kernel must give the same bytes wherever it is built (KGEN_LINEINFO=1 adds it: kgen.build).
# --no-cache: NVRTC 12.9 and later keep a cache of their own, and a program they find there skips
# ptxas, whose report (registers, spills) is how kgen judges a kernel: a second process asking
# for a kernel the first compiled got no report (seen with NVRTC 13.0 on an H100), and
# config="auto" passed over spill-free candidates. kgen's own disk cache keeps the cubins.
DEFAULT_OPTIONS: tuple[str, ...] = ("-std=c++17", "-default-device", "--no-cache")


class CompileError(RuntimeError):
    """NVRTC refused a program; carries the log and the numbered source."""

    def __init__(self, name: str, arch: str, log: str, source: str):
        self.name, self.arch, self.log, self.source = name, arch, log, source
        numbered = "\n".join(f"{i:5d}  {line}" for i, line in enumerate(source.splitlines(), 1))
        super().__init__(
            f"NVRTC failed to compile {name} for {arch}:\n{log}\n--- source ---\n{numbered}"
        )


@dataclass(frozen=True)
class CompileResult:
    cubin: bytes
    log: str  # NVRTC + ptxas (-v) program log


def _check(result: tuple, what: str) -> tuple:
    err, *rest = result
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, msg = nvrtc.nvrtcGetErrorString(err)
        raise RuntimeError(f"{what} failed: {msg.decode()}")
    return tuple(rest)


@functools.cache
def nvrtc_version() -> str:
    major, minor = _check(nvrtc.nvrtcVersion(), "nvrtcVersion")
    return f"{major}.{minor}"


@functools.cache
def include_dir() -> Path:
    """The CUDA headers (cuda_bf16.h, ...) shipped by the nvidia-cuda-runtime wheel or a toolkit."""
    from cuda import pathfinder

    found = pathfinder.find_nvidia_header_directory("cudart")
    if found is None:
        raise RuntimeError(
            "CUDA headers not found: pip install nvidia-cuda-runtime (or set CUDA_HOME)"
        )
    return Path(found)


@functools.cache
def headers_version() -> str:
    """CUDA_VERSION of the headers kernels are compiled against (part of every cache key)."""
    text = (include_dir() / "cuda.h").read_text(errors="replace")
    match = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", text)
    return match.group(1) if match else "unknown"


def compile_cubin(
    source: str, arch: str, options: tuple[str, ...] = DEFAULT_OPTIONS, name: str = "kernel.cu"
) -> CompileResult:
    """Compile `source` to a cubin for `arch` ("sm_120", ...); raise CompileError on failure."""
    (prog,) = _check(
        nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "nvrtcCreateProgram"
    )
    try:
        args = [f"--gpu-architecture={arch}", f"-I{include_dir()}", "-Xptxas=-v", *options]
        encoded = [a.encode() for a in args]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        log = _program_log(prog)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(name, arch, log, source)
        (size,) = _check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = b" " * size
        _check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
        return CompileResult(cubin=cubin, log=log)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _program_log(prog) -> str:
    (size,) = _check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
    log = b" " * size
    _check(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
    return log.rstrip(b"\x00 ").decode(errors="replace")
