"""A representative sample of sparse MLA variants, each run once on small inputs and checked
against the float64 reference: the program compute-sanitizer (memcheck, racecheck, synccheck)
runs on the device machine (bench/sanitize.sh).

    compute-sanitizer --tool memcheck  python3 tests/sanitize_sparse_sample.py
    compute-sanitizer --tool racecheck python3 tests/sanitize_sparse_sample.py
    compute-sanitizer --tool synccheck python3 tests/sanitize_sparse_sample.py

Every workload has -1 holes and duplicate entries, one query row whose indices are all -1 (out 0,
lse -inf) and, where `bad` is set, one row listing a slot past the cache (NaN, and nothing read
from outside the cache: what memcheck checks).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgen.mla import SparseConfig, SparseSpec  # noqa: E402

# (spec, config, bad slot row): both cache formats, both dequant placements, q dtypes, page
# sizes 1/64, 1 to 64 splits (the combine's pieces: row ranges, and single rows in column chunks;
# empty splits), stages 2..4, tiles of 16/32 rows, gathers of 4/8/16 bytes, q in registers and in
# shared memory, m16 tiles partly empty (8 heads), 1..8 column groups, fused and PDL merges, the
# softmax whole in every warp and split in slices (softmax='split': 1 and 2 row groups, both dequant
# placements, holes and a bad slot row).
SAMPLE_CASES = [
    (
        SparseSpec(heads=16, q_len=1, topk=200, kv_format="fp8", page_size=64),
        SparseConfig(heads_per_block=16, kv_splits=1, smem_stages=2, block_n=16),
        True,
    ),
    (
        SparseSpec(heads=32, q_len=2, topk=300, kv_format="fp8", page_size=1),
        SparseConfig(
            heads_per_block=32,
            kv_splits=7,
            block_n=32,
            num_warps=8,
            col_groups=4,
            dequant="registers",
            gather_bytes=8,
            min_blocks=1,
        ),
        False,
    ),
    (
        SparseSpec(heads=16, q_len=3, topk=150, kv_format="bf16", page_size=64),
        SparseConfig(heads_per_block=8, kv_splits=3, smem_stages=2, block_n=32),
        True,
    ),
    (
        SparseSpec(heads=8, q_len=1, topk=100, kv_format="fp8", page_size=1, dtype="float16"),
        SparseConfig(
            heads_per_block=8,
            kv_splits=64,  # more splits than tiles: empty splits; rows merged in column chunks
            smem_stages=4,
            block_n=16,
            gather_bytes=4,
            num_warps=2,
            col_groups=2,
        ),
        False,
    ),
    (
        SparseSpec(heads=64, q_len=1, topk=120, kv_format="fp8", page_size=64, dtype="float16"),
        SparseConfig(  # q in shared memory
            heads_per_block=32,
            kv_splits=2,
            block_n=16,
            num_warps=4,
            col_groups=2,
            dequant="registers",
        ),
        True,
    ),
    (
        SparseSpec(heads=32, q_len=1, topk=90, kv_format="bf16", page_size=1),
        SparseConfig(  # q in shared memory
            heads_per_block=32, kv_splits=16, smem_stages=2, block_n=16, num_warps=4, col_groups=2
        ),
        False,
    ),
    (
        SparseSpec(heads=16, q_len=4, topk=257, kv_format="fp8", page_size=64),
        SparseConfig(
            heads_per_block=16,
            kv_splits=5,
            smem_stages=2,
            block_n=32,
            num_warps=8,
            col_groups=8,
            min_blocks=1,
        ),
        True,
    ),
    (
        SparseSpec(heads=16, q_len=1, topk=1, kv_format="fp8", page_size=64),
        SparseConfig(
            heads_per_block=16, block_n=16, dequant="registers", gather_bytes=4, col_groups=4
        ),
        False,
    ),
    (
        SparseSpec(heads=64, q_len=2, topk=130, kv_format="fp8", page_size=64),
        SparseConfig(
            heads_per_block=32, kv_splits=2, smem_stages=3, block_n=16, num_warps=8, col_groups=4
        ),
        False,
    ),
    # the merge in a kernel of its own (merge='pdl'), as the shipped B = 1 entries have it
    (
        SparseSpec(heads=32, q_len=1, topk=333, kv_format="fp8", page_size=64),
        SparseConfig(
            heads_per_block=16,
            kv_splits=9,
            block_n=32,
            dequant="registers",
            col_groups=4,
            min_blocks=1,
            merge="pdl",
        ),
        True,
    ),
    (
        SparseSpec(heads=16, q_len=2, topk=70, kv_format="bf16", page_size=1, dtype="float16"),
        SparseConfig(  # more splits than tiles: empty splits
            heads_per_block=16, kv_splits=8, smem_stages=2, block_n=16, merge="pdl"
        ),
        False,
    ),
    # the softmax split in slices between a row group's warps (softmax='split')
    (
        SparseSpec(heads=16, q_len=2, topk=261, kv_format="fp8", page_size=64),
        SparseConfig(
            heads_per_block=16,
            kv_splits=3,
            block_n=32,
            dequant="registers",
            col_groups=4,
            min_blocks=1,
            merge="pdl",
            softmax="split",
        ),
        True,
    ),
    (
        SparseSpec(heads=8, q_len=1, topk=140, kv_format="fp8", page_size=1),
        SparseConfig(  # 8 rows of a 16-row tile: padding rows in the slices
            heads_per_block=8, kv_splits=2, smem_stages=3, block_n=16, softmax="split"
        ),
        False,
    ),
    (
        SparseSpec(heads=64, q_len=1, topk=200, kv_format="bf16", page_size=64, dtype="float16"),
        SparseConfig(  # two row groups
            heads_per_block=32,
            kv_splits=4,
            smem_stages=2,
            block_n=16,
            num_warps=8,
            col_groups=4,
            softmax="split",
        ),
        True,
    ),
]
SAMPLE = [(spec, config) for spec, config, _ in SAMPLE_CASES]  # what bench/sanitize.sh compiles
BATCH = 2


def main() -> int:
    import numpy as np
    import torch

    from kgen.mla import build_sparse
    from kgen.mla.check import check_attention
    from kgen.mla.sparse.workload import make_sparse_workload
    from tests.sparse_reference import sparse_reference

    for spec, config, bad in SAMPLE_CASES:
        w = make_sparse_workload(spec, BATCH, seed=11, holes=0.2, duplicates=0.2)
        w.indices[0, spec.q_len - 1] = -1  # a row that sees nothing
        if bad:
            w.indices[BATCH - 1, 0, spec.topk // 2] = w.kv_cache.shape[0] * w.kv_cache.shape[1]
        out, lse = w.poisoned_outputs()
        build_sparse(spec, config, "native")(*w.args(), out=out, lse=lse)
        torch.cuda.synchronize()
        cache = w.kv_cache.cpu().numpy() if spec.kv_format == "fp8" else w.kv_cache.double().cpu()
        ref = sparse_reference(
            w.q.double().cpu().numpy(), np.asarray(cache), w.indices.cpu().numpy(), w.scale
        )
        got = out.double().cpu().numpy(), lse.double().cpu().numpy()
        err = check_attention(*got, *ref, spec.dtype)
        empty = 0, spec.q_len - 1
        assert np.all(got[0][empty] == 0) and np.all(got[1][empty] == -np.inf)
        if bad:
            assert np.isnan(got[0][BATCH - 1, 0]).all() and np.isnan(got[1][BATCH - 1, 0]).all()
        print(
            f"ok  {spec.short_name():34s} k{spec.topk:<4d} {config.short_name():32s} "
            f"splits={config.kv_splits:<3d} err={err:.2e}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
