"""The float64 reference against an independent brute-force loop, and the checker's teeth."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .reference import check_attention, mla_reference


def _sees(mask, b, t, j) -> bool:
    if mask is None:
        return True
    if isinstance(mask, str):
        return j <= t
    return bool(mask[b, t, j])


def brute_force(q, kv_cache, block_table, seq_lens, mask, scale, latent):
    """One scalar loop per (b, t, h): no numpy broadcasting, no gather helpers."""
    batch, q_len, heads, dim = q.shape
    page_size = kv_cache.shape[1]
    out = np.zeros((batch, q_len, heads, latent))
    lse = np.full((batch, q_len, heads), -math.inf)
    for b in range(batch):
        length = int(seq_lens[b])
        for t in range(q_len):
            for h in range(heads):
                logits, values = [], []
                for n in range(length):
                    j = n - (length - q_len)
                    if j >= 0 and not _sees(mask, b, t, j):
                        continue
                    row = kv_cache[block_table[b, n // page_size], n % page_size]
                    logits.append(scale * sum(q[b, t, h, d] * row[d] for d in range(dim)))
                    values.append(row[:latent])
                if not logits:
                    continue
                top = max(logits)
                weights = [math.exp(x - top) for x in logits]
                total = sum(weights)
                out[b, t, h] = sum(w * v for w, v in zip(weights, values, strict=True)) / total
                lse[b, t, h] = top + math.log(total)
    return out, lse


@settings(max_examples=30)
@given(data=st.data())
def test_reference_matches_brute_force(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    q_len = data.draw(st.integers(1, 4))
    heads, dim, latent, page_size = data.draw(st.integers(1, 3)), 6, 4, data.draw(st.integers(1, 4))
    lens = [q_len + data.draw(st.integers(0, 9)) for _ in range(data.draw(st.integers(1, 3)))]
    pages = [-(-n // page_size) for n in lens]
    num_pages = sum(pages) + 2
    table = np.zeros((len(lens), max(pages)), dtype=np.int32)
    order = rng.permutation(num_pages)
    start = 0
    for b, count in enumerate(pages):
        table[b, :count] = order[start : start + count]
        start += count
    q = rng.standard_normal((len(lens), q_len, heads, dim))
    kv = rng.standard_normal((num_pages, page_size, dim))
    kind = data.draw(
        st.sampled_from(["none", "causal", "tree"] if q_len == 1 else ["causal", "tree"])
    )
    mask = {"none": None, "causal": "causal"}.get(kind)
    if kind == "tree":
        mask = rng.random((len(lens), q_len, q_len)) < 0.5
    ref = mla_reference(q, kv, table, lens, mask, 0.7, latent)
    brute = brute_force(q, kv, table, lens, mask, 0.7, latent)
    np.testing.assert_allclose(ref[0], brute[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ref[1], brute[1], rtol=1e-12, atol=1e-12)


def _case():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 2, 8))
    kv = rng.standard_normal((5, 4, 8))
    table = np.array([[0, 3, 1], [4, 2, 0]])
    return mla_reference(q, kv, table, [11, 7], "causal", 0.5, 6)


@pytest.mark.parametrize("damage", ["perturb", "swap-heads", "unwritten", "lse-shift", "nan"])
def test_checker_rejects_a_wrong_output(damage):
    out, lse = _case()
    check_attention(out, lse, out, lse, "bfloat16")  # the truth passes
    bad_out, bad_lse = out.copy(), lse.copy()
    if damage == "perturb":
        bad_out[1, 2] *= 1.05
    elif damage == "swap-heads":
        bad_out[0, 1] = bad_out[0, 1, ::-1]
    elif damage == "unwritten":
        bad_out[1, 0, 1, 3] = np.nan
    elif damage == "lse-shift":
        bad_lse[0, 0, 0] += 0.05
    else:
        bad_lse[1, 1, 0] = np.nan
    with pytest.raises(AssertionError):
        check_attention(bad_out, bad_lse, out, lse, "bfloat16")


def test_row_that_sees_nothing_is_zero_and_minus_inf():
    q = np.ones((1, 2, 1, 4))
    kv = np.ones((1, 2, 4))
    mask = np.array([[[True, False], [False, False]]])
    out, lse = mla_reference(q, kv, np.array([[0]]), [2], mask, 1.0, 3)
    assert (out[0, 1] == 0).all() and lse[0, 1, 0] == -np.inf
    assert np.isfinite(lse[0, 0, 0])
