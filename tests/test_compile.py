"""NVRTC compiles to a cubin for the named arch; failures carry the log and numbered source;
ptxas's log becomes a resource report; the occupancy model."""

import pytest

from kgen.arch import ARCHS, resolve_arch
from kgen.compiler import CompileError, compile_cubin, nvrtc_version
from kgen.render import CType
from kgen.resources import cubin_arch, parse_ptxas_log

from .axpy import axpy_program


@pytest.mark.parametrize("arch", ["sm_120", "sm_90", "sm_80", "sm_86", "sm_89", "sm_100"])
def test_small_template_compiles_for_arch(arch):
    program = axpy_program(CType.BFLOAT16)
    result = compile_cubin(program.source, arch)
    assert result.cubin[:4] == b"\x7fELF"
    assert cubin_arch(result.cubin) == arch
    usage = parse_ptxas_log(result.log)
    assert set(usage) == {"axpy"} and usage["axpy"].registers > 0


def test_compile_error_carries_log_and_numbered_source():
    source = 'extern "C" __global__ void broken(float* x) {\n  x[0] = undefined_name;\n}\n'
    with pytest.raises(CompileError) as info:
        compile_cubin(source, "sm_120", name="broken.cu")
    err = info.value
    assert "undefined_name" in err.log
    assert "    2    x[0] = undefined_name;" in str(err)


def test_nvrtc_version_is_known():
    major, minor = nvrtc_version().split(".")
    assert int(major) >= 12 and int(minor) >= 0


PTXAS_LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'mla_combine' for 'sm_120'
ptxas info    : Function properties for mla_combine
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers
ptxas info    : Compile time = 2.870 ms
ptxas info    : Compiling entry function 'mla_attention' for 'sm_120'
ptxas info    : Function properties for mla_attention
ptxas         .     1608 bytes stack frame, 1604 bytes spill stores, 1620 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 1608 bytes cumulative stack size, 400 bytes smem
"""


def test_ptxas_log_parser():
    usage = parse_ptxas_log(PTXAS_LOG)
    assert usage["mla_combine"].registers == 40 and usage["mla_combine"].static_smem == 0
    attn = usage["mla_attention"]
    assert (attn.registers, attn.static_smem, attn.stack, attn.spill_stores, attn.spill_loads) == (
        255,
        400,
        1608,
        1604,
        1620,
    )


def test_occupancy_model_limits():
    sm120, sm90 = ARCHS["sm_120"], ARCHS["sm_90"]
    # 128 threads, 32 regs, no smem: warps limit (48 warps on sm_120 = 12 blocks of 4 warps)
    occ = sm120.occupancy(128, 32, 0)
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.limiter) == (12, 48, "warps")
    # 255 registers: 8 warps of 256 * 32 regs -> 65536 / 8192 = 8 warps -> 2 blocks of 4
    assert sm90.occupancy(128, 255, 0).blocks_per_sm == 2
    assert sm90.occupancy(128, 255, 0).limiter == "registers"
    # 60 KB of smem on sm_120 (100 KB per SM): one block
    occ = sm120.occupancy(128, 32, 60 * 1024)
    assert (occ.blocks_per_sm, occ.limiter) == (1, "shared memory")
    assert sm120.occupancy(128, 32, 100 * 1024).limiter == "does not fit"


def test_unknown_arch_refused():
    with pytest.raises(ValueError, match="sm_61"):
        resolve_arch("sm_61")
