"""A tiny real sparse sweep on the GPU ranks only correct variants and records the winner under
its (batch, top-k) bucket; sparse_attention(config='auto') then runs it, also inside CUDA-graph
capture (where it must not benchmark)."""

import pytest

from kgen.mla import SparseSpec, sparse_attention
from kgen.mla.choose import choose, choose_sparse_config
from kgen.mla.sparse.kernel import SparseKernel
from kgen.mla.sparse.workload import make_sparse_workload
from kgen.tune.space import Case
from kgen.tune.sparse_space import SparseAxes
from kgen.tune.sweep import SweepOptions, run_sweep

pytestmark = pytest.mark.gpu
# The sabotaged variants are the 8-head blocks: at H = 16 they fill half an m16 tile and sit at
# the 4-warp block's register cap, so whether any of them compiles for sm_120 without spills
# (what a sweep's best must do) turns on the NVRTC version and the last template edit; the
# 16-head blocks below compile without spills there under NVRTC 13.0 and 13.5, so one of them
# is the winner.
SABOTAGED_HPB = 8


def test_tiny_sparse_sweep_ranks_only_correct_variants_and_auto_uses_the_winner(
    tmp_path, monkeypatch
):
    import torch

    call = SparseKernel.__call__

    def sabotaged(self, *args, **kwargs):  # one variant computes a wrong answer
        out, lse = call(self, *args, **kwargs)
        if self.config.heads_per_block == SABOTAGED_HPB:
            out.mul_(1.1)
        return out, lse

    monkeypatch.setattr(SparseKernel, "__call__", sabotaged)
    case = Case("tiny-sparse", SparseSpec(heads=16, topk=300), batch=2, prefix=1000)
    options = SweepOptions(
        compile_only=False,
        sparse_axes=SparseAxes(
            heads_per_block=(8, 16),
            num_warps=(4,),
            col_groups=(4,),
            shared_tiles=((2, 16),),
            register_tiles=(16,),
            gather_bytes=(16,),
            min_blocks=(0,),
        ),
        reps=5,
        in_process=True,
        db_path=tmp_path / "db.json",
        jobs=4,
    )
    report = run_sweep([case], tmp_path / "out", options)
    (entry,) = report["cases"]
    wrong = {t["config"]["heads_per_block"] for t in entry["trials"] if t["status"] == "wrong"}
    assert wrong == {SABOTAGED_HPB}
    assert entry["best"]["status"] == "ok" and entry["best"]["config"]["heads_per_block"] == 16
    assert entry["torch"]["status"] == "ok" and entry["best"]["graph"]["median_us"] > 0
    assert entry["best"]["kv_bytes"] == 2 * 300 * 656  # the gathered bytes, no holes
    monkeypatch.setattr(SparseKernel, "__call__", call)

    monkeypatch.setenv("KGEN_TUNING_DB", str(tmp_path / "db.json"))
    choose.cache_clear()  # (choose_sparse_config is choose for the sparse family)
    w = make_sparse_workload(SparseSpec(heads=16, topk=260), 2, seed=5)  # same bucket: k512
    picked = choose_sparse_config(w.spec, 2, w.q.device.index)
    assert picked.to_dict() == entry["best"]["config"]

    expected = sparse_attention(w.q, w.kv_cache, w.indices, w.scale)
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.graph(graph, stream=stream):
        out, lse = sparse_attention(w.q, w.kv_cache, w.indices, w.scale)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, expected[0]) and torch.equal(lse, expected[1])
    choose.cache_clear()  # (choose_sparse_config is choose for the sparse family)


def test_the_sparse_oracle_on_the_gpu_matches_it_on_the_cpu():
    """The benchmark workload and oracle at a grid-like shape, on both devices."""
    import torch

    from kgen.tune.sparse_trials import bench_workload, sparse_oracle

    case = Case("s", SparseSpec(heads=16, topk=2048), batch=2, prefix=65536)
    w = bench_workload(case, torch.device("cuda"), seed=3)
    out, lse = sparse_oracle(w)
    cpu = type(w)(w.spec, w.q.cpu(), w.kv_cache.cpu(), w.indices.cpu(), w.scale)
    ref_out, ref_lse = sparse_oracle(cpu)
    torch.testing.assert_close(out.cpu(), ref_out, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(lse.cpu(), ref_lse, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "spec",
    [
        SparseSpec(heads=16, topk=29, page_size=64),  # V3.2: scales inline
        SparseSpec(
            heads=8, topk=23, kv_format="v4_fp8", page_size=256, extra_topk=17, extra_page_size=64
        ),
    ],
    ids=["v32", "v4"],
)
def test_the_read_only_gather_reads_exactly_the_listed_bytes(spec):
    """bench/time_shipped.py --gather's kernel: one block a list here (top-k under its 32 rows),
    so its XOR of the 32-bit words it read equals the host's XOR of each listed token's payload
    and scale row only if it read those bytes (sink counts the lists that match the key)."""
    import numpy as np
    import torch

    from kgen.tune.gather import read_rows
    from kgen.tune.sparse_trials import bench_workload

    w = bench_workload(Case("gather", spec, batch=1, prefix=700), torch.device("cuda"), seed=11)
    fmt = spec.format
    lists = [(w.kv_cache, w.indices, spec.page_size)]
    if spec.extra_topk:
        lists.append((w.extra_kv_cache, w.extra_indices, spec.extra_page_size))
    for n, (cache, indices, page_size) in enumerate(lists):
        pages = torch.as_strided(cache, (cache.shape[0], cache.stride(0)), (cache.stride(0), 1))
        pages = pages.cpu().numpy()
        read = []
        for slot in indices.flatten().tolist():
            page, offset = divmod(slot, page_size)
            if fmt.scales_at == "page":
                read.append(pages[page, offset * fmt.row_bytes : (offset + 1) * fmt.row_bytes])
                at = fmt.scale_row_offset(page_size) + offset * fmt.scale_row_bytes
                read.append(pages[page, at : at + fmt.scale_row_bytes])
            else:
                read.append(pages[page, offset * fmt.token_bytes : (offset + 1) * fmt.token_bytes])
        key = int(np.bitwise_xor.reduce(np.concatenate(read).view(np.uint32)))
        run = read_rows(w, key=key)
        run()
        torch.cuda.synchronize()
        assert run.sink.item() == 1, f"list {n}: the gather's XOR differs from the listed bytes'"
