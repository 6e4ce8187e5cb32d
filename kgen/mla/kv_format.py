"""The cache formats MLA kernels read, as data: one row per format. The quantizers
(kgen.mla.fp8), the input checks and the kernels' gather and dequantization code
(templates/mla_sparse/gather.cuh, through kgen.mla.sparse.program) are all derived from a row, so
a new format is a new row, not new code.

A cached token is `head_dim` values (q.K runs over all of them; V is the first OUT_DIM). Of
those, the first `e4m3_dims` are float8 e4m3 (e4m3fn: max 448, no infinity), in groups of `group`
values that share one scale; the rest, the rope part, are bfloat16 and unscaled. A scale is a
float32 (`scale="float32"`, the value itself) or a UE8M0 byte (`scale="ue8m0"`, the power of two
2^(byte - 127): what FlashMLA's MODEL1 and FlashInfer's V4.1 caches hold). Scales sit

  - "token": inline, right after the token's e4m3 values (the rope part, if any, follows them);
  - "page": after the page's payload: a page of P tokens holds P payload rows (e4m3 values then
    rope), then P scale rows of `scale_row_bytes` (the scales, then padding), and the page is
    padded to a multiple of `page_align` bytes;
  - "tensor": outside the cache: one float32 for the whole tensor (`group=0`), passed beside it
    (`k_scale`, as vLLM and SGLang keep it; the same scale serves K and V), so a token's row is
    its e4m3 values alone.

A 16-bit format (`e4m3_dims=0`) is the unquantized cache: `head_dim` values a token in q's
dtype, no scales.

The rows (bytes a token; token_bytes):
  fp8      DeepSeek-V3.2 (FlashMLA "V32_FP8Sparse"), 656: 512 e4m3 | 4 float32 scales (128 values
           each) | 64 bf16 rope
  bf16     the V3.2 op's 16-bit cache, 576 values
  v4_fp8   DeepSeek-V4 (FlashMLA "MODEL1_FP8Sparse"), 584: payload 448 e4m3 | 64 bf16 rope (576
           bytes), scale row 7 UE8M0 (64 values each) | 1 pad byte, per page, pages padded to a
           multiple of 576 bytes
  v4_bf16  the V4 op's 16-bit cache, 512 values
  v41_fp8  DeepSeek-V4.1 (FlashInfer's "ue8m0_g32"; FlashMLA's V41), 528: 512 e4m3 (rope
           included) | 16 UE8M0 scales (32 values each)
  fp8_tensor  vLLM's and SGLang's kv_cache_dtype="fp8" for MLA, 576: 576 e4m3 (rope included),
           one float32 scale for the tensor
"""

from __future__ import annotations

from dataclasses import dataclass

OUT_DIM = 512  # V: the first 512 values of a cached token, in every format
E4M3_MAX = 448.0
SCALE_KINDS = ("float32", "ue8m0", "none")
SCALES_AT = ("token", "page", "tensor", "none")


@dataclass(frozen=True)
class KvFormat:
    name: str
    head_dim: int  # values a token: q's width, K's
    e4m3_dims: int  # the leading values stored as e4m3 (0: a 16-bit cache)
    group: int = 0  # e4m3 values per scale (0: one scale for the tensor)
    scale: str = "none"  # SCALE_KINDS
    scales_at: str = "none"  # SCALES_AT
    scale_row_bytes: int = 0  # "page": bytes of one token's scale row (scales, then padding)
    page_align: int = 1  # "page": a page's bytes are padded to a multiple of this
    what: str = ""

    @property
    def quantized(self) -> bool:
        return self.e4m3_dims > 0

    @property
    def rope_dims(self) -> int:
        """The unscaled bfloat16 values after the e4m3 ones (fp8 formats)."""
        return self.head_dim - self.e4m3_dims if self.quantized else 0

    @property
    def tensor_scale(self) -> bool:
        """One float32 scale for the whole cache, passed beside it (`k_scale`), none in it."""
        return self.scales_at == "tensor"

    @property
    def bare_e4m3(self) -> bool:
        """A token's bytes are its values alone, all e4m3 (one tensor scale, no rope part): what
        the dense tensor-core path reads as MMA fragments, with no 16-bit tile
        (templates/mla/mma/fp8_tiles.cuh)."""
        return self.tensor_scale and self.e4m3_dims == self.head_dim

    @property
    def scale_groups(self) -> int:
        """Scales a token has in the cache (a "tensor" scale is not in it)."""
        return self.e4m3_dims // self.group if self.quantized and self.group else 0

    @property
    def scale_bytes(self) -> int:
        """Bytes of one scale."""
        return {"float32": 4, "ue8m0": 1, "none": 0}[self.scale]

    @property
    def inline_scale_bytes(self) -> int:
        return self.scale_groups * self.scale_bytes if self.scales_at == "token" else 0

    @property
    def scales_offset(self) -> int:
        """ "token": where a token's scales start, in its row."""
        return self.e4m3_dims

    @property
    def rope_offset(self) -> int:
        """Where a token's rope values start, in its (payload) row."""
        return self.e4m3_dims + self.inline_scale_bytes

    @property
    def row_bytes(self) -> int:
        """Bytes of a token's row ("page": its payload row), for a 16-bit format per 2-byte
        element."""
        if not self.quantized:
            return 2 * self.head_dim
        return self.rope_offset + 2 * self.rope_dims

    @property
    def token_bytes(self) -> int:
        """Bytes a token takes, its scale row included (a page may add padding)."""
        return self.row_bytes + (self.scale_row_bytes if self.scales_at == "page" else 0)

    def page_bytes(self, page_size: int) -> int:
        """Bytes of one page of `page_size` tokens, padding included."""
        raw = page_size * self.token_bytes
        return -(-raw // self.page_align) * self.page_align

    def scale_row_offset(self, page_size: int) -> int:
        """ "page": where the scale rows of a page start."""
        return page_size * self.row_bytes


FORMATS = {
    f.name: f
    for f in (
        KvFormat(
            "fp8", 576, 512, 128, "float32", "token",
            what="DeepSeek-V3.2: 512 e4m3, 4 float32 scales, 64 bf16 rope (656 bytes)",
        ),
        KvFormat("bf16", 576, 0, what="the V3.2 op's 16-bit cache (576 values)"),
        KvFormat(
            "v4_fp8", 512, 448, 64, "ue8m0", "page", scale_row_bytes=8, page_align=576,
            what="DeepSeek-V4: 448 e4m3, 64 bf16 rope, 7 UE8M0 scales per page row (584 bytes)",
        ),
        KvFormat("v4_bf16", 512, 0, what="the V4 op's 16-bit cache (512 values)"),
        KvFormat(
            "v41_fp8", 512, 512, 32, "ue8m0", "token",
            what="DeepSeek-V4.1: 512 e4m3, 16 UE8M0 scales (528 bytes)",
        ),
        KvFormat(
            "fp8_tensor", 576, 576, 0, "float32", "tensor",
            what="vLLM/SGLang kv_cache_dtype='fp8': 576 e4m3, one float32 k_scale (576 bytes)",
        ),
    )
}  # fmt: skip
KV_FORMATS = tuple(FORMATS)
FP8_FORMATS = tuple(name for name, f in FORMATS.items() if f.quantized)


def kv_format(name: str) -> KvFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"kv_format={name!r}: must be one of {KV_FORMATS}") from None


def fp8_format_of_width(width: int) -> KvFormat | None:
    """The fp8 format whose tokens are `width` bytes (the last dimension of its cache tensor)."""
    found = [f for f in FORMATS.values() if f.quantized and f.token_bytes == width]
    return found[0] if found else None


def sixteen_bit_format_of_dim(head_dim: int) -> KvFormat | None:
    found = [f for f in FORMATS.values() if not f.quantized and f.head_dim == head_dim]
    return found[0] if found else None


def _check_table() -> None:
    widths = [f.token_bytes for f in FORMATS.values() if f.quantized]
    assert len(widths) == len(set(widths)), "fp8 formats are told apart by their token width"
    for f in FORMATS.values():
        assert f.scale in SCALE_KINDS and f.scales_at in SCALES_AT, f.name
        assert f.head_dim >= OUT_DIM, f.name
        assert (f.group == 0) == (f.tensor_scale or not f.quantized), f.name
        if f.tensor_scale:
            assert f.scale == "float32", f.name
        if f.quantized:
            assert f.e4m3_dims % (f.group or f.e4m3_dims) == 0 and f.e4m3_dims % 16 == 0, f.name
            assert f.rope_dims % 16 == 0 and f.row_bytes % 16 == 0, f.name
        if f.scales_at == "page":
            assert f.scale_row_bytes >= f.scale_groups * f.scale_bytes, f.name


_check_table()
