"""The sweep's float64 torch oracle agrees with the NumPy reference (on the CPU)."""

import numpy as np
import pytest

from kgen.mla import Spec
from kgen.mla.workload import make_workload
from kgen.tune.baseline import torch_mla
from kgen.tune.reference import torch_reference

from .mla_helpers import reference_for


@pytest.mark.parametrize("mask", ["none", "causal", "tree"])
def test_torch_oracle_matches_numpy_reference(mask):
    spec = Spec(
        heads=3,
        q_len=1 if mask == "none" else 4,
        dtype="bfloat16",
        page_size=5,
        mask=mask,
        latent_dim=32,
        rope_dim=16,
    )
    w = make_workload(spec, [spec.q_len, spec.q_len + 17, spec.q_len + 40], device="cpu", seed=9)
    out, lse = torch_reference(w)
    ref_out, ref_lse = reference_for(w)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lse.numpy(), ref_lse, rtol=1e-12, atol=1e-12)
    base_out, base_lse = torch_mla(torch_mla.prepare(w))  # the plain-torch baseline, in bf16
    assert np.abs(base_out.double().numpy() - ref_out).max() < 0.05


def test_sparse_oracle_and_baseline_match_the_numpy_reference():
    """Holes, duplicates, a row with nothing listed and a row with a slot out of range."""
    import torch

    from kgen.mla import SparseSpec
    from kgen.mla.sparse.workload import make_sparse_workload
    from kgen.tune.sparse_trials import sparse_oracle, torch_sparse_mla

    from .sparse_reference import sparse_reference

    for kv_format in ("fp8", "bf16"):
        spec = SparseSpec(heads=3, q_len=2, topk=37, kv_format=kv_format, page_size=5)
        w = make_sparse_workload(spec, 2, device="cpu", seed=4)
        w.indices[0, 1] = -1
        w.indices[1, 0, 7] = w.kv_cache.shape[0] * spec.page_size
        cache = w.kv_cache if kv_format == "fp8" else w.kv_cache.double()
        out, lse = sparse_oracle(w)
        ref_out, ref_lse = sparse_reference(w.q.double(), cache.numpy(), w.indices, w.scale)
        np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(lse.numpy(), ref_lse, rtol=1e-12, atol=1e-12)
        w.indices[1, 0, 7] = 0
        base_out, base_lse = torch_sparse_mla(w)  # the plain-torch baseline, in bf16
        ref_out, _ = sparse_reference(w.q.double(), cache.numpy(), w.indices, w.scale)
        assert torch.isnan(base_out[0, 1]).all()  # nothing listed: softmax over nothing
        assert np.abs(base_out[:, 0].double().numpy() - ref_out[:, 0]).max() < 0.05


def test_the_sparse_bench_workload_lists_distinct_positions_of_each_sequences_own_pages():
    from kgen.mla import SparseSpec
    from kgen.tune.space import Case
    from kgen.tune.sparse_trials import bench_workload, sparse_work

    spec = SparseSpec(heads=2, q_len=2, topk=50, page_size=8)
    case = Case("s", spec, batch=3, prefix=100)  # 13 pages per sequence
    w = bench_workload(case, "cpu", seed=1)
    assert tuple(w.kv_cache.shape) == (39, 8, 656) and tuple(w.indices.shape) == (3, 2, 50)
    pages = w.indices.long() // 8
    for b in range(3):
        assert len(set(pages[b].flatten().tolist())) <= 13  # only its own pages
        for t in range(2):
            assert len(set(w.indices[b, t].tolist())) == 50  # distinct
    owners = [set(pages[b].flatten().tolist()) for b in range(3)]
    assert not (owners[0] & owners[1] or owners[1] & owners[2] or owners[0] & owners[2])
    assert sparse_work(w)["bytes"] == 3 * 2 * 50 * 656


def test_timed_calls_take_the_tree_mask_packed_once():
    """The sweep times a tree case with its mask as bit rows, packed before the timing (what a
    serving engine's layers take); every other case with the workload's own arguments."""
    import torch

    from kgen.mla import pack_tree_mask
    from kgen.tune.trials import SIDES

    tree = make_workload(
        Spec(heads=2, q_len=5, dtype="float32", mask="tree"), [9, 17], device="cpu", seed=1
    )
    timed = SIDES["dense"].timed_args(tree)
    assert timed[4].dtype == torch.int64 and torch.equal(timed[4], pack_tree_mask(tree.mask))
    assert all(a is b for i, (a, b) in enumerate(zip(timed, tree.args(), strict=True)) if i != 4)
    chain = make_workload(
        Spec(heads=2, q_len=5, dtype="float32", mask="causal"), [9], device="cpu", seed=1
    )
    assert SIDES["dense"].timed_args(chain) == chain.args()


@pytest.mark.parametrize("name", ["dsv4-h16-k1024-t3-b32", "dsv4-h8-k512-t1-b1"])
def test_the_v4_bench_workload_of_a_grid_case_builds_and_its_oracle_is_the_reference(name):
    """A DeepSeek-V4 grid case at a CPU-sized batch and prefix: the main list as the V3.2
    workload's (distinct positions of the sequence's own pages), the window list each query
    token's extra_topk recent tokens from its own position on in the sequence's own pages of the
    second cache, a sink per head; the bytes and FLOPs the floor counts; and the oracle (with
    lengths, an entry past the cache within a length and one beyond it added) equal to
    tests/sparse_reference.py's v4_reference, which decodes the 584-byte pages itself."""
    import dataclasses

    import torch

    from kgen.tune.report import sparse_case_work
    from kgen.tune.space import load_grid
    from kgen.tune.sparse_trials import (
        bench_workload,
        sparse_oracle,
        sparse_work,
        torch_sparse_mla,
    )

    from .sparse_reference import decode_cache, v4_reference

    (case,) = [c for c in load_grid(family="sparse") if c.name == name]
    case = dataclasses.replace(case, batch=3, prefix=1300)  # 6 pages of 256 a sequence
    spec, (b, t, k, x) = case.spec, (3, case.spec.q_len, case.spec.topk, case.spec.extra_topk)
    w = bench_workload(case, "cpu", seed=2)
    assert tuple(w.kv_cache.shape) == (18, 256, 584) and w.kv_cache.stride(0) == 256 * 576 + 2304
    assert tuple(w.indices.shape) == (b, t, k) and tuple(w.extra_indices.shape) == (b, t, x)
    assert w.attn_sink.dtype == torch.float32 and tuple(w.attn_sink.shape) == (spec.heads,)
    assert w.topk_length is None and w.extra_topk_length is None
    assert set(w.extras()) == {"attn_sink", "extra_kv_cache", "extra_indices"}
    pages, window_pages = w.indices.long() // 256, w.extra_indices.long() // 64
    for seq in range(b):
        assert len(set(pages[seq].flatten().tolist())) <= 6
        for row in range(t):
            assert len(set(w.indices[seq, row].tolist())) == k
    for pages_of in (pages, window_pages):  # each sequence's own pages
        owners = [set(pages_of[seq].flatten().tolist()) for seq in range(b)]
        assert not (owners[0] & owners[1] or owners[1] & owners[2] or owners[0] & owners[2])
    slots = w.extra_indices.long()
    for seq in range(b):  # the rows' windows overlap in all but t - 1 tokens
        assert len(torch.unique(slots[seq])) == x + t - 1
    assert torch.equal(slots[:, 1:, :-1], slots[:, :-1, 1:])  # row t's: one token past t - 1's
    assert torch.equal(slots[..., 1:] % 64, (slots[..., :-1] + 1) % 64)  # consecutive tokens
    assert sparse_work(w)["bytes"] == b * t * (k + x) * 584 == sparse_case_work(spec, b)[0]
    assert sparse_work(w)["flops"] == b * t * (k + x) * 2 * 1024 * spec.heads
    assert sparse_case_work(spec, b)[1] == sparse_work(w)["flops"]

    gen = torch.Generator().manual_seed(3)
    w.topk_length = torch.randint(0, k + 3, (b, t), generator=gen).int()
    w.extra_topk_length = torch.randint(1, x + 1, (b,), generator=gen).int()
    w.extra_indices[b - 1, 0, 0] = 10**6  # past the cache, within every length: NaN
    w.indices[0, 0, k - 1] = 10**6  # past the cache, beyond the length: never counts
    w.topk_length[0, 0] = k - 1

    def decoded(cache, page_size):
        raw = torch.as_strided(cache, (cache.shape[0], cache.stride(0)), (cache.stride(0), 1))
        return decode_cache(raw.numpy(), "v4_fp8", page_size)

    lists = [
        (decoded(w.kv_cache, 256), w.indices.numpy(), w.topk_length.numpy()),
        (decoded(w.extra_kv_cache, 64), w.extra_indices.numpy(), w.extra_topk_length.numpy()),
    ]
    ref_out, ref_lse = v4_reference(w.q.double().numpy(), lists, w.scale, w.attn_sink.numpy())
    out, lse = sparse_oracle(w)
    assert np.isnan(ref_lse[b - 1, 0]).all() and np.isfinite(ref_lse[0, 0]).all()
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lse.numpy(), ref_lse, rtol=1e-10, atol=1e-12)
    base_out, _ = torch_sparse_mla(w)  # the plain-torch baseline, in bf16
    rows = np.isfinite(ref_lse).all(axis=-1)  # (its rows with nothing listed are NaN)
    assert np.abs(base_out.double().numpy()[rows] - ref_out[rows]).max() < 0.05


def test_an_fp8_tensor_workload_quantizes_the_values_a_16_bit_one_holds():
    """The sweep's fp8_tensor workload: the 16-bit workload's values (same seed) in e4m3 under
    a k_scale of the used rows' amax / 448, passed as the call's k_scale; the oracle and the
    torch baseline read the dequantized values; rows no sequence uses saturate."""
    import torch

    lens = [3, 20, 41]
    spec = Spec(heads=4, q_len=3, mask="causal", page_size=8, kv_format="fp8_tensor")
    w = make_workload(spec, lens, device="cpu", seed=4)
    plain = make_workload(
        Spec(heads=4, q_len=3, mask="causal", page_size=8), lens, device="cpu", seed=4
    )
    assert w.kv_cache.dtype == torch.uint8 and w.kv_cache.shape == plain.kv_cache.shape
    used = plain.kv_cache.float().abs() < 1e3  # the unused rows hold 1e4 (9984 in bf16)
    values, exact = w.cache_values(), plain.kv_cache.float()
    assert w.extras() == {"k_scale": w.k_scale}
    assert torch.isclose(w.k_scale, exact[used].abs().max() / 448, rtol=2**-7)  # bf16 here
    assert torch.allclose(values[used], exact[used], rtol=2**-3, atol=w.k_scale.item() * 2**-9)
    assert torch.all(values[~used].abs() == 448 * w.k_scale)
    assert w.kv_bytes() == sum(lens) * 576  # a byte a value
    out, _ = torch_reference(w)
    ref_out, _ = reference_for(w)
    np.testing.assert_allclose(out.numpy(), ref_out, rtol=1e-12, atol=1e-12)
    base_out, _ = torch_mla(torch_mla.prepare(w))
    np.testing.assert_allclose(base_out.float().numpy(), ref_out, rtol=0.05, atol=0.05)


@pytest.mark.parametrize("name", ["dsv32-sparse-h16-b32", "dsv4-h16-k1024-t3-b32"])
def test_the_read_only_gather_addresses_each_list_as_its_format_lays_rows_out(name):
    """bench/time_shipped.py --gather's launches, made on the CPU (the GPU test checks the bytes
    they read): a launch a list, a block a 32 entries of a query row, payload rows at the
    format's stride (V4: the 576-byte payload row, its scale rows after the page's payload), and
    the bytes counted as the listed tokens' whole rows."""
    import dataclasses

    import torch

    from kgen.tune.gather import ROWS, RowLayout, read_rows
    from kgen.tune.space import load_grid
    from kgen.tune.sparse_trials import bench_workload

    (case,) = [c for c in load_grid(family="sparse") if c.name == name]
    case = dataclasses.replace(case, batch=2, prefix=min(case.prefix, 3000))
    w = bench_workload(case, torch.device("cpu"), seed=1)
    gather = read_rows(w)
    fmt, spec = w.spec.format, w.spec
    page_sizes = [spec.page_size] + ([spec.extra_page_size] if spec.has_extra else [])
    assert len(gather.launches) == len(page_sizes) == len(w.lists())
    for (layout, grid, args, _), (cache, indices, _, page_size) in zip(
        gather.launches, w.lists(), strict=True
    ):
        topk = indices.shape[2]
        assert grid == (-(-topk // ROWS), case.batch * spec.q_len, 1)
        values = [a.value for a in args]
        assert values[3] == topk
        assert values[4] == cache.stride(0) * cache.element_size()  # the (padded) page
        if fmt.scales_at == "page":
            assert layout == RowLayout(36, page_size, 576, page_size * 576, 8)
        else:
            assert layout == RowLayout(41, page_size, 656)
    assert gather.bytes == w.listed() * fmt.token_bytes


def test_the_gather_builds_its_kernels_at_the_first_call_and_launches_each_list(monkeypatch):
    """The timed call launches prebuilt kernels: each list's is built (and looked up) once."""
    import dataclasses

    import torch

    from kgen.tune import gather as gather_module
    from kgen.tune.space import load_grid
    from kgen.tune.sparse_trials import bench_workload

    built, launched = [], []

    class Kernel:
        def __init__(self, layout):
            self.layout = layout

        def launch(self, grid, block, args, stream, device):
            launched.append((self.layout, grid))

    def module(layout):
        built.append(layout)
        return {"read_rows": Kernel(layout)}

    monkeypatch.setattr(gather_module, "_module", module)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: type("S", (), {"cuda_stream": 0}))
    (case,) = [c for c in load_grid(family="sparse") if c.name == "dsv4-h16-k1024-t3-b32"]
    case = dataclasses.replace(case, batch=2, prefix=min(case.prefix, 3000))
    gather = gather_module.read_rows(bench_workload(case, torch.device("cpu"), seed=1))
    expected = [(layout, grid) for layout, grid, _, _ in gather.launches]
    gather()
    gather()
    assert built == [layout for layout, _ in expected]
    assert launched == expected * 2
