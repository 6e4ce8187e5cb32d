"""What a sparse MLA call takes and writes, as Operands (kgen.mla.operands: the one checker and
the runner read them), and the check of every slot in the index lists, which reads them back (a
device sync) and runs with validate=True. Without it a slot out of range gives its query row NaN,
and nothing outside the given tensors is read.

One description per spec: the V3.2 op (a 576-wide kv_format) takes q, kv_cache and indices; the
V4 op (a 512-wide kv_format) also takes each list's per-row lengths and an attention sink
(optional), and where its spec has a second cache, that cache and its index list. An input the
plan's op does not take is described as absent, so passing one is an error naming it.
"""

from __future__ import annotations

import torch

from kgen.mla.operands import InputError, Limit, Operand, attention_outputs, check_operands
from kgen.mla.sparse.spec import SparseSpec

MAX_TOKENS = 65535  # query tokens (B x T) per launch: the grid's z dimension
ROW_ALIGN = 16  # bytes: q and cache rows are read up to 16 bytes at a time
# The kernel numbers a second cache's slot s as main slots + s, in int32: each cache keeps half
JOINT_SLOTS = (2**31 - 1) // 2
# The inputs run passes after q, kv_cache and indices, in order (the V4 op's)
V4_INPUTS = ("topk_length", "attn_sink", "extra_kv_cache", "extra_indices", "extra_topk_length")


def cache_operand(
    spec: SparseSpec, name: str, pages: str, page_size: int, prefix: str = ""
) -> Operand:
    """A cache of spec.kv_format with `page_size` tokens a page: an fp8 one (uint8 [pages,
    page_size, token_bytes]) or a 16-bit one in q's dtype ([pages, page_size, head_dim]), rows
    and base aligned to 16 bytes. A format with its scales after each page's tokens (v4_fp8) is
    read page by page: a page's bytes together, pages padded (kgen.mla.quantize_fp8 makes such a
    view); its row step is the payload row's (fixed_fields), not the tensor's row stride."""
    fmt = spec.format
    if fmt.quantized:
        dtype, width = "uint8", fmt.token_bytes
        why = f"an fp8 cache (kgen.mla.quantize_fp8(..., format={fmt.name!r}))"
    else:
        dtype, width, why = spec.dtype, spec.head_dim, f"a {spec.dtype} cache"
    paged = fmt.scales_at == "page"
    return Operand(
        name,
        dtype,
        (pages, page_size, width),
        f"{pages}, page_size, token",
        access="pages" if paged else "rows",
        align=ROW_ALIGN,
        why_dtype=f"{why} for kv_format={fmt.name!r}",
        field=f"{prefix}kv",
        strides=(f"{prefix}kv_sp",) if paged else (f"{prefix}kv_sp", f"{prefix}kv_sr"),
        stride_unit="bytes",
        count=(f"{prefix}num_slots", page_size),
        count_most=JOINT_SLOTS if spec.has_extra else 0,
        count_what="slots (pages x page_size): two caches' slots are numbered together in int32",
        page_stride=fmt.page_bytes(page_size) if paged else 0,
    )


def lengths_operand(spec: SparseSpec, name: str, field: str, prefix: str = "") -> Operand:
    """int32 [B] (per sequence) or [B, T] (per query row): how many leading entries of each row
    of a list count."""
    return Operand(
        name,
        "int32",
        ("B", spec.q_len),
        "B per sequence, or B, T per query row",
        access="strided",
        field=field,
        strides=(f"{prefix}len_sb", f"{prefix}len_st"),
        optional=True,
        min_dims=1,
    )


def not_taken(name: str, why: str) -> Operand:
    """An input this call does not take (it must be None)."""
    return Operand(name, "int32", (1,), "-", absent=why)


def operands(spec: SparseSpec) -> tuple[tuple[Operand, ...], tuple[Operand, ...]]:
    """(inputs, outputs) of a call of `spec`: q, kv_cache, indices, topk_length, attn_sink,
    extra_kv_cache, extra_indices, extra_topk_length; out, lse."""
    t, h, d = spec.q_len, spec.heads, spec.head_dim
    inputs = (
        Operand(
            "q",
            spec.dtype,
            ("B", t, h, d),
            f"B, q_len, heads, {d}",
            align=ROW_ALIGN,
            limits=(Limit("query tokens (B x T)", lambda q: q.shape[0] * q.shape[1], MAX_TOKENS),),
            field="q",
            strides=("q_sb", "q_st", "q_sh"),
        ),
        cache_operand(spec, "kv_cache", "num_pages", spec.page_size),
        Operand(
            "indices",
            "int32",
            ("B", t, spec.topk),
            "B, T, topk",
            access="last",
            field="indices",
            strides=("idx_sb", "idx_st"),
        ),
        *v4_operands(spec),
    )
    outputs = attention_outputs(spec, "B, T, heads, 512", align=4)
    return inputs, outputs


def v4_operands(spec: SparseSpec) -> tuple[Operand, ...]:
    """The V4 op's inputs after indices, in V4_INPUTS' order: absent from the V3.2 op, and the
    second cache's absent where the spec has none."""
    if not spec.v4_op:
        why = (
            f"the V3.2 op ({spec.kv_format!r}, 576 wide) takes no lengths, sink or second "
            "cache: they are the V4 op's, a 512-wide kv_format"
        )
        return tuple(not_taken(name, why) for name in V4_INPUTS)
    lengths = lengths_operand(spec, "topk_length", "topk_len")
    sink = Operand(
        "attn_sink", "float32", (spec.heads,), "heads", access="whole", field="sink", optional=True
    )
    if not spec.has_extra:
        why = "the plan has no second cache (extra_page_size=0)"
        extra = ("extra_kv_cache", "extra_indices", "extra_topk_length")
        return (lengths, sink, *(not_taken(name, why) for name in extra))
    return (
        lengths,
        sink,
        cache_operand(spec, "extra_kv_cache", "extra_pages", spec.extra_page_size, "extra_"),
        Operand(
            "extra_indices",
            "int32",
            ("B", spec.q_len, spec.extra_topk),
            "B, T, extra_topk",
            access="last",
            field="extra_indices",
            strides=("extra_idx_sb", "extra_idx_st"),
        ),
        lengths_operand(spec, "extra_topk_length", "extra_len", "extra_"),
    )


def fixed_fields(spec: SparseSpec) -> dict[str, int]:
    """Parameter fields the plan fixes: the list lengths' count (topk, extra_topk) and, for a
    format read page by page, each cache's row step (its payload row)."""
    fields = {"topk": spec.topk}
    if spec.v4_op:
        fields["extra_topk"] = spec.extra_topk
    if spec.format.scales_at == "page":
        fields["kv_sr"] = spec.format.row_bytes
        if spec.has_extra:
            fields["extra_kv_sr"] = spec.format.row_bytes
    return fields


def check_inputs(
    spec: SparseSpec,
    q,
    kv_cache,
    indices,
    topk_length=None,
    attn_sink=None,
    extra_kv_cache=None,
    extra_indices=None,
    extra_topk_length=None,
    *,
    device=None,
    batch: int | None = None,
) -> None:
    """Every cheap check of a call's inputs (all on `device`, else on q's CUDA device; of the
    planned `batch` where given); InputError naming the first bad tensor."""
    inputs, _ = operands(spec)
    tensors = (
        q,
        kv_cache,
        indices,
        topk_length,
        attn_sink,
        extra_kv_cache,
        extra_indices,
        extra_topk_length,
    )
    check_operands(inputs, tensors, device, {} if batch is None else {"B": batch})


def validate_indices(kv_cache, indices, name="indices", cache="kv_cache", length=None) -> None:
    """InputError naming the first slot outside [-1, pages x page_size) (reads indices back);
    with `length` (int32 [B] or [B, T]) only the first length entries of each row count."""
    num_slots = kv_cache.shape[0] * kv_cache.shape[1]
    listed = indices.cpu()
    bad = (listed < -1) | (listed >= num_slots)
    if length is not None:
        n = length.cpu().long()
        n = n[:, None, None] if n.dim() == 1 else n[:, :, None]
        bad &= torch.arange(listed.shape[2]) < n
    bad = bad.nonzero()
    if len(bad):
        b, t, k = (int(i) for i in bad[0])
        raise InputError(
            f"{name}[{b}, {t}, {k}]={int(listed[b, t, k])}: slots must be -1 (skip) or in "
            f"[0, {num_slots}) ({cache} has {kv_cache.shape[0]} pages x {kv_cache.shape[1]})"
        )
