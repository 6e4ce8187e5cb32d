"""The tensors a call of either family takes and writes, described as data, and the one checker of
them.

A family lists its call's tensors as Operands (kgen.mla.inputs for dense MLA,
kgen.mla.sparse.inputs for sparse): name, element type, shape (fixed sizes, and sizes named once
for the whole call, like the batch "B"), how the kernel reads it (rows a few bytes at a time, a
contiguous last dimension, the whole tensor contiguous, pages each contiguous, or any strides),
limits, and the fields of the kernel's parameter struct its address, strides and leading size go
in. An input may be optional (None binds a null address), one the call does not take (it must be
None), or one given with fewer dimensions (the kernel reads it broadcast along the missing ones).
A family's description depends on the plan's spec, so one family describes several calls (the
sparse V3.2 and V4 ops). `check_operands` checks tensors against that list and raises InputError
naming the first bad one; the runner (kgen.mla.running) binds the same list into the parameters.
A new input is one more Operand.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

INT32_MAX = 2**31 - 1
SIZE_WORDS = {"B": "batch"}  # how a message says a named size the plan fixed ("batch 2")
ACCESSES = ("rows", "last", "whole", "pages", "strided")


class InputError(ValueError):
    """A tensor passed to an MLA kernel does not match what the kernel expects."""


def fail(name: str, expected: str, got: str) -> None:
    raise InputError(f"{name}: expected {expected}, got {got}")


@dataclass(frozen=True)
class Limit:
    """At most `most` of `what` in a tensor: of(tensor) counts them."""

    what: str
    of: Callable
    most: int


@dataclass(frozen=True)
class Operand:
    """One tensor of a call.

    shape: per dimension an int (that size) or a name ("B", "num_pages"): a size the first tensor
      naming it fixes for the others (or the plan fixes); dims says what each dimension is.
    access: how the kernel reads it. "rows": the last dimension contiguous, rows read `align`
      bytes at a time (the other strides and the base address multiples of it); "last": the last
      dimension contiguous; "whole": the whole tensor contiguous; "pages": each slice along the
      first dimension (a page) contiguous, the page stride at least a page's elements and a
      multiple of `align` bytes, the base address aligned (the kernel finds its rows from the
      page's start, not from the tensor's row stride); `page_stride` (elements) is the planned
      page stride, where a page is padded past its elements (0: none); "strided": any strides
      (the kernel takes each one).
    field, strides, stride_unit: the parameter-struct fields of its address and of its leading
      strides ("elements" or "bytes"); count: (field, factor): its leading size times factor
      goes in that field (a cache's pages, or its slots); count_most: the most that value may be
      where less than the field holds (count_what says what it counts).
    optional: None is accepted (a null address bound). absent: why this call takes no such
      tensor (it must be None; nothing bound). min_dims: the dimensions past the first min_dims
      may be left out (the kernel reads the tensor broadcast along them: their strides bound as
      0); 0: every dimension given.
    """

    name: str
    dtype: str  # torch's name of the element type
    shape: tuple[int | str, ...]
    dims: str
    access: str = "rows"
    align: int = 1  # bytes, for access "rows"
    why_dtype: str = ""  # said where the dtype is wrong
    limits: tuple[Limit, ...] = ()
    field: str = ""
    strides: tuple[str, ...] = ()
    stride_unit: str = "elements"
    count: tuple[str, int] | None = None
    count_most: int = 0
    count_what: str = ""
    optional: bool = False
    absent: str = ""
    min_dims: int = 0
    page_stride: int = 0

    def __post_init__(self):
        assert self.access in ACCESSES, self.access
        assert self.stride_unit in ("elements", "bytes"), self.stride_unit
        assert not self.page_stride or self.access == "pages", self.name
        assert 0 <= self.min_dims < len(self.shape), self.name
        assert not self.count_most or self.count, self.name

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)

    @property
    def elem_bytes(self) -> int:
        return self.torch_dtype.itemsize

    def planned_shape(self, sizes: dict[str, int]) -> tuple[int, ...] | None:
        """Its shape with every named size given in `sizes`, or None where one is not."""
        if any(isinstance(s, str) and s not in sizes for s in self.shape):
            return None
        return tuple(sizes[s] if isinstance(s, str) else s for s in self.shape)

    def planned_strides(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The strides, in elements, of a tensor of `shape` as planned: contiguous, its pages
        `page_stride` apart where that is set."""
        strides = contiguous_strides(shape)
        return (self.page_stride, *strides[1:]) if self.page_stride else strides

    def as_planned(self, t: torch.Tensor) -> bool:
        """Whether t's strides are the planned ones for its shape (where a dimension has one
        element its stride is never used)."""
        if self.page_stride:
            return t.stride() == self.planned_strides(tuple(t.shape))
        return t.is_contiguous()


def attention_outputs(spec, dims: str, align: int) -> tuple[Operand, Operand]:
    """Both families' outputs: out [B, T, H, latent] in q's dtype and lse [B, T, H] float32,
    `dims` naming out's dimensions as the family's messages do (lse's: all but the last)."""
    t, h = spec.q_len, spec.heads
    out = Operand(
        "out",
        spec.dtype,
        ("B", t, h, spec.latent_dim),
        dims,
        align=align,
        field="out",
        strides=("o_sb", "o_st", "o_sh"),
    )
    lse_dims = dims.rsplit(", ", 1)[0]
    return out, Operand("lse", "float32", ("B", t, h), lse_dims, access="whole", field="lse")


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides, in elements, of a contiguous tensor of `shape`."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def check_tensor(name: str, t, device: torch.device | None, dtype: torch.dtype | None, ndim: int):
    """t is a tensor on `device` (any CUDA device where None), of `dtype` (where given), with
    `ndim` dimensions."""
    if not isinstance(t, torch.Tensor):
        fail(name, "a torch.Tensor", type(t).__name__)
    if not t.is_cuda and (device is None or device.type == "cuda"):
        fail(name, "a CUDA tensor", f"a tensor on {t.device}")
    if device is not None and t.device != device:
        fail(name, f"a tensor on {device}", f"one on {t.device}")
    if dtype is not None and t.dtype != dtype:
        fail(name, f"dtype {dtype}", str(t.dtype))
    if t.dim() != ndim:
        fail(name, f"{ndim} dimensions", f"shape {tuple(t.shape)}")


def check_operand(
    op: Operand, t, device: torch.device | None, sizes: dict[str, int], planned: dict[str, int]
) -> None:
    """One tensor against its Operand; the named sizes it is the first to show go into `sizes`."""
    name = op.name
    if op.absent:
        if t is not None:
            fail(name, f"None ({op.absent})", f"a {type(t).__name__}")
        return
    if isinstance(t, torch.Tensor) and t.dtype != op.torch_dtype and op.why_dtype:
        fail(name, f"dtype {op.torch_dtype} ({op.why_dtype})", str(t.dtype))
    ndims = range(op.min_dims or len(op.shape), len(op.shape) + 1)
    if isinstance(t, torch.Tensor) and len(ndims) > 1 and t.dim() not in ndims:
        fail(name, f"{' or '.join(map(str, ndims))} dimensions", f"shape {tuple(t.shape)}")
    ndim = t.dim() if isinstance(t, torch.Tensor) and t.dim() in ndims else len(op.shape)
    check_tensor(name, t, device, op.torch_dtype, ndim)
    shape = tuple(t.shape)
    known = {**sizes, **planned}

    def wanted(n: int) -> list:
        return [known.get(s, s) if isinstance(s, str) else s for s in op.shape[:n]]

    if any(isinstance(w, int) and w != n for w, n in zip(wanted(ndim), shape, strict=True)):
        for want, n in zip(op.shape, shape, strict=False):
            if isinstance(want, str) and want in planned and n != planned[want]:
                fail(
                    name,
                    f"{SIZE_WORDS.get(want, want)} {planned[want]} (the plan's)",
                    f"shape {shape}",
                )
        shapes = " or ".join(f"[{', '.join(map(str, wanted(n)))}]" for n in ndims)
        fail(name, f"shape {shapes} ({op.dims})", f"{shape}")
    for want, n in zip(op.shape, shape, strict=False):
        if isinstance(want, str):
            sizes.setdefault(want, n)
    strides = t.stride()
    if op.access == "whole":
        if not t.is_contiguous():
            fail(name, "a contiguous tensor", f"strides {strides}")
    elif op.access == "pages":
        check_pages(op, t)
    elif op.access != "strided" and shape[-1] > 1 and strides[-1] != 1:
        fail(name, "a contiguous last dimension", f"strides {strides}")
    if op.access == "rows" and op.align > 1:
        step = max(1, op.align // t.element_size())
        if any(n > 1 and s % step for s, n in zip(strides[:-1], shape[:-1], strict=True)):
            fail(
                name,
                f"strides that are multiples of {step} elements ({op.align} bytes)",
                f"strides {strides}",
            )
    if op.access in ("rows", "pages") and op.align > 1 and t.data_ptr() % op.align:
        fail(name, f"a base address aligned to {op.align} bytes", f"address {t.data_ptr():#x}")
    if op.count_most and shape[0] * op.count[1] > op.count_most:
        fail(name, f"at most {op.count_most} {op.count_what}", f"{shape[0] * op.count[1]}")
    for limit in op.limits:
        value = limit.of(t)
        if value > limit.most:
            fail(name, f"at most {limit.most} {limit.what}", f"{value}")


def check_pages(op: Operand, t: torch.Tensor) -> None:
    """Access "pages": each page contiguous, pages a multiple of `align` bytes apart and no
    closer than a page's elements."""
    shape, strides = tuple(t.shape), t.stride()
    inner = contiguous_strides(shape)[1:]
    page = math.prod(shape[1:])
    step = max(1, op.align // t.element_size())
    together = all(n == 1 or s == w for s, w, n in zip(strides[1:], inner, shape[1:], strict=True))
    if not together or (shape[0] > 1 and (strides[0] < page or strides[0] % step)):
        fail(
            op.name,
            f"each page's elements together: strides (page, {', '.join(map(str, inner))}) with "
            f"page >= {page} and a multiple of {step} elements ({op.align} bytes)",
            f"strides {strides}",
        )


def check_operands(
    operands: tuple[Operand, ...],
    tensors: tuple,
    device: torch.device | None = None,
    planned: dict[str, int] | None = None,
) -> dict[str, int]:
    """Every cheap check of a call's tensors, in the order of `operands`: all on `device`, else on
    the first tensor's CUDA device; the named sizes of `planned` fixed. InputError names the first
    bad tensor. Returns the named sizes the tensors show."""
    sizes: dict[str, int] = {}
    planned = planned or {}
    for op, t in zip(operands, tensors, strict=True):
        if t is None and (op.optional or op.absent):
            continue
        check_operand(op, t, device, sizes, planned)
        device = t.device
    return sizes


def extent(t: torch.Tensor) -> tuple[int, int]:
    """The bytes [start, end) a strided tensor's elements lie in (empty for no elements)."""
    start = t.data_ptr()
    if t.numel() == 0:
        return start, start
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))
    return start, start + (last + 1) * t.element_size()


def refuse_overlap(outputs: list, inputs: list) -> None:
    """InputError naming both tensors where an output's bytes overlap an input's or a later
    output's (the kernel would read what it writes); each list holds (name, tensor) pairs (a
    tensor of None, or anything else not a tensor, is left out)."""
    outs = [(n, *extent(t)) for n, t in outputs if isinstance(t, torch.Tensor)]
    ins = [(n, *extent(t)) for n, t in inputs if isinstance(t, torch.Tensor)]
    for i, (name, lo, hi) in enumerate(outs):
        for other, olo, ohi in (*ins, *outs[i + 1 :]):
            if lo < ohi and olo < hi:
                raise InputError(
                    f"{name} overlaps {other}: bytes [{lo:#x}, {hi:#x}) and [{olo:#x}, {ohi:#x}); "
                    f"outputs must not share memory with inputs or with each other"
                )
