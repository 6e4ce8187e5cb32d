"""fp8 latent caches made from 16- or 32-bit ones, and read back, in any fp8 format of the format
table (kgen.mla.kv_format: where each byte of a token and of a page goes).

quantize_fp8 picks each group's scale from the amax of its finite values:

  a float32 scale for the tensor ("fp8_tensor", vLLM's and SGLang's kv_cache_dtype="fp8"): the
    one given (k_scale: finite and > 0, rounded to float32), else tensor_scale(kv), the float32
    rule below over every finite value of kv; values beyond 448 x scale saturate to +-448;

  float32 scales ("fp8", DeepSeek-V3.2): scale = amax / 448, floored at the smallest normal float32
    (SCALE_FLOOR) so an all-zero group stores zeros with a finite, nonzero scale;
  UE8M0 scales ("v4_fp8", "v41_fp8"): scale = 2^ceil(log2(max(amax / 448, 1e-4))), FlashMLA's
    MODEL1 rule, with amax / 448 and 1e-4 as float32 values and the ceiling of the exact base-2
    logarithm (taken from the float's bits: exponent, plus one unless the mantissa is zero).

Each value is then value / scale rounded to e4m3 (to nearest even; at most 448 by construction).
Every step is exactly rounded (the divisions in float64, rounded once to float32, which equals the
float32 quotient), so CPU and CUDA write the same bytes. For bf16 and fp16 sources the v4_fp8
bytes equal those of FlashMLA's MODEL1 quantizer (tests/quant.py) wherever that one defines them;
this one also zeroes the pad byte of each scale row and the page padding, which FlashMLA leaves
uninitialized. (For float32 sources FlashMLA's float32 log2 can round a quotient a few ulps above
a power of two down onto it and pick half the scale; this module takes the exact ceiling.)

Non-finite source values become e4m3 NaN without touching the rest of their group (their group's
scale comes from its finite values; FlashMLA's quantizer makes the whole group's scale NaN);
rope values keep theirs (bfloat16 has Inf and NaN).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgen.mla.kv_format import E4M3_MAX, FORMATS, KvFormat, fp8_format_of_width

if TYPE_CHECKING:  # torch is imported where a cache is made or read: building kernels needs none
    import torch

SCALE_FLOOR = 2.0**-126  # the smallest normal float32 (torch.finfo(torch.float32).tiny)
UE8M0_FLOOR = 1e-4  # as a float32: the least amax / 448 a UE8M0 scale is taken from
SOURCE_DTYPES = ("float32", "float16", "bfloat16")  # torch dtype names quantize_fp8 takes
# The V3.2 format's layout, for code that names it
LATENT_DIM, ROPE_DIM = 512, 64
TOKEN_BYTES = FORMATS["fp8"].token_bytes  # 656


class Fp8CacheError(ValueError):
    """A tensor is not a cache quantize_fp8 takes, or not one it makes."""


def _fp8_format(name: str) -> KvFormat:
    fmt = FORMATS.get(name)
    if fmt is None or not fmt.quantized:
        fp8 = tuple(n for n, f in FORMATS.items() if f.quantized)
        raise Fp8CacheError(f"format={name!r}: must be one of the fp8 formats {fp8}")
    return fmt


def _divide(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """float32 num / den, exactly rounded on every device: the float64 quotient (53 bits: its
    rounding to float32 is the float32 quotient's) of two tensors (a CUDA division by a Python
    scalar multiplies by its reciprocal instead)."""
    import torch

    return (num.double() / den.double()).to(torch.float32)


def _float32_scales(amax: torch.Tensor) -> torch.Tensor:
    """max(amax / 448, SCALE_FLOOR) in float32, exactly rounded."""
    import torch

    return torch.clamp(_divide(amax, torch.full_like(amax, E4M3_MAX)), min=SCALE_FLOOR)


def _scales(amax: torch.Tensor, fmt: KvFormat) -> tuple[torch.Tensor, torch.Tensor]:
    """(float32 scales, their stored bytes [..., groups, scale_bytes]) of the groups' amax."""
    import torch

    if fmt.scale == "float32":
        scales = _float32_scales(amax)
        return scales, scales.contiguous().view(torch.uint8).reshape(*scales.shape, 4)
    quotient = _divide(amax, torch.full_like(amax, E4M3_MAX))
    floor = torch.tensor(UE8M0_FLOOR, dtype=torch.float32, device=amax.device)
    bits = torch.maximum(quotient, floor).view(torch.int32)  # a normal, positive float32
    exponent = (bits >> 23) - 127 + ((bits & 0x7FFFFF) != 0).to(torch.int32)  # exact ceil(log2)
    scales = ((exponent + 127) << 23).view(torch.float32)
    return scales, (exponent + 127).to(torch.uint8).unsqueeze(-1)


def _check_source(kv: torch.Tensor, fmt: KvFormat) -> None:
    import torch

    if not isinstance(kv, torch.Tensor):
        raise Fp8CacheError(f"kv: expected a torch.Tensor, got {type(kv).__name__}")
    if str(kv.dtype).removeprefix("torch.") not in SOURCE_DTYPES:
        raise Fp8CacheError(f"kv: dtype must be float32, float16 or bfloat16, got {kv.dtype}")
    if kv.dim() != 3 or kv.shape[2] != fmt.head_dim:
        raise Fp8CacheError(
            f"kv: expected shape [pages, page_size, {fmt.head_dim}] ({fmt.e4m3_dims} quantized "
            f"+ {fmt.rope_dims} rope values for format={fmt.name!r}), got {tuple(kv.shape)}"
        )


def tensor_scale(kv: torch.Tensor) -> torch.Tensor:
    """The float32 scale quantize_fp8 picks for a "fp8_tensor" cache of kv when given none: a 0-d
    tensor on kv's device, max(amax / 448, 2^-126) over kv's finite values (an all-zero or
    all-non-finite kv gets 2^-126). Pass it on as the kernel's k_scale."""
    import torch

    _check_source(kv, FORMATS["fp8_tensor"])
    values = kv.float()
    amax = torch.where(torch.isfinite(values), values.abs(), 0.0).amax()
    return _float32_scales(amax)


def _given_scale(scale, device) -> torch.Tensor:
    """A k_scale (a Python number or a one-element tensor) as a 0-d float32 tensor on `device`,
    refused unless finite and > 0 once rounded to float32 (a NaN, Inf or 0 scale would turn every
    value into NaN or Inf)."""
    import torch

    if isinstance(scale, torch.Tensor):
        if scale.numel() != 1 or not scale.dtype.is_floating_point:
            raise Fp8CacheError(
                f"scale: expected one float value, got {scale.dtype} {tuple(scale.shape)}"
            )
        value = scale.detach().reshape(()).to(device=device, dtype=torch.float32)
    elif isinstance(scale, (int, float)) and not isinstance(scale, bool):
        value = torch.tensor(float(scale), dtype=torch.float32, device=device)
    else:
        raise Fp8CacheError(f"scale: expected a float or a tensor, got {type(scale).__name__}")
    if not bool(torch.isfinite(value)) or not bool(value > 0):
        raise Fp8CacheError(f"scale: must be finite and > 0 as a float32, got {value.item()}")
    return value


def _quantize_tensor(kv: torch.Tensor, fmt: KvFormat, scale) -> torch.Tensor:
    import torch

    scale = tensor_scale(kv) if scale is None else _given_scale(scale, kv.device)
    values = kv.float()
    finite = torch.isfinite(values)
    scaled = torch.clamp(_divide(values, scale.expand_as(values)), -E4M3_MAX, E4M3_MAX)
    scaled = torch.where(finite, scaled, float("nan"))
    return scaled.to(torch.float8_e4m3fn).view(torch.uint8)


def quantize_fp8(kv: torch.Tensor, format: str = "fp8", scale=None) -> torch.Tensor:
    """An fp8 cache of `format` (kgen.mla.kv_format) from a bf16 / fp16 / fp32 cache
    [pages, page_size, head_dim], on kv's device (CPU or CUDA): uint8 [pages, page_size,
    token_bytes] ("fp8": 656, "v41_fp8": 528, "fp8_tensor": 576). For "v4_fp8" (584) it is a view
    of [pages, page_bytes] (pages padded to a multiple of 576 bytes): its page stride is the
    padded page, and each page holds its payload rows, then its scale rows (FlashMLA's MODEL1
    layout). `scale` is "fp8_tensor"'s k_scale (None: tensor_scale(kv), which the caller then
    passes to the kernel and to dequantize_fp8); the other formats keep their scales in the
    cache and take none. See the module docstring for the scales."""
    import torch

    fmt = _fp8_format(format)
    _check_source(kv, fmt)
    if fmt.tensor_scale:
        return _quantize_tensor(kv, fmt, scale)
    if scale is not None:
        raise Fp8CacheError(
            f"scale: format={format!r} keeps its scales in the cache, picked from each group's "
            "values; only a format with one scale for the tensor ('fp8_tensor') takes one"
        )
    pages, page_size, _ = kv.shape
    groups = fmt.scale_groups
    values = kv[..., : fmt.e4m3_dims].float().reshape(pages, page_size, groups, fmt.group)
    finite = torch.isfinite(values)
    amax = torch.where(finite, values.abs(), 0.0).amax(dim=-1)  # [pages, page_size, groups]
    scales, scale_bytes = _scales(amax, fmt)
    scaled = torch.clamp(_divide(values, scales.unsqueeze(-1)), -E4M3_MAX, E4M3_MAX)
    scaled = torch.where(finite, scaled, float("nan"))
    codes = scaled.to(torch.float8_e4m3fn).view(torch.uint8).reshape(pages, page_size, -1)
    rope = kv[..., fmt.e4m3_dims :].to(torch.bfloat16).contiguous().view(torch.uint8)
    scale_bytes = scale_bytes.reshape(pages, page_size, -1)
    if fmt.scales_at == "token":
        return torch.cat((codes, scale_bytes, rope), dim=-1)
    page_bytes = fmt.page_bytes(page_size)
    raw = torch.zeros(pages, page_bytes, dtype=torch.uint8, device=kv.device)
    rows_end = fmt.scale_row_offset(page_size)
    raw[:, :rows_end] = torch.cat((codes, rope), dim=-1).reshape(pages, rows_end)
    scale_rows = raw[:, rows_end : rows_end + page_size * fmt.scale_row_bytes]
    scale_rows.view(pages, page_size, fmt.scale_row_bytes)[..., : scale_bytes.shape[-1]] = (
        scale_bytes
    )
    return raw[:, : page_size * fmt.token_bytes].view(pages, page_size, fmt.token_bytes)


def page_view(cache: torch.Tensor, fmt: KvFormat) -> torch.Tensor:
    """uint8 [pages, page_size x token_bytes]: the bytes of each page of a "page"-scaled cache
    tensor (whatever its page stride)."""
    import torch

    pages, page_size, width = cache.shape
    if cache.stride(2) != 1 or cache.stride(1) != width or cache.stride(0) < page_size * width:
        raise Fp8CacheError(
            f"cache: a {fmt.name} cache is [pages, page_size, {width}] with token stride {width} "
            f"and each page's {page_size * width} bytes together (page stride at least that), "
            f"got strides {tuple(cache.stride())}"
        )
    return torch.as_strided(cache, (pages, page_size * width), (cache.stride(0), 1))


def decode_ue8m0(raw: torch.Tensor) -> torch.Tensor:
    """UE8M0 bytes -> float32: 2^(byte - 127) (byte 0: 2^-127, a subnormal), 255: NaN."""
    import torch

    exponent = raw.to(torch.int32)
    value = torch.ldexp(torch.ones_like(exponent, dtype=torch.float64), exponent - 127)
    return torch.where(exponent == 255, float("nan"), value).to(torch.float32)


def dequantize_fp8(cache: torch.Tensor, format: str | None = None, scale=None) -> torch.Tensor:
    """float32 [pages, page_size, head_dim]: the values an fp8 cache holds (e4m3 x scale, rope).
    `format` defaults to the fp8 format whose tokens are cache.shape[2] bytes wide; `scale` is
    the k_scale of a "fp8_tensor" cache (required there, refused elsewhere)."""
    import torch

    if not isinstance(cache, torch.Tensor):
        raise Fp8CacheError(f"cache: expected a torch.Tensor, got {type(cache).__name__}")
    fmt = _fp8_format(format) if format is not None else None
    if cache.dim() == 3 and fmt is None:
        fmt = fp8_format_of_width(cache.shape[2])
    if cache.dtype != torch.uint8 or cache.dim() != 3 or fmt is None:
        widths = sorted(f.token_bytes for f in FORMATS.values() if f.quantized)
        raise Fp8CacheError(
            f"cache: expected uint8 [pages, page_size, token_bytes] with token_bytes one of "
            f"{widths}, got {cache.dtype} {tuple(cache.shape)}"
        )
    if cache.shape[2] != fmt.token_bytes:
        raise Fp8CacheError(
            f"cache: format {fmt.name!r} has {fmt.token_bytes} bytes a token, got shape "
            f"{tuple(cache.shape)}"
        )
    if fmt.tensor_scale != (scale is not None):
        raise Fp8CacheError(
            f"scale: format {fmt.name!r} "
            + ("has one scale for the tensor, outside the cache: pass it as scale"
               if fmt.tensor_scale else "keeps its scales in the cache and takes no scale")
        )  # fmt: skip
    pages, page_size, _ = cache.shape
    if fmt.tensor_scale:
        values = cache.contiguous().view(torch.float8_e4m3fn).float()
        return values * _given_scale(scale, cache.device)
    if fmt.scales_at == "token":
        rows = cache.contiguous()
        scale_bytes = rows[..., fmt.scales_offset : fmt.rope_offset]
    else:
        raw = page_view(cache, fmt)
        end = fmt.scale_row_offset(page_size)
        rows = raw[:, :end].reshape(pages, page_size, fmt.row_bytes)
        scale_rows = raw[:, end:].reshape(pages, page_size, fmt.scale_row_bytes)
        scale_bytes = scale_rows[..., : fmt.scale_groups]
    values = rows[..., : fmt.e4m3_dims].contiguous().view(torch.float8_e4m3fn).float()
    if fmt.scale == "float32":
        scales = scale_bytes.contiguous().view(torch.float32)
    else:
        scales = decode_ue8m0(scale_bytes)
    groups = values.reshape(pages, page_size, fmt.scale_groups, fmt.group) * scales.unsqueeze(-1)
    rope = rows[..., fmt.rope_offset :].contiguous().view(torch.bfloat16).float()
    return torch.cat((groups.reshape(pages, page_size, fmt.e4m3_dims), rope), dim=-1)
