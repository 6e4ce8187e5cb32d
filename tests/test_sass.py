"""The SASS instruction mix: the listing parser, and what NVRTC generated for each compute path."""

import pytest

from kgen.mla import Config, Spec, build
from kgen.sass import cuobjdump, instruction_mix, opcode_counts, tile_loop

LISTING = """
        /*0100*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;    /* 0x000 */
        /*0110*/              @!P0 LDSM.16.M88.4 R8, [R2] ;                 /* 0x000 */
        /*0120*/                   LDGSTS.E.BYPASS.128 [R3], desc[UR4][R6.64] ;
        /*0130*/               @P1 STL.64 [R1+0x8], R10 ;
"""


def test_opcodes_are_read_past_predicates_and_modifiers():
    counts = opcode_counts(LISTING)
    assert counts == {"HMMA": 1, "LDSM": 1, "LDGSTS": 1, "STL": 1}


LOOPS = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   IMAD R2, R0, 0x4, RZ ;
        /*0020*/                   LDS R4, [R2] ;
        /*0030*/               @P0 BRA 0x10 ;
        /*0040*/                   HMMA.16816.F32.BF16 R8, R4, R6, R8 ;
        /*0050*/                   LDSM.16.M88.4 R4, [R2] ;
        /*0060*/                   HMMA.16816.F32.BF16 R12, R4, R6, R12 ;
        /*0070*/              @!P1 BRA 0x40 ;
        /*0080*/                   BRA 0x90 ;
        /*0090*/                   EXIT ;
"""


def test_tile_loop_is_the_backward_branch_loop_with_the_most_mmas():
    # the first loop has no MMA; a forward branch closes no loop
    assert tile_loop(LOOPS) == {"HMMA": 2, "LDSM": 1, "BRA": 1}
    assert tile_loop(LISTING) == {}
    # functions are searched apart: a branch to 0x40 in the second closes no loop in the first
    other = "\n\tFunction : other\n        /*0000*/ NOP ;\n        /*0010*/ @P0 BRA 0x40 ;\n"
    assert tile_loop("\tFunction : first\n" + LOOPS + other) == {"HMMA": 2, "LDSM": 1, "BRA": 1}
    assert tile_loop("\tFunction : first\n" + LISTING + other) == {}


@pytest.mark.skipif(cuobjdump() is None, reason='needs cuobjdump: pip install "kgen[sass]"')
def test_tensor_core_path_uses_mma_ldmatrix_and_cp_async_and_fma_path_does_not():
    spec = Spec(heads=16)
    config = Config(heads_per_block=16, block_n=16, smem_stages=3, compute="mma", min_blocks=1)
    mma = build(spec, config)
    fma = build(spec, Config(heads_per_block=16, block_n=16, smem_stages=3))
    got = instruction_mix(mma.cubin, "mla_attention")
    assert got["hmma"] > 0 and got["ldsm"] > 0 and got["ldgsts"] > 0 and got["spill"] == 0
    plain = instruction_mix(fma.cubin, "mla_attention")
    assert plain["hmma"] == 0 and plain["ldsm"] == 0 and plain["ldgsts"] > 0
