"""Host-side checks of the tensors a sparse MLA kernel is called with.

Cheap checks (shape, dtype, device, strides, alignment) always run and raise InputError naming
the tensor; the check of every slot in `indices` reads them back (a device sync) and runs with
validate=True. Without it a slot out of range gives its query row NaN, and nothing outside the
given tensors is read.
"""

from __future__ import annotations

import torch

from kgen.mla.inputs import InputError, check_output, check_tensor, check_vector_rows
from kgen.mla.sparse.spec import SparseSpec

MAX_TOKENS = 65535  # query tokens (B x T) per launch: the grid's z dimension
ROW_ALIGN = 16  # bytes: cache rows are gathered up to 16 bytes at a time


def _fail(name: str, expected: str, got: str) -> None:
    raise InputError(f"{name}: expected {expected}, got {got}")


def check_cache(
    spec: SparseSpec, kv_cache, device: torch.device, name: str = "kv_cache", page_size=None
) -> None:
    """A cache of spec.kv_format with `page_size` tokens a page (the spec's): an fp8 one (uint8
    [pages, page_size, token_bytes]) or a 16-bit one in q's dtype ([pages, page_size,
    head_dim]), rows and base aligned to 16 bytes. A format with scales per page is a view whose
    page stride (at least page_size x token_bytes, a multiple of 16) is the padded page."""
    fmt = spec.format
    page_size = spec.page_size if page_size is None else page_size
    if fmt.quantized:
        dtype, width = torch.uint8, fmt.token_bytes
        what = f"an fp8 cache (kgen.mla.quantize_fp8(..., format='{fmt.name}'))"
    else:
        dtype, width, what = spec.torch_dtype, spec.head_dim, f"a {spec.dtype} cache"
    if isinstance(kv_cache, torch.Tensor) and kv_cache.dtype != dtype:
        _fail(name, f"dtype {dtype}: {what} for kv_format='{spec.kv_format}'", str(kv_cache.dtype))
    check_tensor(name, kv_cache, device, dtype, 3)
    if tuple(kv_cache.shape[1:]) != (page_size, width):
        _fail(name, f"shape [num_pages, {page_size}, {width}]", f"{tuple(kv_cache.shape)}")
    if fmt.scales_at != "page":
        check_vector_rows(
            name, kv_cache, ROW_ALIGN // kv_cache.element_size(), kv_cache.element_size()
        )
        return
    page_stride = kv_cache.stride(0)
    if (
        kv_cache.stride(2) != 1
        or kv_cache.stride(1) != width
        or (kv_cache.shape[0] > 1 and (page_stride < page_size * width or page_stride % ROW_ALIGN))
    ):
        _fail(
            name,
            f"strides (page_bytes, {width}, 1) with page_bytes >= {page_size * width} and a "
            f"multiple of {ROW_ALIGN} ({fmt.name}: each page's bytes together, as "
            "kgen.mla.quantize_fp8 makes them)",
            f"strides {tuple(kv_cache.stride())}",
        )
    if kv_cache.data_ptr() % ROW_ALIGN:
        _fail(name, f"a base address aligned to {ROW_ALIGN} bytes", f"{kv_cache.data_ptr():#x}")


def check_lists(
    spec: SparseSpec,
    batch: int,
    device,
    *,
    topk_length=None,
    attn_sink=None,
    extra_kv_cache=None,
    extra_indices=None,
    extra_topk_length=None,
) -> None:
    """The V4 op's optional inputs: lengths (int32 [B] or [B, T]) of each list, the sink (float32
    [H]) and the second cache with its indices (int32 [B, T, extra_topk]), both given exactly
    where the spec has a second cache."""
    given = [
        n
        for n, t in (
            ("topk_length", topk_length),
            ("attn_sink", attn_sink),
            ("extra_kv_cache", extra_kv_cache),
            ("extra_indices", extra_indices),
            ("extra_topk_length", extra_topk_length),
        )
        if t is not None
    ]
    if given and not spec.v4_op:
        raise InputError(
            f"{given[0]}: the V3.2 op ({spec.kv_format!r}, 576 wide) takes no lengths, sink or "
            "second cache; they are the V4 op's (a 512-wide kv_format)"
        )
    for name, t in (("topk_length", topk_length), ("extra_topk_length", extra_topk_length)):
        if t is None:
            continue
        check_tensor(name, t, device, torch.int32, t.dim() if isinstance(t, torch.Tensor) else 1)
        if tuple(t.shape) not in ((batch,), (batch, spec.q_len)):
            _fail(
                name,
                f"shape [{batch}] or [{batch}, {spec.q_len}] (per sequence or per query row)",
                f"{tuple(t.shape)}",
            )
    if attn_sink is not None:
        check_tensor("attn_sink", attn_sink, device, torch.float32, 1)
        if tuple(attn_sink.shape) != (spec.heads,) or attn_sink.stride(0) != 1:
            _fail(
                "attn_sink",
                f"a contiguous tensor of shape [{spec.heads}] (one per head)",
                f"shape {tuple(attn_sink.shape)}, strides {tuple(attn_sink.stride())}",
            )
    for name, t in (("extra_kv_cache", extra_kv_cache), ("extra_indices", extra_indices)):
        if spec.has_extra and t is None:
            _fail(name, "a tensor: the plan has a second cache", "None")
        if not spec.has_extra and t is not None:
            _fail(name, "None: the plan has no second cache", "a tensor")
    if extra_topk_length is not None and not spec.has_extra:
        _fail("extra_topk_length", "None: the plan has no second cache", "a tensor")
    if not spec.has_extra:
        return
    check_cache(spec, extra_kv_cache, device, "extra_kv_cache", spec.extra_page_size)
    check_tensor("extra_indices", extra_indices, device, torch.int32, 3)
    if tuple(extra_indices.shape) != (batch, spec.q_len, spec.extra_topk):
        _fail(
            "extra_indices",
            f"shape [{batch}, {spec.q_len}, {spec.extra_topk}] (B, T, extra_topk)",
            f"{tuple(extra_indices.shape)}",
        )
    if spec.extra_topk > 1 and extra_indices.stride(2) != 1:
        _fail(
            "extra_indices",
            "a contiguous last dimension",
            f"strides {tuple(extra_indices.stride())}",
        )


def check_inputs(spec: SparseSpec, q, kv_cache, indices, device=None, batch: int | None = None):
    """Every cheap check of a call's inputs (all on `device`, else on q's CUDA device; of the
    planned `batch` where given); InputError naming the first bad tensor."""
    check_tensor("q", q, device, spec.torch_dtype, 4)
    device = q.device
    b, q_len, heads, dim = q.shape
    if (q_len, heads, dim) != (spec.q_len, spec.heads, spec.head_dim):
        _fail("q", f"shape [B, {spec.q_len}, {spec.heads}, {spec.head_dim}]", f"{tuple(q.shape)}")
    if batch is not None and b != batch:
        _fail("q", f"batch {batch} (the plan's)", f"shape {tuple(q.shape)}")
    if b * q_len > MAX_TOKENS:
        _fail("q", f"at most {MAX_TOKENS} query tokens (B x T)", f"{b} x {q_len}")
    check_vector_rows("q", q, 8, spec.elem_bytes)
    check_cache(spec, kv_cache, device)
    check_tensor("indices", indices, device, torch.int32, 3)
    if tuple(indices.shape) != (b, spec.q_len, spec.topk):
        _fail(
            "indices",
            f"shape [{b}, {spec.q_len}, {spec.topk}] (B, T, topk)",
            f"{tuple(indices.shape)}",
        )
    if spec.topk > 1 and indices.stride(2) != 1:
        _fail("indices", "a contiguous last dimension", f"strides {tuple(indices.stride())}")


def check_outputs(spec: SparseSpec, out, lse, batch: int, device: torch.device) -> None:
    shape = (batch, spec.q_len, spec.heads)
    check_output(
        "out", out, (*shape, spec.latent_dim), spec.torch_dtype, device, 2, spec.elem_bytes
    )
    check_output("lse", lse, shape, torch.float32, device, 1, 4)


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
