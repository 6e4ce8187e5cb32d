"""What a dense MLA call takes and writes, as Operands (kgen.mla.operands: the one checker and
the runner read them), the tree mask's own checks and packing, and the checks that read device
memory (validate=True: seq_lens, page ids, k_scale).
"""

from __future__ import annotations

import math

import torch

from kgen.mla.operands import (
    INT32_MAX,
    InputError,
    Limit,
    Operand,
    attention_outputs,
    check_operands,
    fail,
)
from kgen.mla.spec import Spec


def operands(spec: Spec, vec_width: int = 1) -> tuple[tuple[Operand, ...], tuple[Operand, ...]]:
    """(inputs, outputs) of a call of `spec`: q, kv_cache, block_table, seq_lens (and k_scale for
    an "fp8_tensor" cache); out, lse. Rows of q, a 16-bit cache and out are read vec_width
    elements at a time; an fp8 cache is uint8 [num_pages, page_size, token_bytes] (its format's
    row, kgen.mla.kv_format)."""
    t, h, d, ps = spec.q_len, spec.heads, spec.head_dim, spec.page_size
    row = vec_width * spec.elem_bytes
    fmt = spec.format
    if fmt is None:
        cache_dtype, width, why_cache = spec.dtype, d, ""
    else:  # strides of a uint8 cache: elements are bytes
        cache_dtype, width = "uint8", fmt.token_bytes
        why_cache = f"an fp8 cache for kv_format={fmt.name!r} (kgen.mla.quantize_fp8)"
    inputs = (
        Operand(
            "q",
            spec.dtype,
            ("B", t, h, d),
            "B, q_len, heads, latent+rope",
            align=row,
            field="q",
            strides=("q_sb", "q_st", "q_sh"),
        ),
        Operand(
            "kv_cache",
            cache_dtype,
            ("num_pages", ps, width),
            "num_pages, page_size, latent+rope" if fmt is None else "num_pages, page_size, token",
            align=row if fmt is None else FP8_ROW_ALIGN,
            why_dtype=why_cache,
            limits=(
                Limit("pages", lambda kv: kv.shape[0], INT32_MAX),
                # offsets inside a page are 32-bit
                Limit(
                    "elements in a page (row stride x page_size)",
                    lambda kv: kv.stride(1) * ps,
                    INT32_MAX,
                ),
            ),
            field="kv",
            strides=("kv_sp", "kv_sr"),
            count=("num_pages", 1),
        ),
        Operand(
            "block_table",
            "int32",
            ("B", "max_pages"),
            "B, max_pages",
            access="last",
            limits=(
                Limit(
                    "positions in a sequence (max_pages x page_size)",
                    lambda bt: bt.shape[1] * ps,
                    INT32_MAX,
                ),
            ),
            field="block_table",
            strides=("bt_sb",),
        ),
        Operand("seq_lens", "int32", ("B",), "B", access="last", field="seq_lens"),
        *scale_operands(spec),
    )
    outputs = attention_outputs(spec, "B, q_len, heads, latent", align=row)
    return inputs, outputs


FP8_ROW_ALIGN = 16  # an fp8 cache's rows are copied 16 bytes at a time (cp.async)


def scale_operands(spec: Spec) -> tuple[Operand, ...]:
    """k_scale, float32 [1] on the device (a 0-d scale, as engines keep it: .reshape(1)): the
    one scale of an "fp8_tensor" cache, serving K and V, read by the kernel at each launch (so a
    captured graph follows a new value). Every other cache takes none: described as absent, so
    passing one is refused by name. It follows seq_lens in a call's inputs."""
    fmt = spec.format
    if fmt is not None and fmt.tensor_scale:
        return (Operand("k_scale", "float32", (1,), "1", access="whole", field="k_scale"),)
    why = (
        f"a kv_format={spec.kv_format!r} cache carries no tensor scale: only "
        "kv_format='fp8_tensor' takes one"
    )
    return (Operand("k_scale", "float32", (1,), "-", absent=why),)


def check_inputs(
    spec: Spec,
    vec: int,
    q,
    kv_cache,
    block_table,
    seq_lens,
    mask,
    device=None,
    planned: tuple[int, int] | None = None,
    k_scale=None,
) -> None:
    """Every cheap check of a call's inputs (all on `device`, else on q's CUDA device, and of
    the `planned` (batch, max_pages) where given); InputError naming the first bad tensor."""
    inputs, _ = operands(spec, vec)
    fixed = {} if planned is None else {"B": planned[0], "max_pages": planned[1]}
    tensors = (q, kv_cache, block_table, seq_lens, k_scale)
    sizes = check_operands(inputs, tensors, device, fixed)
    check_mask(spec, mask, sizes["B"], q.device)


def check_mask(spec: Spec, mask, batch: int, device: torch.device) -> None:
    """For a tree spec a bool [B, T, T] / [T, T] or packed int64 [B, T] / [T] tensor, else None
    (or the spec's mask by name)."""
    if spec.mask != "tree":
        if mask is None or (isinstance(mask, str) and mask == spec.mask):
            return
        fail("mask", f"None (the kernel was built for mask='{spec.mask}')", _describe(mask))
    if not isinstance(mask, torch.Tensor):
        fail(
            "mask",
            "a tree mask: bool [B, T, T] or [T, T], or packed int64 [B, T] or [T]",
            _describe(mask),
        )
    t = spec.q_len
    if mask.device != device:
        fail("mask", f"a tensor on {device}", f"one on {mask.device}")
    if mask.dtype == torch.bool:
        if tuple(mask.shape) not in ((batch, t, t), (t, t)):
            fail("mask", f"bool shape [{batch}, {t}, {t}] or [{t}, {t}]", f"{tuple(mask.shape)}")
        return
    if mask.dtype == torch.int64:
        if tuple(mask.shape) not in ((batch, t), (t,)):
            fail("mask", f"packed int64 shape [{batch}, {t}] or [{t}]", f"{tuple(mask.shape)}")
        if not mask.is_contiguous():
            fail("mask", "a contiguous packed mask", f"strides {tuple(mask.stride())}")
        return
    fail("mask", "dtype bool (dense) or int64 (bit-packed rows)", str(mask.dtype))


def _describe(x) -> str:
    if isinstance(x, torch.Tensor):
        return f"a {x.dtype} tensor of shape {tuple(x.shape)}"
    return repr(x)


def pack_tree_mask(mask: torch.Tensor) -> torch.Tensor:
    """bool [..., T, T] -> int64 [..., T]: bit j of row t says whether draft t sees draft j."""
    t = mask.shape[-1]
    weights = torch.ones(1, dtype=torch.int64, device=mask.device) << torch.arange(
        t, device=mask.device, dtype=torch.int64
    )
    return (mask.to(torch.int64) * weights).sum(-1)


def validate_on_device(spec: Spec, kv_cache, block_table, seq_lens, k_scale=None) -> None:
    """The checks that read device memory (they synchronise): lengths, page ids and an
    "fp8_tensor" cache's k_scale, which must be finite and > 0 (as kgen.mla.quantize_fp8 makes
    it). Unchecked, the kernel multiplies every score and output of the call by it: a NaN or
    Inf k_scale makes that call's out and lse non-finite, a 0 one its out 0; nothing outside
    them is written."""
    if k_scale is not None:
        value = float(k_scale.detach().reshape(-1)[0].cpu())
        if not math.isfinite(value) or value <= 0:
            raise InputError(f"k_scale[0]={value}: must be finite and > 0 (the cache's scale)")
    lens = seq_lens.cpu()
    table = block_table.cpu()
    capacity = table.shape[1] * spec.page_size
    num_pages = kv_cache.shape[0]
    for b, length in enumerate(lens.tolist()):
        if length < spec.q_len:
            raise InputError(
                f"seq_lens[{b}]={length}: must be >= q_len={spec.q_len} (it counts "
                "the draft tokens)"
            )
        if length > capacity:
            raise InputError(
                f"seq_lens[{b}]={length}: block_table holds only {table.shape[1]} "
                f"pages x {spec.page_size} = {capacity} positions"
            )
        used = table[b, : -(-length // spec.page_size)]
        bad = ((used < 0) | (used >= num_pages)).nonzero()
        if len(bad):
            i = int(bad[0, 0])
            raise InputError(
                f"block_table[{b}, {i}]={int(used[i])}: page ids must be in "
                f"[0, {num_pages}) (kv_cache has {num_pages} pages)"
            )
