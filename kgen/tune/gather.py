"""The read-only gather of a sparse workload's listed cache rows: every byte a sparse attention
kernel must read of the caches (each listed token's payload row, and its scale row where the
format keeps scales per page), read once in 16-byte loads and nothing computed. Its time, beside a
kernel's in the same run, says how much of the kernel's time the gather itself explains."""

from __future__ import annotations

import ctypes
import dataclasses
from dataclasses import dataclass, field
from functools import cache

import torch

from kgen.build import build_program
from kgen.launch import load_module
from kgen.mla.sparse.workload import SparseWorkload
from kgen.render import render_program

ROWS, THREADS = 32, 256  # listed entries a block, threads a block


@dataclass(frozen=True)
class RowLayout:
    """Where one list's rows lie in its cache, compiled into the gather's kernel: 16-byte words
    a payload row, tokens a page, bytes from one payload row to the next, and the offset of a
    page's scale rows and their size (-1 and 0: the format keeps no scale rows)."""

    words: int
    page_size: int
    row_stride: int
    scale_rows: int = -1
    scale_row_bytes: int = 0


def read_rows_program(layout: RowLayout):
    """The gather's kernel for lists laid out as `layout`, as a Program (built for the GPU at
    hand by read_rows)."""
    return render_program(
        "read_rows",
        "mla_sparse/read_rows.cu.jinja",
        {"rows": ROWS, "threads": THREADS, **dataclasses.asdict(layout)},
        ("read_rows",),
    )


@cache
def _module(layout: RowLayout):
    return load_module(build_program(read_rows_program(layout), "native"))


@dataclass
class Gather:
    """The launches of one workload's gather, made once: calling it issues them on the current
    stream. `sink` counts the blocks whose XOR of the 32-bit words they read equals the key (a
    test's check that the right bytes were read); `bytes` is what it reads."""

    launches: list  # (row layout, grid, C arguments, the tensors they point into) a list
    device: int
    sink: torch.Tensor
    bytes: int
    kernels: list = field(default_factory=list)  # each launch's kernel, built at the first call

    def __call__(self) -> None:
        if not self.kernels:  # built here, not in read_rows, which runs without a GPU too
            self.kernels = [_module(layout)["read_rows"] for layout, *_ in self.launches]
        stream = torch.cuda.current_stream().cuda_stream
        for kernel, (_, grid, args, _) in zip(self.kernels, self.launches, strict=True):
            kernel.launch(grid, (THREADS, 1, 1), args, stream=stream, device=self.device)


def read_rows(w: SparseWorkload, key: int = 0x9E3779B9) -> Gather:
    """The gather of `w`'s listed rows (its per-call-invariant arguments made here, not in the
    timed call)."""
    fmt = w.spec.format
    sink = torch.zeros(1, dtype=torch.int32, device=w.q.device)
    launches = []
    for cache_rows, indices, lengths, page_size in w.lists():
        batch, q_len, topk = indices.shape
        element = cache_rows.element_size()
        if fmt.scales_at == "page":
            layout = RowLayout(
                fmt.row_bytes // 16,
                page_size,
                fmt.row_bytes,
                fmt.scale_row_offset(page_size),
                fmt.scale_row_bytes,
            )
        else:
            layout = RowLayout(fmt.row_bytes // 16, page_size, cache_rows.stride(1) * element)
        if lengths is not None:  # one a query row
            lengths = lengths if lengths.dim() == 2 else lengths[:, None]
            lengths = lengths.expand(batch, q_len).contiguous().to(torch.int32)
        indices = indices.contiguous()
        args = [
            ctypes.c_void_p(cache_rows.data_ptr()),
            ctypes.c_void_p(indices.data_ptr()),
            ctypes.c_void_p(0 if lengths is None else lengths.data_ptr()),
            ctypes.c_int(topk),
            ctypes.c_int64(cache_rows.stride(0) * element),
            ctypes.c_uint(key),
            ctypes.c_void_p(sink.data_ptr()),
        ]
        grid = (-(-topk // ROWS), batch * q_len, 1)
        launches.append((layout, grid, args, (cache_rows, indices, lengths)))
    return Gather(launches, w.q.device.index, sink, w.gathered_bytes())
