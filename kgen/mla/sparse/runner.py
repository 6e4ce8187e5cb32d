"""SparseRunner: one planned sparse MLA call shape, run once per layer.

Made by kgen.mla.plan_sparse (kgen/mla/sparse/api.py) with the kernel loaded, the split
workspace allocated (its arrival counters zeroed; every launch leaves them zeroed) and the launch
parameters packed. `run` checks the tensors against the plan, writes their pointers and strides
into the packed parameters and launches once on torch's current stream: no compile, no sync and
(given out= and lse=) no allocation, so runs can be captured in a CUDA graph.
"""

from __future__ import annotations

import math

import torch

from kgen.launch import PackedLaunch, load_module
from kgen.mla import workspace
from kgen.mla.inputs import check_tensor, extent, refuse_overlap
from kgen.mla.runner import _own_memory, current_device, current_stream, runners
from kgen.mla.sparse.inputs import check_inputs, check_outputs, validate_indices
from kgen.mla.sparse.program import ATTENTION, SparseParams

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
        self._index = device.index if device.type == "cuda" else -1
        tokens = batch * spec.q_len
        head_groups = spec.heads // config.heads_per_block
        splits = config.kv_splits
        self.workspace = _own_memory(
            device,
            lambda: (
                workspace.allocate(
                    tokens, 1, spec.heads, spec.latent_dim, head_groups, splits, device
                ),
                (),
            ),
        )[0]
        ws = self.workspace
        self.workspace_bytes = sum(buf.nbytes for buf in vars(ws).values()) if ws else 0
        self._params = SparseParams(
            topk=spec.topk,
            ws_o=ws.partials.data_ptr() if ws else 0,
            ws_lse=ws.partial_lse.data_ptr() if ws else 0,
            counters=ws.counters.data_ptr() if ws else 0,
            combine_fanin=workspace.combine_fanin(splits),
            scale_log2=scale * LOG2E,
        )
        self._launch = self._packed_launch((splits, head_groups, tokens)) if tokens else None

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
        return runners.get(
            ("sparse", kernel, batch, index, scale, stream),
            lambda: cls(kernel, batch, torch.device("cuda", index), scale),
        )

    def __repr__(self) -> str:
        return (
            f"SparseRunner({self.spec.short_name()}, topk={self.spec.topk}, "
            f"{self.config.short_name()}, splits={self.config.kv_splits}, batch={self.batch}, "
            f"{self.device})"
        )

    def run(self, q, kv_cache, indices, out=None, lse=None, validate: bool = False):
        """out [B, T, H, 512] and lse [B, T, H] on torch's current stream. validate=True also
        checks every slot of `indices` (a device sync); out= and lse= must not overlap inputs."""
        spec = self.spec
        check_inputs(spec, q, kv_cache, indices, self.device, self.batch)
        if validate:
            validate_indices(kv_cache, indices)
        given = out is not None or lse is not None
        shape = (self.batch, spec.q_len, spec.heads)
        if out is None:
            out = torch.empty((*shape, spec.latent_dim), dtype=q.dtype, device=self.device)
        if lse is None:
            lse = torch.empty(shape, dtype=torch.float32, device=self.device)
        check_outputs(spec, out, lse, self.batch, self.device)
        if given:
            inputs = [("q", q), ("kv_cache", kv_cache), ("indices", indices)]
            refuse_overlap(
                [("out", *extent(out)), ("lse", *extent(lse))],
                [(name, *extent(t)) for name, t in inputs],
            )
        p = self._params
        p.q, (p.q_sb, p.q_st, p.q_sh) = q.data_ptr(), q.stride()[:3]
        p.kv = kv_cache.data_ptr()
        p.kv_sp, p.kv_sr = (s * kv_cache.element_size() for s in kv_cache.stride()[:2])
        p.num_slots = kv_cache.shape[0] * kv_cache.shape[1]
        p.indices, (p.idx_sb, p.idx_st) = indices.data_ptr(), indices.stride()[:2]
        p.out, (p.o_sb, p.o_st, p.o_sh) = out.data_ptr(), out.stride()[:3]
        p.lse = lse.data_ptr()
        if self._launch is None:
            return out, lse
        stream = current_stream(self._index)
        if current_device() == self._index:
            self._launch.launch(stream)
        else:  # like a torch op, run on the tensors' device whatever the current one is
            with torch.cuda.device(self._index):
                self._launch.launch(stream)
        return out, lse
