"""kgen.mla.quantize_fp8 / dequantize_fp8 on CPU tensors: the byte layout (read back by the test
reference's own bit-level decoder), error bounds, all-zero groups, non-finite values, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kgen.mla import Fp8CacheError, dequantize_fp8, fp8, quantize_fp8
from kgen.mla.kv_format import FORMATS

from .sparse_reference import decode_fp8_cache, e4m3_to_float64


def cache(pages=3, page_size=5, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(pages, page_size, 576, generator=gen).to(dtype)


def test_layout_offsets():
    f = FORMATS["fp8"]
    assert (f.scales_offset, f.rope_offset, f.token_bytes) == (512, 528, 656)
    kv = torch.zeros(1, 1, 576)
    kv[0, 0, 0], kv[0, 0, 130], kv[0, 0, 512], kv[0, 0, 575] = 448.0, -3.0, 1.5, -2.0
    raw = quantize_fp8(kv)
    assert raw.shape == (1, 1, 656) and raw.dtype == torch.uint8
    token = raw[0, 0].numpy()
    assert token[0] == 0x7E  # 448 = e4m3 max (S.1111.110) at scale 1
    assert token[130] == 0xFE  # -448 x scale 3/448
    scales = token[512:528].view("<f4")
    assert scales[0] == 1.0 and scales[1] == np.float32(3.0) / np.float32(448)
    assert scales[2] == scales[3] == np.float32(fp8.SCALE_FLOOR)  # all-zero groups
    rope = token[528:].view("<u2")
    assert rope[0] == 0x3FC0 and rope[63] == 0xC000  # 1.5 and -2.0 in bfloat16


@pytest.mark.parametrize("dtype", [getattr(torch, name) for name in fp8.SOURCE_DTYPES])
def test_round_trip_error_bounds(dtype):
    kv = cache(dtype=dtype) * 3
    back = dequantize_fp8(quantize_fp8(kv))
    src = kv.float()
    latent, back_latent = src[..., :512], back[..., :512]
    scales = quantize_fp8(kv)[..., 512:528].contiguous().view(torch.float32)
    step = scales.repeat_interleave(128, dim=-1)
    # e4m3: 3 mantissa bits (relative half-ulp 2^-4), subnormal step 2^-9 x scale
    bound = torch.maximum(latent.abs() * 2.0**-4, step * 2.0**-10)
    assert ((back_latent - latent).abs() <= bound * (1 + 1e-6)).all()
    torch.testing.assert_close(back[..., 512:], src[..., 512:].bfloat16().float(), rtol=0, atol=0)
    amax = latent.reshape(*latent.shape[:2], 4, 128).abs().amax(-1)
    torch.testing.assert_close(scales, amax / 448, rtol=1e-6, atol=0)


def test_the_reference_decoder_reads_the_same_bytes():
    raw = quantize_fp8(cache(seed=1))
    np.testing.assert_allclose(decode_fp8_cache(raw.numpy()), dequantize_fp8(raw).double().numpy())
    every = np.arange(256, dtype=np.uint8)
    theirs = torch.from_numpy(every).view(torch.float8_e4m3fn).double().numpy()
    np.testing.assert_array_equal(e4m3_to_float64(every), theirs)  # NaN == NaN here


def test_all_zero_groups_store_zeros():
    kv = torch.zeros(2, 3, 576)
    kv[1, 2, 200] = 5.0
    raw = quantize_fp8(kv)
    back = dequantize_fp8(raw)
    assert torch.equal(back, kv)
    assert torch.isfinite(raw[..., 512:528].contiguous().view(torch.float32)).all()


def test_non_finite_values_become_nan_alone():
    kv = cache(seed=2)
    kv[0, 0, 3], kv[0, 0, 4], kv[0, 1, 300] = float("inf"), float("nan"), float("-inf")
    kv[1, 0, 520], kv[1, 0, 521] = float("inf"), float("nan")
    back = dequantize_fp8(quantize_fp8(kv))
    assert back[0, 0, 3].isnan() and back[0, 0, 4].isnan() and back[0, 1, 300].isnan()
    assert back[1, 0, 520] == float("inf") and back[1, 0, 521].isnan()  # rope keeps them
    others = torch.isfinite(kv)
    assert torch.isfinite(back[others]).all()  # the rest of each group is untouched
    clean = dequantize_fp8(quantize_fp8(torch.where(others, kv, 0.0)))
    assert torch.equal(back[others], clean[others])


@pytest.mark.parametrize(
    "bad, match",
    [
        (torch.zeros(2, 3, 576, dtype=torch.float64), "dtype"),
        (torch.zeros(2, 3, 576, dtype=torch.int32), "dtype"),
        (torch.zeros(2, 576), "shape"),
        (torch.zeros(2, 3, 512), "shape"),
        (np.zeros((2, 3, 576), dtype=np.float32), "torch.Tensor"),
    ],
)
def test_bad_inputs_are_named(bad, match):
    with pytest.raises(Fp8CacheError, match=rf"kv: .*{match}"):
        quantize_fp8(bad)


def test_dequantize_refuses_what_quantize_does_not_make():
    with pytest.raises(Fp8CacheError, match="uint8"):
        dequantize_fp8(torch.zeros(1, 1, 600, dtype=torch.uint8))
    # 576 bytes a token is the tensor-scaled format: read only with its scale
    with pytest.raises(Fp8CacheError, match="pass it as scale"):
        dequantize_fp8(torch.zeros(1, 1, 576, dtype=torch.uint8))
    with pytest.raises(Fp8CacheError, match="uint8"):
        dequantize_fp8(torch.zeros(1, 1, 656))


def test_non_contiguous_source():
    kv = cache(pages=4).transpose(0, 1)  # [5, 4, 576], strided
    assert torch.equal(quantize_fp8(kv), quantize_fp8(kv.contiguous()))
