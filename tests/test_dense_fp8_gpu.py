"""Dense MLA on an fp8 cache on the GPU, against the float64 reference computed on the
dequantized cache (kgen.mla.dequantize_fp8: exactly the values the kernel is to read), at the
16-bit tolerances: both formats ("fp8_tensor" with its k_scale, DeepSeek-V3.2's "fp8"), every
mask, odd page sizes and lengths, the configs the rules allow; bfloat16 q far outside float16's
range on "fp8_tensor" (multiplied in float16); and a k_scale that is not finite and positive
refused by validate=True or confined to the call's outputs."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import kgen.mla
from kgen.arch import resolve_arch
from kgen.mla import InputError, Spec, build
from kgen.mla.choose import default_config
from kgen.mla.workload import make_workload

from .mla_helpers import reference_for, to_numpy
from .reference import check_attention
from .strategies import HEADS, PAGE_SIZES, configs, seq_lens

pytestmark = pytest.mark.gpu
SEEDS = st.integers(0, 2**31 - 1)
FORMATS = ("fp8_tensor", "fp8")


@st.composite
def fp8_specs(draw, max_q_len: int = 16):
    mask = draw(st.sampled_from(["none", "causal", "tree"]))
    return Spec(
        heads=draw(st.sampled_from([*HEADS, 128])),
        q_len=1 if mask == "none" else draw(st.integers(1, max_q_len)),
        dtype=draw(st.sampled_from(["bfloat16", "float16"])),
        page_size=draw(st.sampled_from(PAGE_SIZES)),
        mask=mask,
        kv_format=draw(st.sampled_from(FORMATS)),
    )


def fp8_workload(spec: Spec, lens: list[int], seed: int):
    """(the workload, its fp8 cache, k_scale or None): the reference reads the cache's values
    (Workload.cache_values), the kernel the cache and the scale (kgen.mla.workload: rows no
    sequence uses saturate e4m3, so a kernel that reads one shows it)."""
    w = make_workload(spec, lens, seed=seed, mask_kind="random")
    return w, w.kv_cache, w.k_scale


def run_fp8(kernel, w, cache, k_scale, **kwargs):
    out, lse = w.poisoned_outputs()
    kernel(
        w.q, cache, w.block_table, w.seq_lens, w.mask, w.scale,
        out=out, lse=lse, k_scale=k_scale, **kwargs,
    )  # fmt: skip
    torch.cuda.synchronize()
    return out, lse


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_an_fp8_cache_matches_the_reference_on_its_dequantized_values(data):
    spec = data.draw(fp8_specs(), label="spec")
    config = data.draw(configs(spec, resolve_arch("native"), computes=("mma",)), label="config")
    lens = data.draw(seq_lens(spec), label="seq_lens")
    w, cache, k_scale = fp8_workload(spec, lens, data.draw(SEEDS))
    out, lse = run_fp8(build(spec, config, "native"), w, cache, k_scale)
    check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)


@pytest.mark.parametrize("kv_format", FORMATS)
@pytest.mark.parametrize("heads, q_len, mask", [(16, 1, "none"), (128, 1, "none"), (16, 4, "tree")])
def test_the_default_config_and_the_one_call_form_match_the_reference(
    kv_format, heads, q_len, mask
):
    spec = Spec(heads=heads, q_len=q_len, mask=mask, page_size=64, kv_format=kv_format)
    w, cache, k_scale = fp8_workload(spec, [q_len, 77, 700], seed=heads + q_len)
    kernel = build(spec, default_config(spec, resolve_arch("native"), sm_count=132), "native")
    check_attention(*to_numpy(*run_fp8(kernel, w, cache, k_scale)), *reference_for(w), spec.dtype)
    out, lse = kgen.mla.attention(
        w.q, cache, w.block_table, w.seq_lens, w.mask, w.scale, k_scale=k_scale
    )
    check_attention(*to_numpy(out, lse), *reference_for(w), spec.dtype)


@pytest.mark.parametrize(
    "heads, q_len, mask, powers",
    [
        (16, 1, "none", [20] * 16),  # every value past float16's largest: the scale brings it in
        (16, 1, "none", [-24] * 16),  # every value below float16's smallest normal
        (128, 1, "none", [8, -8, 0, 4, -4, 2, -2, 6] * 16),  # heads 2^16 apart in one block
        (16, 4, "tree", [12, -12, 0, 3] * 4),
    ],
)
def test_bfloat16_q_out_of_float16s_range_matches_the_reference(heads, q_len, mask, powers):
    """bfloat16 q over an "fp8_tensor" cache is multiplied in float16 (kgen.mla.program.tile_dtype),
    brought into its range by a power of two a block: head h's q times 2^powers[h] (the softmax
    scale divided by the largest, so scores stay where float32 keeps them) matches the reference;
    an Inf in one head's q reaches only that head's rows."""
    spec = Spec(heads=heads, q_len=q_len, mask=mask, page_size=64, kv_format="fp8_tensor")
    w, cache, k_scale = fp8_workload(spec, [q_len, 77, 700], seed=heads + q_len)
    factors = torch.tensor([2.0**e for e in powers], dtype=torch.float64)
    w = dataclasses.replace(
        w, q=(w.q.double() * factors.to(w.q.device)[:, None]).to(w.q.dtype),
        scale=w.scale / 2.0 ** max(powers),
    )  # fmt: skip
    kernel = build(spec, default_config(spec, resolve_arch("native"), sm_count=132), "native")
    ref = reference_for(w)
    check_attention(*to_numpy(*run_fp8(kernel, w, cache, k_scale)), *ref, spec.dtype)
    w.q[:, :, 1, 5] = math.inf
    out, lse = to_numpy(*run_fp8(kernel, w, cache, k_scale))
    others = [h for h in range(heads) if h != 1]
    check_attention(
        out[:, :, others], lse[:, :, others], ref[0][:, :, others], ref[1][:, :, others], spec.dtype
    )
    assert not np.isfinite(out[:, :, 1]).all()


@pytest.mark.parametrize("value", [math.nan, math.inf, 0.0])
def test_a_scale_that_is_not_finite_and_positive_is_refused_or_contained(value):
    spec = Spec(heads=16, kv_format="fp8_tensor")
    w, cache, k_scale = fp8_workload(spec, [5, 130], seed=1)
    kernel = build(spec, default_config(spec, resolve_arch("native"), sm_count=132), "native")
    bad = torch.full_like(k_scale, value)
    with pytest.raises(InputError, match=r"k_scale\[0\]="):
        run_fp8(kernel, w, cache, bad, validate=True)
    # unchecked it reaches only this call's outputs: every one written, none finite where the
    # scale is not; the cache and the scale are left as they were
    before = cache.clone()
    out, lse = run_fp8(kernel, w, cache, bad)
    assert torch.equal(cache, before)
    torch.testing.assert_close(bad, torch.full_like(k_scale, value), rtol=0, atol=0, equal_nan=True)
    if value == 0.0:  # every score 0: out is the mean of V x 0, lse the log of the count
        assert torch.all(out == 0) and torch.isfinite(lse).all()
    else:
        assert not torch.isfinite(out.float()).any() and not torch.isfinite(lse).any()
