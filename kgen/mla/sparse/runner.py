"""SparseRunner: one planned sparse MLA call shape, run once per layer.

Made by kgen.mla.plan_sparse (kgen/mla/sparse/api.py) with the kernel loaded, the split
workspace allocated (its arrival counters zeroed; every launch leaves them zeroed) and the launch
parameters packed. `run` checks the tensors against the plan, writes their pointers and strides
into the packed parameters and launches once on torch's current stream: no compile, no sync and
(given out= and lse=) no allocation, so runs can be captured in a CUDA graph.

As kgen.mla.Runner does: tensors that are contiguous with the planned shapes, dtypes and device
(and aligned) take a fast path of identity checks and pointer writes; anything else takes the
full checks, which either name the bad tensor or bind its strides.
"""

from __future__ import annotations

import math

import torch

from kgen.launch import PackedLaunch, load_module
from kgen.mla import workspace
from kgen.mla.inputs import InputError, check_tensor, extent, refuse_overlap
from kgen.mla.runner import (
    combine_launch,
    current_device,
    current_stream,
    own_memory,
    runners,
)
from kgen.mla.sparse.inputs import (
    MAX_TOKENS,
    ROW_ALIGN,
    check_inputs,
    check_lists,
    check_outputs,
    validate_indices,
)
from kgen.mla.sparse.program import ATTENTION, params_type

LOG2E = 1.0 / math.log(2.0)


class SparseRunner:
    """A planned call: `run(q, kv_cache, indices, out=None, lse=None)` per layer.

    The plan fixes the spec (heads, q_len, topk, cache format, page size, dtype), the config, the
    batch, the device and the softmax scale; the cache's page count, the tensors' addresses and
    their contents may change from call to call. One launch at a time per runner (one stream).
    """

    def __init__(self, kernel, batch: int, device: torch.device, scale: float | None = None):
        spec, config = kernel.spec, kernel.config
        scale = spec.default_scale if scale is None else float(scale)
        if not math.isfinite(scale):
            raise ValueError(f"scale={scale}: must be a finite float")
        self.kernel, self.spec, self.config = kernel, spec, config
        self.batch, self.device, self.scale = batch, device, scale
        self.captured = False  # set by RunnerCache when it ran inside a CUDA-graph capture
        self._index = device.index if device.type == "cuda" else -1  # what get_device() says
        tokens = batch * spec.q_len
        if tokens > MAX_TOKENS:
            raise ValueError(
                f"batch={batch}: at most {MAX_TOKENS} query tokens (batch x q_len={spec.q_len}) "
                "per launch"
            )
        fmt = spec.format
        width = fmt.token_bytes if fmt.quantized else spec.head_dim
        h, d, dl, esize = spec.heads, spec.head_dim, spec.latent_dim, spec.elem_bytes
        self._dtype = spec.torch_dtype
        self._kv_dtype = torch.uint8 if fmt.quantized else self._dtype
        self._q_shape = torch.Size((batch, spec.q_len, h, d))
        self._row_shape = (spec.page_size, width)
        self._idx_shape = torch.Size((batch, spec.q_len, spec.topk))
        self._out_shape = torch.Size((batch, spec.q_len, h, dl))
        self._lse_shape = torch.Size((batch, spec.q_len, h))
        if fmt.quantized:
            self._page_bytes = fmt.page_bytes(spec.page_size)
        else:
            self._page_bytes = spec.page_size * width * esize
        # The planned cache's strides (elements): a padded page where scales sit per page
        self._kv_strides = (self._page_bytes // self._kv_dtype.itemsize, width, 1)
        self._q_bytes, self._out_bytes = tokens * h * d * esize, tokens * h * dl * esize
        self._idx_bytes, self._lse_bytes = tokens * spec.topk * 4, tokens * h * 4
        head_groups = -(-spec.heads // config.heads_per_block)
        splits = config.kv_splits
        self.workspace = own_memory(
            device,
            lambda: (
                workspace.allocate(
                    tokens, config.heads_per_block, spec.latent_dim, head_groups, splits, device
                ),
                (),
            ),
        )[0]
        ws = self.workspace
        self.workspace_bytes = sum(buf.nbytes for buf in vars(ws).values()) if ws else 0
        self._params = params_type(spec)(
            topk=spec.topk,
            ws_o=ws.partials.data_ptr() if ws else 0,
            ws_lse=ws.partial_lse.data_ptr() if ws else 0,
            counters=ws.counters.data_ptr() if ws else 0,
            scale_log2=scale * LOG2E,
        )
        self._set_planned_strides()
        self._launch = self._packed_launch((head_groups, splits, tokens)) if tokens else None
        self._combine = combine_launch(self.kernel, tokens, head_groups, self._index, self._params)

    def _set_planned_strides(self) -> None:
        """The strides of contiguous tensors of the planned shapes (the cache's in bytes)."""
        p, spec = self._params, self.spec
        t, h, d, dl = spec.q_len, spec.heads, spec.head_dim, spec.latent_dim
        p.q_sb, p.q_st, p.q_sh = t * h * d, h * d, d
        p.kv_sp, p.kv_sr = self._page_bytes, self._row_bytes(self._page_bytes // spec.page_size)
        p.idx_sb, p.idx_st = t * spec.topk, spec.topk
        p.o_sb, p.o_st, p.o_sh = t * h * dl, h * dl, dl
        self._odd_strides = False

    def _row_bytes(self, stride: int) -> int:
        """A cache's row stride as the kernel takes it: the tensor's, or where scales sit per page
        the payload row's."""
        fmt = self.spec.format
        return fmt.row_bytes if fmt.scales_at == "page" else stride

    def _packed_launch(self, grid: tuple[int, int, int]) -> PackedLaunch:
        layout = self.kernel.layout
        kernel = load_module(self.kernel.binary, self._index)[ATTENTION]
        return PackedLaunch(
            kernel, grid, (layout.threads, 1, 1), layout.dynamic_smem, self._index, self._params
        )

    @classmethod
    def cached(cls, kernel, q, scale: float | None) -> SparseRunner:
        """The kept runner of `kernel` for q's batch and device (made on first use)."""
        check_tensor("q", q, None, kernel.spec.torch_dtype, 4)  # a CUDA tensor: it has a device
        index = q.get_device()
        batch, stream = q.shape[0], current_stream(index)
        key = ("sparse", kernel, batch, index, scale, stream)
        runner = runners.get(key, stream)
        if runner is None:
            made = cls(kernel, batch, torch.device("cuda", index), scale)
            runner = runners.add(key, made, stream)
        return runner

    def __repr__(self) -> str:
        return (
            f"SparseRunner({self.spec.short_name()}, topk={self.spec.topk}, "
            f"{self.config.short_name()}, splits={self.config.kv_splits}, batch={self.batch}, "
            f"{self.device})"
        )

    def run(
        self,
        q,
        kv_cache,
        indices,
        out=None,
        lse=None,
        validate: bool = False,
        *,
        topk_length=None,
        attn_sink=None,
        extra_kv_cache=None,
        extra_indices=None,
        extra_topk_length=None,
    ):
        """out [B, T, H, 512] and lse [B, T, H] on torch's current stream. validate=True also
        checks every slot of `indices` (a device sync); out= and lse= must not overlap inputs.
        The V4 op (a 512-wide kv_format) also takes the lengths of its lists, its sink and its
        second cache (see kgen.mla.sparse_attention)."""
        index, dtype, p = self._index, self._dtype, self._params
        given = out is not None or lse is not None
        if out is None:
            out = torch.empty(self._out_shape, dtype=dtype, device=self.device)
        if lse is None:
            lse = torch.empty(self._lse_shape, dtype=torch.float32, device=self.device)
        try:
            pages, page_size, width = kv_cache.shape
            planned = (
                not self._odd_strides
                and (q.dtype is dtype and q.shape == self._q_shape)
                and (q.get_device() == index and q.is_contiguous())
                and (kv_cache.dtype is self._kv_dtype and (page_size, width) == self._row_shape)
                and (kv_cache.get_device() == index and kv_cache.stride() == self._kv_strides)
                and (indices.dtype is torch.int32 and indices.shape == self._idx_shape)
                and (indices.get_device() == index and indices.is_contiguous())
                and (
                    not given
                    or (out.dtype is dtype and out.shape == self._out_shape)
                    and (out.get_device() == index and out.is_contiguous())
                    and (lse.dtype is torch.float32 and lse.shape == self._lse_shape)
                    and (lse.get_device() == index and lse.is_contiguous())
                )
            )
        except (AttributeError, TypeError, ValueError):  # not a tensor, or not 3-D
            planned = False
        if planned:
            q_ptr, kv_ptr, out_ptr = q.data_ptr(), kv_cache.data_ptr(), out.data_ptr()
            planned = not ((q_ptr | kv_ptr) % ROW_ALIGN or out_ptr % 4)
        if planned:
            p.q, p.kv, p.out, p.lse = q_ptr, kv_ptr, out_ptr, lse.data_ptr()
            p.indices, p.num_slots = indices.data_ptr(), pages * page_size
        else:
            self._bind_checked(q, kv_cache, indices, out, lse)
        extras = {}
        if self.spec.v4_op:
            extras = {
                "topk_length": topk_length,
                "attn_sink": attn_sink,
                "extra_kv_cache": extra_kv_cache,
                "extra_indices": extra_indices,
                "extra_topk_length": extra_topk_length,
            }
            self._bind_extras(**extras)
        else:
            check_lists(
                self.spec,
                self.batch,
                self.device,
                topk_length=topk_length,
                attn_sink=attn_sink,
                extra_kv_cache=extra_kv_cache,
                extra_indices=extra_indices,
                extra_topk_length=extra_topk_length,
            )
        if validate:
            validate_indices(kv_cache, indices, length=topk_length)
            if extra_indices is not None:
                validate_indices(
                    extra_kv_cache,
                    extra_indices,
                    "extra_indices",
                    "extra_kv_cache",
                    extra_topk_length,
                )
        if given:
            self._refuse_overlap(planned and not extras, q, kv_cache, indices, out, lse, extras)
        if self._launch is None:
            return out, lse
        stream = current_stream(index)
        if current_device() == index:
            self._send(stream)
        else:  # like a torch op, run on the tensors' device whatever the current one is
            with torch.cuda.device(index):
                self._send(stream)
        return out, lse

    def _send(self, stream: int) -> None:
        self._launch.launch(stream)
        if self._combine is not None:  # merge="pdl": the merge follows
            self._combine.launch(stream)

    def _bind_checked(self, q, kv_cache, indices, out, lse) -> None:
        """Every check (InputError naming the tensor), then every pointer and stride."""
        spec = self.spec
        check_inputs(spec, q, kv_cache, indices, self.device, self.batch)
        check_outputs(spec, out, lse, self.batch, self.device)
        p = self._params
        p.q, (p.q_sb, p.q_st, p.q_sh) = q.data_ptr(), q.stride()[:3]
        p.kv = kv_cache.data_ptr()
        p.kv_sp, p.kv_sr = (s * kv_cache.element_size() for s in kv_cache.stride()[:2])
        p.kv_sr = self._row_bytes(p.kv_sr)
        p.num_slots = kv_cache.shape[0] * kv_cache.shape[1]
        p.indices, (p.idx_sb, p.idx_st) = indices.data_ptr(), indices.stride()[:2]
        p.out, (p.o_sb, p.o_st, p.o_sh) = out.data_ptr(), out.stride()[:3]
        p.lse = lse.data_ptr()
        # Other strides stay until a call whose tensors are all planned writes those back.
        self._odd_strides = not all(t.is_contiguous() for t in (q, indices, out))
        self._odd_strides |= kv_cache.stride() != self._kv_strides

    def _bind_extras(self, **extras) -> None:
        """The V4 op's lengths, sink and second cache: checked (InputError naming the tensor),
        their pointers and strides written (a null pointer: none given)."""
        spec, p = self.spec, self._params
        check_lists(spec, self.batch, self.device, **extras)
        for field, name in (("topk_len", "topk_length"), ("extra_len", "extra_topk_length")):
            t = extras[name]
            setattr(p, field, t.data_ptr() if t is not None else 0)
            sb, st = (t.stride(0), t.stride(1) if t.dim() == 2 else 0) if t is not None else (0, 0)
            prefix = "" if field == "topk_len" else "extra_"
            setattr(p, f"{prefix}len_sb", sb)
            setattr(p, f"{prefix}len_st", st)
        sink = extras["attn_sink"]
        p.sink = sink.data_ptr() if sink is not None else 0
        cache, idx = extras["extra_kv_cache"], extras["extra_indices"]
        if cache is None:
            return
        p.extra_kv = cache.data_ptr()
        p.extra_kv_sp = cache.stride(0) * cache.element_size()
        p.extra_kv_sr = self._row_bytes(cache.stride(1) * cache.element_size())
        p.extra_num_slots = cache.shape[0] * cache.shape[1]
        p.extra_indices = idx.data_ptr()
        p.extra_idx_sb, p.extra_idx_st = idx.stride()[:2]
        p.extra_topk = spec.extra_topk
        if p.num_slots + p.extra_num_slots >= 1 << 31:
            raise InputError(
                f"extra_kv_cache: the two caches hold {p.num_slots} + {p.extra_num_slots} slots; "
                "at most 2^31 - 1 together"
            )

    def _refuse_overlap(self, planned, q, kv_cache, indices, out, lse, extras=None) -> None:
        """InputError naming both tensors where out or lse shares bytes with an input or with
        each other. Planned tensors are contiguous, of known sizes: their ranges are cheap, and
        only an overlap among them takes the general path, which names the pair."""
        if planned:
            p = self._params
            out_lo, lse_lo = p.out, p.lse
            out_hi, lse_hi = out_lo + self._out_bytes, lse_lo + self._lse_bytes
            spans = (
                (p.q, p.q + self._q_bytes),
                (p.kv, p.kv + kv_cache.shape[0] * self._page_bytes),
                (p.indices, p.indices + self._idx_bytes),
            )
            clear = out_hi <= lse_lo or lse_hi <= out_lo
            for lo, hi in spans:
                if not clear:
                    break
                clear = (hi <= out_lo or out_hi <= lo) and (hi <= lse_lo or lse_hi <= lo)
            if clear:
                return
        inputs = [("q", q), ("kv_cache", kv_cache), ("indices", indices)]
        inputs += [(name, t) for name, t in (extras or {}).items() if t is not None]
        refuse_overlap(
            [("out", *extent(out)), ("lse", *extent(lse))],
            [(name, *extent(t)) for name, t in inputs],
        )
