"""Host-side checks of the tensors a sparse MLA kernel is called with.

Cheap checks (shape, dtype, device, strides, alignment) always run and raise InputError naming
the tensor; the check of every slot in `indices` reads them back (a device sync) and runs with
validate=True. Without it a slot out of range gives its query row NaN, and nothing outside the
given tensors is read.
"""

from __future__ import annotations

import torch

from kgen.mla.inputs import InputError, check_output, check_tensor, check_vector_rows
from kgen.mla.sparse import fp8
from kgen.mla.sparse.spec import SparseSpec

MAX_TOKENS = 65535  # query tokens (B x T) per launch: the grid's z dimension
ROW_ALIGN = 16  # bytes: cache rows are gathered up to 16 bytes at a time


def _fail(name: str, expected: str, got: str) -> None:
    raise InputError(f"{name}: expected {expected}, got {got}")


def check_cache(spec: SparseSpec, kv_cache, device: torch.device) -> None:
    """An fp8 cache (uint8 [pages, page_size, 656]) or a 16-bit one in q's dtype
    ([pages, page_size, 576]), rows and base aligned to 16 bytes."""
    if spec.kv_format == "fp8":
        dtype, width, what = torch.uint8, fp8.TOKEN_BYTES, "an fp8 cache (kgen.mla.quantize_fp8)"
    else:
        dtype, width, what = spec.torch_dtype, spec.head_dim, f"a {spec.dtype} cache"
    if isinstance(kv_cache, torch.Tensor) and kv_cache.dtype != dtype:
        _fail(
            "kv_cache",
            f"dtype {dtype}: {what} for kv_format='{spec.kv_format}'",
            str(kv_cache.dtype),
        )
    check_tensor("kv_cache", kv_cache, device, dtype, 3)
    if tuple(kv_cache.shape[1:]) != (spec.page_size, width):
        _fail(
            "kv_cache", f"shape [num_pages, {spec.page_size}, {width}]", f"{tuple(kv_cache.shape)}"
        )
    check_vector_rows(
        "kv_cache", kv_cache, ROW_ALIGN // kv_cache.element_size(), kv_cache.element_size()
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


def validate_indices(kv_cache, indices) -> None:
    """InputError naming the first slot outside [-1, pages x page_size) (reads indices back)."""
    num_slots = kv_cache.shape[0] * kv_cache.shape[1]
    listed = indices.cpu()
    bad = ((listed < -1) | (listed >= num_slots)).nonzero()
    if len(bad):
        b, t, k = (int(i) for i in bad[0])
        raise InputError(
            f"indices[{b}, {t}, {k}]={int(listed[b, t, k])}: slots must be -1 (skip) or in "
            f"[0, {num_slots}) (kv_cache has {kv_cache.shape[0]} pages x {kv_cache.shape[1]})"
        )
