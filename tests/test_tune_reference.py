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
