"""Host-side checks of the tensors an MLA kernel is called with, and the tree-mask packing.

Cheap checks (shape, dtype, device, strides, alignment) always run and raise ValueError naming
the tensor; checks that must read device memory (seq_lens, page ids) run with validate=True.
"""

from __future__ import annotations

import torch

from kgen import device as devices
from kgen.mla.spec import Spec

INT32_MAX = 2**31 - 1


class InputError(ValueError):
    """A tensor passed to an MLA kernel does not match what the kernel expects."""


def _fail(name: str, expected: str, got: str) -> None:
    raise InputError(f"{name}: expected {expected}, got {got}")


def check_tensor(name: str, t, device: torch.device | None, dtype: torch.dtype | None, ndim: int):
    """t is a tensor on `device` (any CUDA device where None), of `dtype` (where given), with
    `ndim` dimensions."""
    if not isinstance(t, torch.Tensor):
        _fail(name, "a torch.Tensor", type(t).__name__)
    if not t.is_cuda and (device is None or device.type == "cuda"):
        _fail(name, "a CUDA tensor", f"a tensor on {t.device}")
    if device is not None and t.device != device:
        _fail(name, f"a tensor on {device}", f"one on {t.device}")
    if dtype is not None and t.dtype != dtype:
        _fail(name, f"dtype {dtype}", str(t.dtype))
    if t.dim() != ndim:
        _fail(name, f"{ndim} dimensions", f"shape {tuple(t.shape)}")


def check_vector_rows(name: str, t: torch.Tensor, vec: int, elem_bytes: int) -> None:
    """Rows read vec elements at a time: last dim contiguous, other strides and base aligned."""
    if t.stride(-1) != 1 and t.shape[-1] > 1:
        _fail(name, "a contiguous last dimension", f"strides {tuple(t.stride())}")
    odd = [s for s, n in zip(t.stride()[:-1], t.shape[:-1], strict=True) if n > 1 and s % vec]
    if odd:
        _fail(
            name,
            f"strides that are multiples of vec_width={vec} elements",
            f"strides {tuple(t.stride())}",
        )
    if t.data_ptr() % (vec * elem_bytes):
        _fail(
            name,
            f"a base address aligned to {vec * elem_bytes} bytes for vec_width={vec}",
            f"address {t.data_ptr():#x}",
        )


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
) -> None:
    """Every cheap check of a call's inputs (all on `device`, else on q's CUDA device, and of
    the `planned` (batch, max_pages) where given); InputError naming the first bad tensor."""
    dtype = spec.torch_dtype
    check_tensor("q", q, device, dtype, 4)
    device = q.device
    batch, q_len, heads, dim = q.shape
    if (q_len, heads, dim) != (spec.q_len, spec.heads, spec.head_dim):
        _fail(
            "q",
            f"shape [B, {spec.q_len}, {spec.heads}, {spec.head_dim}] (B, q_len, heads, "
            "latent+rope)",
            f"{tuple(q.shape)}",
        )
    if planned is not None and batch != planned[0]:
        _fail("q", f"batch {planned[0]} (the plan's)", f"shape {tuple(q.shape)}")
    check_vector_rows("q", q, vec, spec.elem_bytes)

    check_tensor("kv_cache", kv_cache, device, dtype, 3)
    if tuple(kv_cache.shape[1:]) != (spec.page_size, spec.head_dim):
        _fail(
            "kv_cache",
            f"shape [num_pages, {spec.page_size}, {spec.head_dim}] (page_size, latent+rope)",
            f"{tuple(kv_cache.shape)}",
        )
    check_vector_rows("kv_cache", kv_cache, vec, spec.elem_bytes)
    if kv_cache.shape[0] > INT32_MAX:
        _fail("kv_cache", f"at most {INT32_MAX} pages", f"{kv_cache.shape[0]}")
    if kv_cache.stride(1) * spec.page_size > INT32_MAX:  # offsets inside a page are 32-bit
        _fail(
            "kv_cache",
            f"a row stride of at most {INT32_MAX // spec.page_size} elements",
            f"{kv_cache.stride(1)}",
        )

    check_tensor("block_table", block_table, device, torch.int32, 2)
    if block_table.shape[0] != batch:
        _fail(
            "block_table",
            f"{batch} rows (one per sequence of q)",
            f"shape {tuple(block_table.shape)}",
        )
    if planned is not None and block_table.shape[1] != planned[1]:
        _fail(
            "block_table",
            f"{planned[1]} columns (the plan's max_pages)",
            f"shape {tuple(block_table.shape)}",
        )
    if block_table.shape[1] and block_table.stride(1) != 1:
        _fail("block_table", "contiguous rows", f"strides {tuple(block_table.stride())}")
    if block_table.shape[1] * spec.page_size > INT32_MAX:
        _fail(
            "block_table",
            f"at most {INT32_MAX} positions per sequence",
            f"{block_table.shape[1]} pages x {spec.page_size}",
        )

    check_tensor("seq_lens", seq_lens, device, torch.int32, 1)
    if seq_lens.shape[0] != batch:
        _fail("seq_lens", f"shape [{batch}]", f"{tuple(seq_lens.shape)}")
    if batch > 1 and seq_lens.stride(0) != 1:
        _fail("seq_lens", "a contiguous tensor", f"stride {seq_lens.stride(0)}")

    check_mask(spec, mask, batch, device)


def check_mask(spec: Spec, mask, batch: int, device: torch.device) -> None:
    """For a tree spec a bool [B, T, T] / [T, T] or packed int64 [B, T] / [T] tensor, else None
    (or the spec's mask by name)."""
    if spec.mask != "tree":
        if mask is None or (isinstance(mask, str) and mask == spec.mask):
            return
        _fail("mask", f"None (the kernel was built for mask='{spec.mask}')", _describe(mask))
    if not isinstance(mask, torch.Tensor):
        _fail(
            "mask",
            "a tree mask: bool [B, T, T] or [T, T], or packed int64 [B, T] or [T]",
            _describe(mask),
        )
    t = spec.q_len
    if mask.device != device:
        _fail("mask", f"a tensor on {device}", f"one on {mask.device}")
    if mask.dtype == torch.bool:
        if tuple(mask.shape) not in ((batch, t, t), (t, t)):
            _fail("mask", f"bool shape [{batch}, {t}, {t}] or [{t}, {t}]", f"{tuple(mask.shape)}")
        return
    if mask.dtype == torch.int64:
        if tuple(mask.shape) not in ((batch, t), (t,)):
            _fail("mask", f"packed int64 shape [{batch}, {t}] or [{t}]", f"{tuple(mask.shape)}")
        if not mask.is_contiguous():
            _fail("mask", "a contiguous packed mask", f"strides {tuple(mask.stride())}")
        return
    _fail("mask", "dtype bool (dense) or int64 (bit-packed rows)", str(mask.dtype))


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


def validate_on_device(spec: Spec, kv_cache, block_table, seq_lens) -> None:
    """The checks that read device memory (they synchronise): lengths and page ids."""
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


def check_output(name: str, given, shape: tuple, dtype, device, vec: int, elem_bytes: int) -> None:
    """A caller's out= or lse=: the right shape, dtype and device; lse contiguous, out's rows
    readable vec elements at a time."""
    if (
        not isinstance(given, torch.Tensor)
        or tuple(given.shape) != shape
        or given.dtype != dtype
        or given.device != device
    ):
        raise InputError(f"{name}: expected a {dtype} tensor of shape {list(shape)} on {device}")
    if name == "lse" and not given.is_contiguous():
        raise InputError("lse: expected a contiguous tensor")
    if name == "out":
        check_vector_rows("out", given, vec, elem_bytes)


def extent(t: torch.Tensor) -> tuple[int, int]:
    """The bytes [start, end) a strided tensor's elements lie in (empty for no elements)."""
    start = t.data_ptr()
    if t.numel() == 0:
        return start, start
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))
    return start, start + (last + 1) * t.element_size()


def refuse_overlap(outputs: list, inputs: list) -> None:
    """InputError naming both tensors where an output's bytes overlap an input's or a later
    output's (the kernel would read what it writes); each list holds (name, start, end)."""
    for i, (name, lo, hi) in enumerate(outputs):
        for other, olo, ohi in (*inputs, *outputs[i + 1 :]):
            if lo < ohi and olo < hi:
                raise InputError(
                    f"{name} overlaps {other}: bytes [{lo:#x}, {hi:#x}) and [{olo:#x}, {ohi:#x}); "
                    f"outputs must not share memory with inputs or with each other"
                )


def cuda_index(device) -> int:
    """The index of a CUDA device given as None (the current one), an int, a str or a device;
    NoGPUError where torch sees no CUDA device (a CPU build of torch, or no GPU)."""
    if device is not None:
        device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
        if device.type != "cuda":
            raise ValueError(f"device={device}: expected a CUDA device")
    if not torch.cuda.is_available():
        why = "it was built without CUDA" if torch.version.cuda is None else "it sees no GPU"
        raise devices.NoGPUError(
            f"planning or running a kgen kernel needs a CUDA GPU, and torch {torch.__version__} "
            f"cannot use one ({why}); building one needs none (kgen.mla.build or build_sparse "
            "with an explicit arch, e.g. arch='sm_120')"
        )
    return devices.current() if device is None else devices.index_of(device)
