"""A representative sample of sparse MLA variants, each run once on small inputs and checked
against the float64 reference: the program compute-sanitizer (memcheck, racecheck, synccheck)
runs on the device machine (bench/sanitize.sh).

    compute-sanitizer --tool memcheck  python3 tests/sanitize_sparse_sample.py
    compute-sanitizer --tool racecheck python3 tests/sanitize_sparse_sample.py
    compute-sanitizer --tool synccheck python3 tests/sanitize_sparse_sample.py

    compute-sanitizer --tool memcheck  python3 tests/sanitize_sparse_sample.py v4_   # a regex

Every workload has -1 holes and duplicate entries, one query row whose indices are all -1 (out 0,
lse -inf) and, where `bad` is set, one row listing a slot past the cache (NaN, and nothing read
from outside the cache: what memcheck checks). The V4 op's workloads (V4_CASES) also have a
second cache with its own page size, per-sequence or per-row lengths of both lists with slots
past the cache beyond each length (never read), and sinks; T > 1 in most. A regex argument runs
only the variants whose "spec config" names match; `--list` prints the variants and exits.
"""

from __future__ import annotations

import re
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
# The V4 op (K = V 512 wide): (spec, config, bad slot row, lengths, sink). Both fp8 formats
# (v4_fp8's per-page scale rows; v41_fp8's inline UE8M0 scales) and the 16-bit one; two caches
# with page sizes 256/64/2/1; lengths per sequence [B] and per row [B, T]; finite, -inf and
# mixed (+inf and finite) sinks; T 1..4; one split and 3..64 (empty splits), both merges; both
# dequant placements; ragged head groups (H = 37: 19 + 18) and a part-empty m16 tile (H = 8);
# bfloat16 q (fp8 tiles scaled) and float16 q (fp8 tiles unscaled, their scales in float32).
V4_CASES = [
    (
        SparseSpec(16, 3, 200, "v4_fp8", 256, "bfloat16", extra_topk=128, extra_page_size=64),
        SparseConfig(heads_per_block=16, block_n=32, dequant="registers", min_blocks=1),
        True,
        "row",
        "finite",
    ),
    (
        SparseSpec(64, 2, 300, "v4_fp8", 64, "bfloat16", extra_topk=150, extra_page_size=2),
        SparseConfig(
            heads_per_block=32,
            kv_splits=5,
            smem_stages=3,
            block_n=16,
            num_warps=8,
            col_groups=4,
            merge="pdl",
            softmax="split",
        ),
        True,
        "sequence",
        "mixed",
    ),
    (
        SparseSpec(37, 3, 130, "v41_fp8", 64, "bfloat16", extra_topk=128, extra_page_size=64),
        SparseConfig(  # ragged head groups
            heads_per_block=19,
            kv_splits=7,
            block_n=16,
            num_warps=8,
            col_groups=4,
            dequant="registers",
            min_blocks=1,
        ),
        False,
        "row",
        "finite",
    ),
    (
        SparseSpec(8, 2, 1, "v41_fp8", 1, "float16", extra_topk=5, extra_page_size=2),
        SparseConfig(  # more splits than tiles: empty splits
            heads_per_block=8,
            kv_splits=64,
            smem_stages=2,
            block_n=16,
            gather_bytes=4,
            num_warps=2,
            col_groups=2,
            merge="pdl",
        ),
        True,
        "sequence",
        "finite",
    ),
    (
        SparseSpec(16, 4, 100, "v4_bf16", 64, "bfloat16", extra_topk=128, extra_page_size=64),
        SparseConfig(heads_per_block=16, kv_splits=3, smem_stages=2, block_n=16),
        True,
        "row",
        "-inf",
    ),
    (
        SparseSpec(32, 2, 257, "v4_fp8", 256, "bfloat16"),  # one cache
        SparseConfig(
            heads_per_block=32,
            kv_splits=2,
            block_n=32,
            num_warps=8,
            col_groups=4,
            dequant="registers",
            min_blocks=1,
            merge="pdl",
            softmax="split",
        ),
        False,
        "row",
        "none",
    ),
]
# what bench/sanitize.sh compiles
SAMPLE = [(spec, config) for spec, config, _ in SAMPLE_CASES]
SAMPLE += [(spec, config) for spec, config, *_ in V4_CASES]
BATCH = 2
PAST = 1 << 30  # a slot past every cache: listed beyond a row's length, never read


def v4_cache(fmt: str, pages: int, page_size: int, gen):
    """(the CUDA cache tensor, float64 [slots, 512] of what it holds, decoded from its bytes by
    tests/sparse_reference.py). A v4_fp8 cache keeps its padded page stride on the device."""
    import torch

    from kgen.mla import quantize_fp8
    from tests.sparse_reference import decode_cache

    values = torch.randn(pages, page_size, 512, generator=gen)
    if fmt == "v4_bf16":
        cache = values.bfloat16()
        return cache.cuda(), cache.double().reshape(-1, 512).numpy()
    cache = quantize_fp8(values, format=fmt)
    if fmt != "v4_fp8":
        return cache.cuda(), decode_cache(cache.numpy(), fmt)
    stride = cache.stride(0)
    raw = torch.as_strided(cache, (pages, stride), (stride, 1)).clone()
    width = cache.shape[2]
    on_device = raw.cuda()[:, : page_size * width].view(pages, page_size, width)
    return on_device, decode_cache(raw.numpy(), fmt, page_size)


def v4_list(gen, q_len: int, k: int, slots: int, lengths: str):
    """int32 indices [BATCH, T, k] (holes, duplicates, a run of -1) and their lengths (None,
    [BATCH] or [BATCH, T]); entries past a row's length list a slot past the cache."""
    import torch

    idx = torch.randint(0, slots, (BATCH, q_len, k), generator=gen)
    if k > 1:
        earlier = (torch.rand(idx.shape, generator=gen) * torch.arange(k)).long()
        repeat = torch.rand(idx.shape, generator=gen) < 0.2
        idx = torch.where(repeat, torch.gather(idx, 2, earlier), idx)
    idx = torch.where(torch.rand(idx.shape, generator=gen) < 0.2, -1, idx)
    if k > 8:
        idx[..., k // 4 : k // 2] = -1
    if lengths == "none":
        return idx.int(), None
    shape = (BATCH,) if lengths == "sequence" else (BATCH, q_len)
    n = torch.randint(1, k + 1, shape, generator=gen)
    per_row = n[:, None].expand(BATCH, q_len) if lengths == "sequence" else n
    past = torch.arange(k) >= per_row[..., None]
    return torch.where(past, PAST, idx).int(), n.int()


def run_v4(spec, config, bad: bool, lengths: str, sink_kind: str) -> float:
    """One V4 variant on fresh inputs against v4_reference; the worst relative error."""
    import numpy as np
    import torch

    from kgen.mla import build_sparse
    from kgen.mla.check import check_attention
    from kgen.mla.sparse.runner import SparseRunner
    from tests.sparse_reference import v4_reference

    gen = torch.Generator().manual_seed(13)
    pages = -(-2 * spec.topk // spec.page_size) + 1
    cache, slots = v4_cache(spec.kv_format, pages, spec.page_size, gen)
    idx, n = v4_list(gen, spec.q_len, spec.topk, len(slots), lengths)
    lists = [(slots, idx, n)]
    kwargs = {}
    if spec.has_extra:
        extra_pages = -(-2 * spec.extra_topk // spec.extra_page_size) + 1
        extra, extra_slots = v4_cache(spec.kv_format, extra_pages, spec.extra_page_size, gen)
        extra_idx, extra_n = v4_list(gen, spec.q_len, spec.extra_topk, len(extra_slots), lengths)
        lists.append((extra_slots, extra_idx, extra_n))
        kwargs.update(extra_kv_cache=extra)
    for _, listed, _ in lists:
        listed[0, spec.q_len - 1] = -1  # a row that sees nothing
    if bad:  # a slot past the cache at the head of a row's list (within every length)
        idx[BATCH - 1, 0, 0] = len(slots)
    sink = {
        "none": None,
        "finite": torch.randn(spec.heads, generator=gen) * 3,
        "+inf": torch.full((spec.heads,), float("inf")),
        "-inf": torch.full((spec.heads,), float("-inf")),
        "mixed": torch.where(
            torch.arange(spec.heads) % 2 == 0, float("inf"), torch.randn(spec.heads, generator=gen)
        ),
    }[sink_kind]
    kwargs.update(
        topk_length=None if n is None else n.cuda(),
        attn_sink=None if sink is None else sink.cuda(),
    )
    if spec.has_extra:
        kwargs.update(
            extra_indices=extra_idx.cuda(),
            extra_topk_length=None if extra_n is None else extra_n.cuda(),
        )
    q = torch.randn(BATCH, spec.q_len, spec.heads, 512, generator=gen).to(spec.torch_dtype)
    shape = (BATCH, spec.q_len, spec.heads)
    out = torch.full((*shape, 512), float("nan"), dtype=q.dtype, device="cuda")
    lse = torch.full(shape, float("nan"), device="cuda")
    runner = SparseRunner(build_sparse(spec, config, "native"), BATCH, torch.device("cuda", 0))
    runner.run(q.cuda(), cache, idx.cuda(), out=out, lse=lse, **kwargs)
    torch.cuda.synchronize()
    ref = v4_reference(
        q.double().numpy(),
        [(s, i.numpy(), None if m is None else m.numpy()) for s, i, m in lists],
        spec.default_scale,
        None if sink is None else sink.numpy(),
    )
    got = out.double().cpu().numpy(), lse.double().cpu().numpy()
    err = check_attention(*got, *ref, spec.dtype)
    empty = 0, spec.q_len - 1
    assert np.all(got[0][empty] == 0) and np.all(got[1][empty] == -np.inf)
    if bad:
        assert np.isnan(got[0][BATCH - 1, 0]).all() and np.isnan(got[1][BATCH - 1, 0]).all()
    return err


def main() -> int:
    import numpy as np
    import torch

    from kgen.mla import build_sparse
    from kgen.mla.check import check_attention
    from kgen.mla.sparse.workload import make_sparse_workload
    from tests.sparse_reference import sparse_reference

    pattern = re.compile(sys.argv[1] if len(sys.argv) > 1 else "")  # of "spec config" names
    if "--list" in sys.argv[1:]:
        for spec, config in SAMPLE:
            print(
                f"{spec.short_name():34s} k{spec.topk:<4d} {config.short_name():32s} "
                f"splits={config.kv_splits}"
            )
        return 0
    for spec, config, bad in SAMPLE_CASES:
        if not pattern.search(f"{spec.short_name()} {config.short_name()}"):
            continue
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
    for spec, config, bad, lengths, sink in V4_CASES:
        if not pattern.search(f"{spec.short_name()} {config.short_name()}"):
            continue
        err = run_v4(spec, config, bad, lengths, sink)
        print(
            f"ok  {spec.short_name():34s} k{spec.topk:<4d} {config.short_name():32s} "
            f"splits={config.kv_splits:<3d} err={err:.2e}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
