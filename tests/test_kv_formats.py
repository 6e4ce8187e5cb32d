"""The cache-format table (kgen.mla.kv_format) and its quantizers (kgen.mla.quantize_fp8 /
dequantize_fp8) against tests/sparse_reference.py's own NumPy encoder and decoder of the
documented bytes (FlashMLA's V32 and MODEL1 layouts and scale rules, FlashInfer's V4.1): the same
bytes, page layout and padding included; CPU and CUDA writing the same bytes (GPU); and the V4
reference's own consistency (sinks, lengths, two lists)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kgen.mla import dequantize_fp8, quantize_fp8, sparse_spec_for, tensor_scale
from kgen.mla.fp8 import Fp8CacheError, page_view
from kgen.mla.kv_format import FORMATS
from kgen.mla.operands import InputError
from kgen.mla.sparse.spec import SparseSpec
from kgen.params import ParamError

from .sparse_reference import (
    LAYOUTS,
    decode_cache,
    decode_tensor,
    quantize,
    quantize_tensor,
    v4_reference,
)

FP8 = ("fp8", "v4_fp8", "v41_fp8")


def source(name, pages, page_size, seed, dtype=torch.bfloat16):
    """Values of many magnitudes: whole groups scaled by 2^[-20, 12], some all zero, some whose
    amax / 448 is a power of two exactly (the UE8M0 rule's edge)."""
    dim, n8, group, _, _ = LAYOUTS[name]
    gen = torch.Generator().manual_seed(seed)
    kv = torch.randn(pages, page_size, dim, generator=gen)
    groups = kv[..., :n8].reshape(pages, page_size, n8 // group, group)
    groups *= torch.exp2(torch.randint(-20, 13, groups.shape[:-1], generator=gen)).unsqueeze(-1)
    groups[torch.rand(groups.shape[:-1], generator=gen) < 0.1] = 0.0
    edge = torch.rand(groups.shape[:-1], generator=gen) < 0.1
    exact = groups.abs().amax(-1, keepdim=True)
    target = 448 * torch.exp2(torch.randint(-10, 4, exact.shape, generator=gen).float())
    groups[edge] = (groups * target / exact.clamp(min=1e-30))[edge]
    return kv.to(dtype)


def padded_pages(cache: torch.Tensor, name: str) -> np.ndarray:
    """The whole padded pages a "page"-scaled cache view lies in."""
    page_bytes = FORMATS[name].page_bytes(cache.shape[1])
    whole = torch.as_strided(cache, (cache.shape[0], page_bytes), (cache.stride(0), 1))
    return whole.cpu().numpy()


def test_the_table_holds_the_documented_sizes():
    sizes = {n: (f.head_dim, f.token_bytes, f.row_bytes) for n, f in FORMATS.items()}
    assert sizes["fp8"] == (576, 656, 656) and sizes["bf16"] == (576, 1152, 1152)
    assert sizes["v4_fp8"] == (512, 584, 576) and sizes["v41_fp8"] == (512, 528, 528)
    assert sizes["v4_bf16"] == (512, 1024, 1024) and sizes["fp8_tensor"] == (576, 576, 576)
    tensor = FORMATS["fp8_tensor"]
    assert tensor.tensor_scale and (tensor.scale_groups, tensor.rope_dims) == (0, 0)
    assert not any(f.tensor_scale for n, f in FORMATS.items() if n != "fp8_tensor")
    v4 = FORMATS["v4_fp8"]
    # a page: payload rows, then 8-byte scale rows, padded to a multiple of 576 bytes
    assert [v4.page_bytes(n) for n in (256, 64, 2, 1)] == [149760, 37440, 1728, 1152]
    assert (v4.scale_groups, v4.rope_dims, FORMATS["v41_fp8"].scale_groups) == (7, 64, 16)


@pytest.mark.parametrize("name", FP8)
@pytest.mark.parametrize("page_size", [1, 2, 3, 64])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_bytes_are_the_documented_ones(name, page_size, dtype):
    kv = source(name, 3, page_size, seed=page_size, dtype=dtype)
    ours = quantize_fp8(kv, format=name)
    theirs = quantize(kv.float().numpy(), name)
    if LAYOUTS[name][4] == "page":
        assert ours.shape == (3, page_size, 584) and ours.stride(1) == 584
        np.testing.assert_array_equal(padded_pages(ours, name), theirs)
    else:
        np.testing.assert_array_equal(ours.numpy(), theirs)
    back = dequantize_fp8(ours).double().numpy().reshape(-1, LAYOUTS[name][0])
    # float32 products of e4m3 x a float32 scale round; x a power of two they are exact
    rtol = 2.0**-24 if LAYOUTS[name][3] == "float32" else 0
    np.testing.assert_allclose(back, decode_cache(theirs, name, page_size), rtol=rtol, atol=0)


def test_v32_bytes_from_float32_sources_are_the_documented_ones():
    kv = source("fp8", 2, 5, seed=7, dtype=torch.float32)
    np.testing.assert_array_equal(quantize_fp8(kv).numpy(), quantize(kv.numpy(), "fp8"))


@pytest.mark.parametrize("name", ["v4_fp8", "v41_fp8"])
def test_ue8m0_scales_bound_the_error(name):
    kv = source(name, 2, 4, seed=3, dtype=torch.float32)
    back = dequantize_fp8(quantize_fp8(kv, format=name))
    n8, group = LAYOUTS[name][1], LAYOUTS[name][2]
    x = kv[..., :n8].reshape(2, 4, -1, group)
    scale = torch.exp2(torch.ceil(torch.log2((x.abs().amax(-1) / 448).clamp(min=1e-4))))
    step = scale.repeat_interleave(group, dim=-1).reshape(2, 4, n8)
    err = (back[..., :n8] - kv[..., :n8]).abs()
    assert (err <= torch.maximum(kv[..., :n8].abs() * 2.0**-4, step * 2.0**-10)).all()
    assert torch.equal(back[..., n8:], kv[..., n8:].bfloat16().float())


def test_a_page_view_reads_pages_whatever_their_stride():
    kv = source("v4_fp8", 3, 2, seed=1)
    cache = quantize_fp8(kv, format="v4_fp8")
    assert cache.stride(0) == 1728 and not cache.is_contiguous()
    assert page_view(cache, FORMATS["v4_fp8"]).shape == (3, 1168)
    with pytest.raises(Fp8CacheError, match="strides"):
        dequantize_fp8(cache.transpose(0, 1))


def test_formats_are_told_apart_and_refused_by_name():
    with pytest.raises(Fp8CacheError, match="fp8 formats"):
        quantize_fp8(torch.zeros(1, 1, 512), format="v4_bf16")
    with pytest.raises(Fp8CacheError, match="448 quantized"):
        quantize_fp8(torch.zeros(1, 1, 576), format="v4_fp8")
    for name in FP8:
        dim = LAYOUTS[name][0]
        raw = quantize_fp8(torch.randn(1, 2, dim), format=name)
        assert dequantize_fp8(raw).shape == (1, 2, dim)  # told by its width


def test_non_finite_values_become_nan_alone_in_ue8m0_groups():
    kv = source("v4_fp8", 1, 2, seed=5, dtype=torch.float32)
    kv[0, 0, 3], kv[0, 1, 500] = float("inf"), float("nan")
    back = dequantize_fp8(quantize_fp8(kv, format="v4_fp8"))
    assert back[0, 0, 3].isnan() and back[0, 1, 500].isnan()
    clean = dequantize_fp8(quantize_fp8(torch.nan_to_num(kv, posinf=0.0), format="v4_fp8"))
    keep = torch.isfinite(kv)
    assert torch.equal(back[keep], clean[keep])


def tensor_source(pages, page_size, seed, dtype=torch.bfloat16):
    """A 576-wide cache whose tokens span 2^[-30, 10] (some e4m3 subnormal once scaled), a few
    of them all zero."""
    gen = torch.Generator().manual_seed(seed)
    kv = torch.randn(pages, page_size, 576, generator=gen)
    kv *= torch.exp2(torch.randint(-30, 11, (pages, page_size, 1), generator=gen))
    kv[torch.rand(pages, page_size, generator=gen) < 0.1] = 0.0
    return kv.to(dtype)


# None: amax / 448; 2^-14 saturates most values to +-448; 1e3 leaves most e4m3 subnormal or 0
@pytest.mark.parametrize("scale", [None, 2.0**-14, 1e3, 0.37])
@pytest.mark.parametrize("page_size", [1, 3, 64])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_tensor_scaled_bytes_are_the_documented_ones(scale, page_size, dtype):
    kv = tensor_source(2, page_size, seed=page_size, dtype=dtype)
    ours = quantize_fp8(kv, format="fp8_tensor", scale=scale)
    theirs, their_scale = quantize_tensor(kv.float().numpy(), scale)
    assert ours.dtype == torch.uint8 and ours.shape == (2, page_size, 576)
    np.testing.assert_array_equal(ours.numpy(), theirs)
    used = tensor_scale(kv) if scale is None else torch.tensor(scale, dtype=torch.float32)
    assert used.dtype == torch.float32 and used.item() == their_scale
    back = dequantize_fp8(ours, scale=used)  # told by its width
    # e4m3 x a float32 scale is exact in float64: one rounding to float32, the same everywhere
    expect = decode_tensor(theirs, their_scale).astype(np.float32)
    np.testing.assert_array_equal(back.numpy(), expect)


def test_tensor_scale_is_amax_over_448_of_the_finite_values():
    kv = tensor_source(2, 4, seed=9, dtype=torch.float32)
    amax = kv.abs().max()
    kv[0, 0, 0], kv[1, 3, 100], kv[1, 2, 5] = float("inf"), float("nan"), -float("inf")
    assert tensor_scale(kv).item() == np.float32(amax.item()) / np.float32(448)
    back = dequantize_fp8(quantize_fp8(kv, format="fp8_tensor"), scale=tensor_scale(kv))
    bad = ~torch.isfinite(kv)
    assert back[bad].isnan().all() and back[~bad].isfinite().all()
    assert back[~bad].abs().max() == amax  # the largest value is 448 x scale, exactly
    assert tensor_scale(torch.zeros(1, 2, 576)).item() == 2.0**-126


def test_tensor_scale_is_given_or_refused():
    kv = tensor_source(1, 2, seed=4)
    for bad in (float("nan"), float("inf"), 0.0, -1.0, 1e-46, torch.ones(2), "1"):
        with pytest.raises(Fp8CacheError, match="scale"):
            quantize_fp8(kv, format="fp8_tensor", scale=bad)
    cache = quantize_fp8(kv, format="fp8_tensor", scale=torch.tensor([0.5]))
    with pytest.raises(Fp8CacheError, match="pass it as scale"):
        dequantize_fp8(cache)
    with pytest.raises(Fp8CacheError, match="finite"):
        dequantize_fp8(cache, scale=float("nan"))
    assert torch.equal(cache, quantize_fp8(kv, format="fp8_tensor", scale=0.5))
    with pytest.raises(Fp8CacheError, match="only a format with one scale"):
        quantize_fp8(kv, format="fp8", scale=0.5)
    with pytest.raises(Fp8CacheError, match="takes no scale"):
        dequantize_fp8(quantize_fp8(kv), scale=0.5)


def test_the_sparse_family_refuses_a_tensor_scaled_cache():
    with pytest.raises(ParamError, match="SparseSpec.kv_format='fp8_tensor'"):
        SparseSpec(heads=4, kv_format="fp8_tensor")
    q, idx = (
        torch.zeros(1, 1, 4, 576, dtype=torch.bfloat16),
        torch.zeros(1, 1, 8, dtype=torch.int32),
    )
    cache = quantize_fp8(torch.zeros(2, 4, 576), format="fp8_tensor", scale=1.0)
    with pytest.raises(InputError, match="576, one scale for the tensor"):
        sparse_spec_for(q, cache, idx)


@pytest.mark.gpu
@pytest.mark.parametrize("scale", [None, 0.37])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_writes_the_tensor_scaled_bytes_the_cpu_does(scale, dtype):
    kv = tensor_source(64, 64, seed=12, dtype=dtype)
    cpu = quantize_fp8(kv, format="fp8_tensor", scale=scale)
    gpu = quantize_fp8(kv.cuda(), format="fp8_tensor", scale=scale)
    assert torch.equal(cpu, gpu.cpu())
    assert tensor_scale(kv.cuda()).item() == tensor_scale(kv).item()
    used = tensor_scale(kv) if scale is None else scale
    back = dequantize_fp8(gpu, scale=used.cuda() if scale is None else used).cpu()
    assert torch.equal(back, dequantize_fp8(cpu, scale=used))


@pytest.mark.gpu
@pytest.mark.parametrize("name", FP8)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_writes_the_bytes_the_cpu_does(name, dtype):
    """Every format's arithmetic is exactly rounded: the same bytes on both devices."""
    kv = source(name, 64, 64, seed=11, dtype=dtype)
    cpu = quantize_fp8(kv, format=name)
    gpu = quantize_fp8(kv.cuda(), format=name)  # (.cpu() of the view would drop the padding)
    if LAYOUTS[name][4] == "page":
        cpu, gpu = padded_pages(cpu, name), padded_pages(gpu, name)
    else:
        cpu, gpu = cpu.numpy(), gpu.cpu().numpy()
    np.testing.assert_array_equal(cpu, gpu)
    back = dequantize_fp8(quantize_fp8(kv.cuda(), format=name)).cpu()
    assert torch.equal(back, dequantize_fp8(quantize_fp8(kv, format=name)))


def _lists(seed, batch=2, q_len=3, n=20):
    rng = np.random.default_rng(seed)
    slots = rng.standard_normal((30, 512))
    idx = rng.integers(-1, 30, (batch, q_len, n))
    return rng.standard_normal((batch, q_len, 4, 512)), slots, idx, rng


def test_v4_reference_sinks_lengths_and_two_lists():
    q, slots, idx, rng = _lists(0)
    scale = 512**-0.5
    out, lse = v4_reference(q, [(slots, idx, None)], scale)
    same = v4_reference(q, [(slots, idx, None)], scale, sink=np.full(4, -np.inf))
    np.testing.assert_array_equal(out, same[0])
    gone = v4_reference(q, [(slots, idx, None)], scale, sink=np.full(4, np.inf))
    assert (gone[0] == 0).all() and np.array_equal(gone[1], lse)  # lse without the sink
    sink = rng.standard_normal(4)
    sunk = v4_reference(q, [(slots, idx, None)], scale, sink=sink)
    np.testing.assert_allclose(sunk[0], out / (1 + np.exp(sink - lse))[..., None])
    # lengths == the rest of the list set to -1
    lengths = rng.integers(0, 25, (2, 3))
    cut = np.where(np.arange(20) < lengths[..., None], idx, -1)
    np.testing.assert_array_equal(
        v4_reference(q, [(slots, idx, lengths)], scale)[0],
        v4_reference(q, [(slots, cut, None)], scale)[0],
    )
    # two lists over two caches == one list over both caches' rows
    other = rng.standard_normal((7, 512))
    idx2 = rng.integers(-1, 7, (2, 3, 5))
    both = np.concatenate([idx, np.where(idx2 >= 0, idx2 + 30, -1)], axis=-1)
    joined = v4_reference(q, [(np.concatenate([slots, other]), both, None)], scale)
    split = v4_reference(q, [(slots, idx, None), (other, idx2, None)], scale)
    np.testing.assert_allclose(split[0], joined[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(split[1], joined[1], rtol=1e-12)
    # empty rows: 0 and -inf whatever the sink; an out-of-range entry within the length: NaN
    empty = v4_reference(q, [(slots, np.full_like(idx, -1), None)], scale, sink=sink)
    assert (empty[0] == 0).all() and (empty[1] == -np.inf).all()
    bad = idx.copy()
    bad[1, 2, 0] = 30
    nan = v4_reference(q, [(slots, bad, None)], scale)
    assert np.isnan(nan[0][1, 2]).all() and not np.isnan(nan[0][:1]).any()
    ok = v4_reference(q, [(slots, bad, np.zeros((2, 3), np.int64))], scale)  # past the length
    assert (ok[0] == 0).all()
