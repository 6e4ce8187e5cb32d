"""The float64 sparse reference on its own: dense attention over a cache equals sparse attention
listing every visible slot; -1 holes, order, duplicates, empty and invalid rows; the fp8 cache read
through its bytes; and the checker rejects a reference that drops duplicates."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from kgen.mla import dequantize_fp8, quantize_fp8
from kgen.mla.check import check_attention

from .reference import mla_reference
from .sparse_reference import sparse_reference

RNG = np.random.default_rng


def paged(batch=2, q_len=3, heads=4, page_size=4, lens=(9, 14), seed=0):
    """A shuffled paged cache, block table and sequence lengths, and q."""
    rng = RNG(seed)
    pages_per_seq = [-(-n // page_size) for n in lens]
    num_pages = sum(pages_per_seq) + 2
    order = rng.permutation(num_pages)
    table = np.zeros((batch, max(pages_per_seq)), dtype=np.int32)
    start = 0
    for b, count in enumerate(pages_per_seq):
        table[b, :count] = order[start : start + count]
        start += count
    kv = rng.standard_normal((num_pages, page_size, 576))
    q = rng.standard_normal((batch, q_len, heads, 576))
    return q, kv, table, np.array(lens, dtype=np.int32)


def visible_slots(table, lens, q_len, page_size, topk):
    """indices [B, T, topk]: the slots each draft token sees under a causal mask, -1 after."""
    batch = len(lens)
    indices = np.full((batch, q_len, topk), -1, dtype=np.int32)
    for b, length in enumerate(lens):
        for t in range(q_len):
            seen = [
                int(table[b, n // page_size]) * page_size + n % page_size
                for n in range(length - q_len + t + 1)
            ]
            indices[b, t, : len(seen)] = seen
    return indices


@pytest.mark.parametrize("q_len, page_size", [(1, 1), (3, 4), (2, 64)])
def test_dense_equals_sparse_over_every_visible_slot(q_len, page_size):
    q, kv, table, lens = paged(q_len=q_len, page_size=page_size)
    scale = 1 / math.sqrt(192)
    dense = mla_reference(q, kv, table, lens, None if q_len == 1 else "causal", scale)
    indices = visible_slots(table, lens, q_len, page_size, topk=int(lens.max()) + 3)
    sparse = sparse_reference(q, kv, indices, scale)
    np.testing.assert_allclose(sparse[0], dense[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sparse[1], dense[1], rtol=1e-12, atol=0)


def random_indices(rng, shape, slots, holes=0.3):
    indices = rng.integers(0, slots, size=shape).astype(np.int32)
    indices[rng.random(shape) < holes] = -1
    return indices


def test_holes_and_order_change_nothing_duplicates_count():
    q, kv, _, _ = paged()
    rng = RNG(1)
    slots = kv.shape[0] * kv.shape[1]
    indices = random_indices(rng, (2, 3, 11), slots)
    out, lse = sparse_reference(q, kv, indices, 0.1)
    shuffled = indices[..., rng.permutation(11)]
    padded = np.concatenate([np.full((2, 3, 5), -1, np.int32), shuffled], axis=-1)
    for other in (shuffled, padded):
        o, s = sparse_reference(q, kv, other, 0.1)
        np.testing.assert_allclose(o, out, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(s, lse, rtol=1e-12)
    twice = np.concatenate([indices, indices], axis=-1)  # every entry twice: same out, lse + ln 2
    o, s = sparse_reference(q, kv, twice, 0.1)
    np.testing.assert_allclose(o, out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s, lse + math.log(2), rtol=1e-12)


def test_a_duplicate_weighs_twice():
    kv = np.zeros((1, 2, 576))
    kv[0, 0, 0], kv[0, 1, 1] = 1.0, 1.0  # V of slot 0 is e0, of slot 1 is e1; equal logits
    q = np.zeros((1, 1, 1, 576))
    out, lse = sparse_reference(q, kv, np.array([[[0, 0, 1]]]), 1.0)
    np.testing.assert_allclose(out[0, 0, 0, :2], [2 / 3, 1 / 3])
    np.testing.assert_allclose(lse, [[[math.log(3)]]])


def test_empty_rows_and_invalid_slots():
    q, kv, _, _ = paged(batch=2, q_len=2)
    slots = kv.shape[0] * kv.shape[1]
    indices = random_indices(RNG(2), (2, 2, 6), slots, holes=0)
    indices[0, 1] = -1  # nothing to see
    indices[1, 0, 3] = slots  # one past the end
    indices[1, 1, 0] = -2  # negative, not -1
    out, lse = sparse_reference(q, kv, indices, 0.1)
    assert (out[0, 1] == 0).all() and (lse[0, 1] == -np.inf).all()
    assert np.isnan(out[1]).all() and np.isnan(lse[1]).all()
    assert np.isfinite(out[0, 0]).all() and np.isfinite(lse[0, 0]).all()


def test_fp8_cache_is_read_through_its_bytes():
    q, kv, _, _ = paged(seed=3)
    raw = quantize_fp8(torch.from_numpy(kv).float())
    indices = random_indices(RNG(3), (2, 3, 9), kv.shape[0] * kv.shape[1])
    got = sparse_reference(q, raw.numpy(), indices, 0.1)
    expected = sparse_reference(q, dequantize_fp8(raw).double().numpy(), indices, 0.1)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-6, atol=1e-6)  # dequantize_fp8: fp32
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-6)


def test_the_checker_rejects_a_reference_that_drops_duplicates():
    q, kv, _, _ = paged(seed=4)
    rng = RNG(4)
    indices = random_indices(rng, (2, 3, 8), 6, holes=0)  # 6 slots: duplicates for sure
    good = sparse_reference(q, kv, indices, 0.5)
    deduplicated = np.array(
        [
            [np.pad(np.unique(r), (0, 8 - len(np.unique(r))), constant_values=-1) for r in row]
            for row in indices
        ],
        dtype=np.int32,
    )
    wrong = sparse_reference(q, kv, deduplicated, 0.5)
    with pytest.raises(AssertionError):
        check_attention(*wrong, *good, "bfloat16")


@pytest.mark.parametrize("kv_format", ["fp8", "bf16"])
def test_the_workload_lists_only_its_rows(kv_format):
    from kgen.mla import SparseSpec
    from kgen.mla.sparse.workload import NEVER_LISTED, make_sparse_workload

    spec = SparseSpec(heads=2, q_len=3, topk=37, kv_format=kv_format, page_size=4)
    w = make_sparse_workload(spec, 2, device="cpu", seed=5)
    assert w.indices.dtype == torch.int32 and w.indices.shape == (2, 3, 37)
    assert (w.indices == -1).any() and (w.indices >= 0).any()
    rows = w.kv_cache.reshape(-1, w.kv_cache.shape[-1])
    listed = rows[w.indices[w.indices >= 0].long()]
    decoded = dequantize_fp8(listed[None]) if kv_format == "fp8" else listed.float()[None]
    assert (decoded.abs() < NEVER_LISTED / 2).all()
    out, lse = sparse_reference(
        w.q.double().numpy(),
        w.kv_cache.numpy() if kv_format == "fp8" else w.kv_cache.double().numpy(),
        w.indices.numpy(),
        w.scale,
    )
    assert np.isfinite(out).all() and np.isfinite(lse).all()
