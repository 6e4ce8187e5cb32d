"""A representative sample of MLA variants, each run once on small inputs and checked against
the reference: the program compute-sanitizer (memcheck, racecheck) runs on the device machine.

    compute-sanitizer --tool memcheck  python3 tests/sanitize_sample.py
    compute-sanitizer --tool racecheck python3 tests/sanitize_sample.py
    compute-sanitizer --tool synccheck python3 tests/sanitize_sample.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgen.mla import Config, Spec, build  # noqa: E402
from kgen.mla.mma_layout import three_row_config  # noqa: E402
from kgen.mla.tiled_layout import tiled_config  # noqa: E402
from kgen.mla.workload import make_workload  # noqa: E402
from tests.mla_helpers import reference_for, run_poisoned, to_numpy  # noqa: E402
from tests.reference import check_attention  # noqa: E402

MMA = "mma"
SAMPLE = [  # (spec, config): every stage kind, q source, position groups, splits, mask, dtype
    (
        Spec(heads=8, q_len=1, dtype="bfloat16", page_size=64, mask="none"),
        Config(heads_per_block=8, kv_splits=4, vec_width=8, smem_stages=2, num_warps=4, block_n=32),
    ),
    (
        Spec(heads=4, q_len=4, dtype="bfloat16", page_size=16, mask="tree"),
        Config(heads_per_block=4, kv_splits=3, vec_width=8, smem_stages=3, num_warps=2, block_n=16),
    ),
    (
        Spec(heads=8, q_len=4, dtype="bfloat16", page_size=64, mask="tree"),  # q in shared memory
        Config(heads_per_block=8, kv_splits=2, vec_width=8, smem_stages=2, num_warps=4, block_n=16),
    ),
    (
        Spec(heads=8, q_len=4, dtype="bfloat16", page_size=64, mask="tree"),  # q from global (L1)
        Config(
            heads_per_block=8, kv_splits=16, vec_width=8, smem_stages=2, num_warps=4, block_n=32
        ),
    ),
    (
        Spec(heads=2, q_len=1, dtype="float32", page_size=1, mask="none"),  # position groups
        Config(heads_per_block=1, kv_splits=1, vec_width=4, smem_stages=1, num_warps=8, block_n=8),
    ),
    (
        Spec(heads=3, q_len=5, dtype="float16", page_size=3, mask="causal"),
        Config(heads_per_block=1, kv_splits=7, vec_width=2, smem_stages=0, num_warps=2, block_n=4),
    ),
    (
        Spec(heads=4, q_len=2, dtype="float32", page_size=128, mask="causal"),
        Config(heads_per_block=2, kv_splits=1, vec_width=1, smem_stages=1, num_warps=2, block_n=8),
    ),
    (
        Spec(heads=16, q_len=16, dtype="bfloat16", page_size=64, mask="tree"),
        Config(heads_per_block=2, kv_splits=5, vec_width=8, smem_stages=2, num_warps=8, block_n=16),
    ),
    # The tensor-core path: dtypes, masks, page sizes 1/16/64, splits 1..300 (the combine's pieces:
    # row ranges, and single rows in column chunks), stages 2..5, q in registers and in shared
    # memory, 1..8 column groups, q.K ahead, split reduce.
    *(
        (Spec(heads=h, q_len=t, dtype=d, page_size=ps, mask=m), Config(**c, compute=MMA))
        for h, t, d, ps, m, c in [
            (
                8,
                1,
                "bfloat16",
                64,
                "none",
                dict(heads_per_block=8, kv_splits=1, smem_stages=3, block_n=16),
            ),
            (
                16,
                1,
                "float16",
                16,
                "none",
                dict(heads_per_block=16, kv_splits=7, smem_stages=2, block_n=32),
            ),
            (
                16,
                1,
                "bfloat16",
                1,
                "none",
                dict(heads_per_block=16, kv_splits=64, smem_stages=5, block_n=16),
            ),
            (
                8,
                4,
                "bfloat16",
                64,
                "causal",
                dict(
                    heads_per_block=8,
                    kv_splits=3,
                    smem_stages=4,
                    block_n=16,
                    num_warps=8,
                    col_groups=4,
                ),
            ),
            (
                8,
                16,
                "bfloat16",
                64,
                "tree",
                dict(
                    heads_per_block=2,
                    kv_splits=2,
                    smem_stages=2,
                    block_n=32,
                    num_warps=8,
                    col_groups=4,
                ),
            ),
            (
                4,
                6,
                "float16",
                16,
                "tree",
                dict(heads_per_block=4, kv_splits=1, smem_stages=3, block_n=16, col_groups=2),
            ),
            (
                64,
                1,
                "bfloat16",
                64,
                "none",
                dict(
                    heads_per_block=32,
                    kv_splits=4,
                    smem_stages=2,
                    block_n=16,
                    num_warps=8,
                    col_groups=4,
                ),
            ),
            (
                64,
                1,
                "bfloat16",
                64,
                "none",
                dict(
                    heads_per_block=64,
                    kv_splits=2,
                    smem_stages=2,
                    block_n=16,
                    num_warps=8,
                    col_groups=2,
                ),
            ),
            (
                2,
                3,
                "bfloat16",
                1,
                "causal",
                dict(
                    heads_per_block=1,
                    kv_splits=16,
                    smem_stages=2,
                    block_n=64,
                    num_warps=2,
                    col_groups=2,
                ),
            ),
            (
                8,
                1,
                "bfloat16",
                16,
                "none",
                dict(
                    heads_per_block=8,
                    kv_splits=5,
                    smem_stages=3,
                    block_n=16,
                    num_warps=8,
                    col_groups=8,
                ),
            ),
            (
                3,
                5,
                "float16",
                64,
                "tree",
                dict(
                    heads_per_block=3,
                    kv_splits=1,
                    smem_stages=2,
                    block_n=32,
                    num_warps=1,
                    col_groups=1,
                ),
            ),
            # q.K ahead (one barrier per tile, double-buffered partial scores), min_blocks set
            (
                8,
                4,
                "bfloat16",
                64,
                "causal",
                dict(
                    heads_per_block=8,
                    kv_splits=3,
                    smem_stages=4,
                    block_n=16,
                    num_warps=8,
                    col_groups=4,
                    qk_ahead=1,
                    min_blocks=1,
                ),
            ),
            (
                16,
                1,
                "bfloat16",
                1,
                "none",
                dict(heads_per_block=16, kv_splits=64, smem_stages=3, block_n=16, qk_ahead=1),
            ),
            (
                4,
                6,
                "float16",
                16,
                "tree",
                dict(
                    heads_per_block=4,
                    kv_splits=1,
                    smem_stages=3,
                    block_n=16,
                    col_groups=2,
                    qk_ahead=1,
                ),
            ),
            (
                8,
                16,
                "bfloat16",
                64,
                "tree",
                dict(
                    heads_per_block=2,
                    kv_splits=2,
                    smem_stages=3,
                    block_n=32,
                    num_warps=8,
                    col_groups=4,
                    qk_ahead=1,
                    min_blocks=1,
                ),
            ),
            # the softmax split in slices, P shared through shared memory
            (
                8,
                16,
                "bfloat16",
                64,
                "tree",
                dict(
                    heads_per_block=4,
                    kv_splits=3,
                    smem_stages=3,
                    block_n=16,
                    num_warps=16,
                    col_groups=4,
                    min_blocks=1,
                    softmax="split",
                ),
            ),
            (
                64,
                1,
                "bfloat16",
                64,
                "none",
                dict(
                    heads_per_block=32,
                    kv_splits=7,
                    smem_stages=2,
                    block_n=32,
                    num_warps=8,
                    col_groups=4,
                    min_blocks=1,
                    softmax="split",
                ),
            ),
            (
                6,
                5,
                "float16",
                1,
                "causal",
                dict(
                    heads_per_block=3,
                    kv_splits=2,
                    smem_stages=3,
                    block_n=16,
                    num_warps=4,
                    col_groups=4,
                    qk_ahead=1,
                    softmax="split",
                ),
            ),
            # 16 warps of 8 column groups (two row groups: the split softmax's barriers are the
            # groups' own), and the split reduce over two row groups
            (
                64,
                1,
                "bfloat16",
                64,
                "none",
                dict(
                    heads_per_block=32,
                    kv_splits=5,
                    smem_stages=4,
                    block_n=16,
                    num_warps=16,
                    col_groups=8,
                    min_blocks=1,
                    softmax="split",
                ),
            ),
            (
                8,
                16,
                "bfloat16",
                16,
                "tree",
                dict(
                    heads_per_block=2,
                    kv_splits=3,
                    smem_stages=3,
                    block_n=16,
                    num_warps=16,
                    col_groups=8,
                    min_blocks=1,
                    softmax="split",
                ),
            ),
            # wide merges: 132 and 300 splits (pieces of one row cut into column chunks)
            (
                8,
                1,
                "bfloat16",
                16,
                "none",
                dict(heads_per_block=8, kv_splits=132, smem_stages=2, block_n=16, num_warps=4),
            ),
            (
                16,
                1,
                "float16",
                1,
                "none",
                dict(heads_per_block=16, kv_splits=300, smem_stages=3, block_n=16, qk_ahead=1),
            ),
            # the merge in a kernel of its own (merge='pdl'): slices of the slots, column chunks
            (
                8,
                1,
                "bfloat16",
                16,
                "none",
                dict(heads_per_block=8, kv_splits=132, smem_stages=2, block_n=16, merge="pdl"),
            ),
            (
                4,
                4,
                "float16",
                64,
                "tree",
                dict(heads_per_block=4, kv_splits=6, smem_stages=3, block_n=16, merge="pdl"),
            ),
            # warps in two roles (body 'specialized'): q.K^T and copies, softmax and P.V behind
            (  # sm_120's default for decode in 16-head groups (four stages, the PDL merge)
                64,
                1,
                "bfloat16",
                64,
                "none",
                dict(
                    heads_per_block=16,
                    kv_splits=5,
                    smem_stages=4,
                    block_n=16,
                    num_warps=8,
                    softmax="split",
                    body="specialized",
                    merge="pdl",
                ),
            ),
            (
                64,
                1,
                "bfloat16",
                64,
                "none",
                dict(
                    heads_per_block=16,
                    kv_splits=4,
                    smem_stages=3,
                    block_n=16,
                    num_warps=8,
                    softmax="split",
                    body="specialized",
                ),
            ),
            (
                8,
                16,
                "bfloat16",
                64,
                "tree",
                dict(
                    heads_per_block=1,
                    kv_splits=3,
                    smem_stages=4,
                    block_n=16,
                    num_warps=8,
                    min_blocks=2,
                    softmax="split",
                    body="specialized",
                ),
            ),
            (
                4,
                6,
                "float16",
                16,
                "tree",
                dict(
                    heads_per_block=4,
                    kv_splits=2,
                    smem_stages=3,
                    block_n=32,
                    num_warps=8,
                    softmax="split",
                    body="specialized",
                    merge="pdl",
                ),
            ),
            (
                16,
                1,
                "float16",
                1,
                "none",
                dict(
                    heads_per_block=16,
                    kv_splits=9,
                    smem_stages=3,
                    block_n=16,
                    num_warps=4,
                    col_groups=2,
                    softmax="split",
                    body="specialized",
                    merge="pdl",
                ),
            ),
            (
                6,
                5,
                "float16",
                1,
                "causal",
                dict(
                    heads_per_block=3,
                    kv_splits=1,
                    smem_stages=3,
                    block_n=16,
                    num_warps=8,
                    softmax="split",
                    body="specialized",
                ),
            ),
        ]
    ),
    # The register-tiled float32 path: masks, page sizes 1/16/64, rows short of the block's 64,
    # splits 1..5 (the fused merge), pipeline depths 2..4 (q.K^T steps of 64 head dims on the
    # H200, whose shared memory holds them; sm_120 takes 32 at depths 3 and 4).
    (
        Spec(heads=8, q_len=8, dtype="float32", page_size=64, mask="tree"),
        tiled_config(8, smem_stages=2, kv_splits=3),
    ),
    (
        Spec(heads=4, q_len=5, dtype="float32", page_size=16, mask="causal"),
        tiled_config(4, smem_stages=3, kv_splits=1),
    ),
    (
        Spec(heads=16, q_len=1, dtype="float32", page_size=1, mask="none"),
        tiled_config(16, smem_stages=4, kv_splits=5),
    ),
    # and its split-KV merge as a kernel of its own (merge='pdl')
    (
        Spec(heads=8, q_len=4, dtype="float32", page_size=16, mask="tree"),
        tiled_config(8, smem_stages=3, kv_splits=7, merge="pdl"),
    ),
    # ragged head groups (the last block holds fewer heads), 12-warp three-row-group blocks
    (
        Spec(heads=5, q_len=1, dtype="bfloat16", page_size=16, mask="none"),
        Config(
            heads_per_block=3,
            kv_splits=3,
            vec_width=8,
            smem_stages=3,
            num_warps=4,
            block_n=16,
            compute=MMA,
            softmax="split",
        ),
    ),
    (
        Spec(heads=8, q_len=16, dtype="float16", page_size=64, mask="tree"),
        three_row_config(3, kv_splits=3, smem_stages=3, softmax="split", min_blocks=1, merge="pdl"),
    ),
    (
        Spec(heads=128, q_len=1, dtype="bfloat16", page_size=64, mask="none"),
        three_row_config(48, kv_splits=2, smem_stages=3, softmax="split", min_blocks=1),
    ),
    # sm_120's default for verification of many heads: 48-row blocks four deep, ragged (6 heads
    # of 8 draft tokens, H = 64: head groups of 6 ... 6, 4), the PDL merge
    (
        Spec(heads=64, q_len=8, dtype="bfloat16", page_size=16, mask="tree"),
        three_row_config(6, kv_splits=4, smem_stages=4, softmax="split", min_blocks=1, merge="pdl"),
    ),
    # the KV tile ring on a barrier a stage (ring_slack): row groups apart, mbarriers
    (
        Spec(heads=64, q_len=8, dtype="bfloat16", page_size=16, mask="tree"),
        three_row_config(
            6,
            kv_splits=2,
            smem_stages=4,
            softmax="split",
            min_blocks=1,
            merge="pdl",
            ring_slack=1,
        ),
    ),
    (
        Spec(heads=48, q_len=1, dtype="float16", page_size=64, mask="none"),
        three_row_config(
            48, kv_splits=2, smem_stages=4, softmax="split", min_blocks=1, ring_slack=1
        ),
    ),
    (
        Spec(heads=8, q_len=16, dtype="bfloat16", page_size=1, mask="causal"),
        three_row_config(
            3, kv_splits=1, smem_stages=6, softmax="split", min_blocks=1, ring_slack=1
        ),
    ),
    # sm_120's default for decode of 96 heads: two 48-head blocks on the ring, the PDL merge
    (
        Spec(heads=96, q_len=1, dtype="bfloat16", page_size=64, mask="none"),
        three_row_config(
            48,
            kv_splits=3,
            smem_stages=4,
            softmax="split",
            min_blocks=1,
            merge="pdl",
            ring_slack=1,
        ),
    ),
    # draft rows cut into token groups (the q_len 49-64 default): whole and ragged token groups,
    # the fused merge and the PDL one
    (
        Spec(heads=4, q_len=57, dtype="bfloat16", page_size=16, mask="tree"),
        Config(
            heads_per_block=1,
            kv_splits=3,
            vec_width=8,
            smem_stages=2,
            num_warps=8,
            block_n=32,
            compute=MMA,
            col_groups=4,
            min_blocks=1,
            softmax="split",
            token_groups=2,
        ),
    ),
    (
        Spec(heads=3, q_len=64, dtype="float16", page_size=64, mask="causal"),
        Config(
            heads_per_block=2,
            kv_splits=2,
            vec_width=8,
            smem_stages=3,
            num_warps=8,
            block_n=16,
            compute=MMA,
            col_groups=4,
            min_blocks=1,
            merge="pdl",
            token_groups=4,
        ),
    ),
    # fp8 caches (one scale for the tensor: raw stages read as fragments; the 656-byte rows' per-128
    # scales: widened into the 16-bit tile), split softmax, fused and PDL merges, column groups,
    # pages of 1
    (
        Spec(heads=16, q_len=1, dtype="bfloat16", page_size=64, kv_format="fp8_tensor"),
        Config(heads_per_block=16, kv_splits=5, smem_stages=3, block_n=16, compute=MMA),
    ),
    (
        Spec(heads=8, q_len=4, dtype="float16", page_size=16, mask="tree", kv_format="fp8_tensor"),
        Config(
            heads_per_block=8,
            kv_splits=3,
            smem_stages=2,
            block_n=32,
            num_warps=8,
            col_groups=4,
            compute=MMA,
            softmax="split",
            merge="pdl",
        ),
    ),
    (
        Spec(heads=3, q_len=5, dtype="bfloat16", page_size=1, mask="causal", kv_format="fp8"),
        Config(heads_per_block=3, kv_splits=7, smem_stages=4, block_n=16, compute=MMA),
    ),
    (
        Spec(heads=64, q_len=2, dtype="bfloat16", page_size=64, mask="tree", kv_format="fp8"),
        Config(  # sm_120's default: 47 splits, the PDL merge
            heads_per_block=8,
            kv_splits=47,
            smem_stages=2,
            block_n=16,
            compute=MMA,
            min_blocks=1,
            softmax="split",
            merge="pdl",
        ),
    ),
]


def main() -> int:
    pattern = re.compile(sys.argv[1] if len(sys.argv) > 1 else "")  # of "spec config" names
    for spec, config in SAMPLE:
        if not pattern.search(f"{spec.short_name()} {config.short_name()}"):
            continue
        w = make_workload(spec, [spec.q_len, spec.q_len + 77, spec.q_len + 300], seed=7)
        if spec.mask == "tree" and config.compute in (MMA, "tiled"):
            # a draft position whose V is NaN: the tensor-core path's scan + scalar fold runs too
            # (the tiled path's row-by-row draft P.V)
            length = int(w.seq_lens[1])
            n = length - spec.q_len + spec.q_len - 1
            page = int(w.block_table[1, n // spec.page_size])
            row = w.kv_cache[page, n % spec.page_size]  # an fp8 row's latent: e4m3 NaN bytes
            row[: spec.latent_dim] = 0x7F if spec.kv_format != "dtype" else float("nan")
        out, lse = run_poisoned(build(spec, config, "native"), w, **w.extras())
        err = check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)
        print(
            f"ok  {spec.short_name():32s} {config.short_name():34s} splits={config.kv_splits:<3d} "
            f"err={err:.2e}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
