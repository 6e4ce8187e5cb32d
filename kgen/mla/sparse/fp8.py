"""The fp8 latent cache of sparse MLA (FlashMLA's / DeepSeek-V3.2's token layout), made from a
16- or 32-bit cache, and read back.

One cached token is 656 bytes (uint8 [pages, page_size, 656]):

  bytes   0 - 511   the 512 latent values as float8 e4m3 (e4m3fn: max 448, no infinity)
  bytes 512 - 527   four float32 scales (little-endian): scale i for latent values 128i..128i+127
  bytes 528 - 655   the 64 rope values as bfloat16, not quantized

A latent value is e4m3 x its group's scale. quantize_fp8 picks scale = amax / 448 over the finite
values of the group (so the largest lands on e4m3's 448), floored at the smallest normal float32
(SCALE_FLOOR) so an all-zero group stores zeros with a finite, nonzero scale. Rounding is to
nearest even. Non-finite latent values become NaN (e4m3fn has no infinity) without touching the
rest of their group; rope values keep theirs (bfloat16 has Inf and NaN).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where a cache is made or read: building kernels needs none
    import torch

LATENT_DIM = 512
ROPE_DIM = 64
GROUP = 128  # latent values per scale
GROUPS = LATENT_DIM // GROUP
SCALES_OFFSET = LATENT_DIM  # byte offsets inside a token
ROPE_OFFSET = SCALES_OFFSET + 4 * GROUPS
TOKEN_BYTES = ROPE_OFFSET + 2 * ROPE_DIM  # 656
E4M3_MAX = 448.0
SCALE_FLOOR = 2.0**-126  # the smallest normal float32 (torch.finfo(torch.float32).tiny)
SOURCE_DTYPES = ("float32", "float16", "bfloat16")  # torch dtype names quantize_fp8 takes


class Fp8CacheError(ValueError):
    """A tensor is not a cache quantize_fp8 takes, or not one it makes."""


def quantize_fp8(kv: torch.Tensor) -> torch.Tensor:
    """uint8 [pages, page_size, 656] from a bf16 / fp16 / fp32 cache [pages, page_size, 576],
    on kv's device (CPU or CUDA). See the module docstring for the layout and the scales."""
    import torch

    if not isinstance(kv, torch.Tensor):
        raise Fp8CacheError(f"kv: expected a torch.Tensor, got {type(kv).__name__}")
    if str(kv.dtype).removeprefix("torch.") not in SOURCE_DTYPES:
        raise Fp8CacheError(f"kv: dtype must be float32, float16 or bfloat16, got {kv.dtype}")
    if kv.dim() != 3 or kv.shape[2] != LATENT_DIM + ROPE_DIM:
        raise Fp8CacheError(
            f"kv: expected shape [pages, page_size, {LATENT_DIM + ROPE_DIM}] (512 latent + 64 "
            f"rope), got {tuple(kv.shape)}"
        )
    pages, page_size, _ = kv.shape
    latent = kv[..., :LATENT_DIM].float().reshape(pages, page_size, GROUPS, GROUP)
    finite = torch.isfinite(latent)
    amax = torch.where(finite, latent.abs(), 0.0).amax(dim=-1)  # [pages, page_size, GROUPS]
    scales = torch.clamp(amax / E4M3_MAX, min=SCALE_FLOOR)
    scaled = torch.clamp(latent / scales.unsqueeze(-1), -E4M3_MAX, E4M3_MAX)
    scaled = torch.where(finite, scaled, float("nan"))
    values = scaled.to(torch.float8_e4m3fn).view(torch.uint8).reshape(pages, page_size, LATENT_DIM)
    rope = kv[..., LATENT_DIM:].to(torch.bfloat16).contiguous()
    return torch.cat(
        (
            values,
            scales.contiguous().view(torch.uint8),
            rope.view(torch.uint8).reshape(pages, page_size, 2 * ROPE_DIM),
        ),
        dim=-1,
    )


def dequantize_fp8(cache: torch.Tensor) -> torch.Tensor:
    """float32 [pages, page_size, 576]: the values an fp8 cache holds (e4m3 x scale, rope)."""
    import torch

    if not isinstance(cache, torch.Tensor):
        raise Fp8CacheError(f"cache: expected a torch.Tensor, got {type(cache).__name__}")
    if cache.dtype != torch.uint8 or cache.dim() != 3 or cache.shape[2] != TOKEN_BYTES:
        raise Fp8CacheError(
            f"cache: expected uint8 [pages, page_size, {TOKEN_BYTES}], got {cache.dtype} "
            f"{tuple(cache.shape)}"
        )
    cache = cache.contiguous()
    pages, page_size, _ = cache.shape
    values = cache[..., :LATENT_DIM].contiguous().view(torch.float8_e4m3fn).float()
    scales = cache[..., SCALES_OFFSET:ROPE_OFFSET].contiguous().view(torch.float32)
    latent = values.reshape(pages, page_size, GROUPS, GROUP) * scales.unsqueeze(-1)
    rope = cache[..., ROPE_OFFSET:].contiguous().view(torch.bfloat16).float()
    return torch.cat((latent.reshape(pages, page_size, LATENT_DIM), rope), dim=-1)
