"""Build an MLA attention variant (no GPU needed) and run it on torch tensors."""

from __future__ import annotations

import functools
import math

from kgen.arch import Arch, resolve_arch
from kgen.build import Binary, build_program
from kgen.launch import function_usage, load_module
from kgen.mla import workspace
from kgen.mla.layout import Layout, plan
from kgen.mla.mma_layout import MMALayout
from kgen.mla.program import ATTENTION, KernelParams, mla_program
from kgen.mla.spec import Config, Spec
from kgen.resources import Resources

LOG2E = 1.0 / math.log(2.0)


class MLAKernel:
    """One compiled variant: `source`, `cubin`, `resources`; call it with torch tensors."""

    def __init__(
        self, spec: Spec, config: Config, arch: Arch, layout: Layout | MMALayout, binary: Binary
    ):
        self.spec, self.config, self.arch, self.layout, self.binary = (
            spec,
            config,
            arch,
            layout,
            binary,
        )

    @functools.cached_property
    def resources(self) -> Resources:
        """The attention kernel's registers, shared memory, spills and occupancy on its arch."""
        usage = function_usage(self.binary, ATTENTION)
        return Resources.of(
            ATTENTION, usage, self.arch, self.layout.threads, self.layout.dynamic_smem
        )

    @property
    def source(self) -> str:
        return self.binary.program.source

    @property
    def cubin(self) -> bytes:
        return self.binary.cubin

    def __repr__(self) -> str:
        return (
            f"MLAKernel({self.spec.short_name()}, {self.config.short_name()}, "
            f"splits={self.config.kv_splits}, {self.arch.name}: {self.resources.summary()})"
        )

    def __call__(
        self,
        q,
        kv_cache,
        block_table,
        seq_lens,
        mask=None,
        scale: float | None = None,
        *,
        out=None,
        lse=None,
        validate: bool = False,
    ):
        """out [B, T, H, latent_dim] (q's dtype) and lse [B, T, H] (float32, natural log).

        mask: None (spec mask 'none' or 'causal'), or for 'tree' a bool [B, T, T] / [T, T] mask or
        its bit-packed int64 rows [B, T] / [T]. scale defaults to 1/sqrt(latent + rope).
        validate=True also checks seq_lens and page ids (this reads them back: a device sync).
        """
        import torch

        from kgen.mla.inputs import check_inputs, validate_on_device

        spec, cfg = self.spec, self.config
        inputs = check_inputs(spec, cfg.vec_width, q, kv_cache, block_table, seq_lens, mask)
        if validate:
            validate_on_device(spec, inputs)
        scale = spec.default_scale if scale is None else float(scale)
        if not math.isfinite(scale):
            raise ValueError(f"scale={scale}: must be a finite float")
        batch, device = inputs.batch, inputs.device
        out = self._output(
            "out", out, (batch, spec.q_len, spec.heads, spec.latent_dim), q.dtype, device
        )
        lse = self._output("lse", lse, (batch, spec.q_len, spec.heads), torch.float32, device)
        if batch == 0:
            return out, lse

        splits = cfg.kv_splits
        index = device.index if device.index is not None else torch.cuda.current_device()
        stream = torch.cuda.current_stream(device).cuda_stream
        head_groups = spec.heads // cfg.heads_per_block
        ws_o = ws_lse = counters = None
        if splits > 1:
            slots = batch * workspace.workspace_slots(splits) * spec.q_len * spec.heads
            ws_o = torch.empty((slots, spec.latent_dim), dtype=torch.float32, device=device)
            ws_lse = torch.empty((slots,), dtype=torch.float32, device=device)
            counters = workspace.counters(
                device, stream, workspace.counter_count(batch, head_groups, splits)
            )
        mask_bits = inputs.mask_bits
        params = KernelParams(
            q.data_ptr(),
            *q.stride()[:3],
            kv_cache.data_ptr(),
            kv_cache.stride(0),
            kv_cache.stride(1),
            block_table.data_ptr(),
            block_table.stride(0),
            block_table.shape[1],
            kv_cache.shape[0],
            seq_lens.data_ptr(),
            0 if mask_bits is None else mask_bits.data_ptr(),
            0 if mask_bits is None or mask_bits.shape[0] == 1 else mask_bits.stride(0),
            out.data_ptr(),
            *out.stride()[:3],
            lse.data_ptr(),
            0 if ws_o is None else ws_o.data_ptr(),
            0 if ws_lse is None else ws_lse.data_ptr(),
            0 if counters is None else counters.data_ptr(),
            workspace.combine_fanin(splits),
            scale * LOG2E,
        )
        module = load_module(self.binary, index)
        module[ATTENTION].launch(
            grid=(splits, head_groups, batch),
            block=(self.layout.threads, 1, 1),
            args=[params],
            stream=stream,
            smem=self.layout.dynamic_smem,
            device=index,
        )
        return out, lse

    def _output(self, name, given, shape, dtype, device):
        import torch

        if given is None:
            return torch.empty(shape, dtype=dtype, device=device)
        if (
            not isinstance(given, torch.Tensor)
            or tuple(given.shape) != shape
            or given.dtype != dtype
            or given.device != device
        ):
            raise ValueError(
                f"{name}: expected a {dtype} tensor of shape {list(shape)} on {device}"
            )
        if name == "lse" and not given.is_contiguous():
            raise ValueError("lse: expected a contiguous tensor")
        if name == "out":
            from kgen.mla.inputs import check_vector_rows

            check_vector_rows("out", given, self.config.vec_width, self.spec.elem_bytes)
        return given


def build(spec: Spec, config: Config, arch: str | Arch = "sm_120") -> MLAKernel:
    """Compile (or fetch from the cache) one variant for `arch`; no GPU needed unless 'native'."""
    if not isinstance(spec, Spec):
        raise TypeError(f"spec: expected kgen.mla.Spec, got {type(spec).__name__}")
    if not isinstance(config, Config):
        raise TypeError(f"config: expected kgen.mla.Config, got {type(config).__name__}")
    arch = resolve_arch(arch)
    return _build(spec, config, arch)


@functools.lru_cache(maxsize=1024)
def _build(spec: Spec, config: Config, arch: Arch) -> MLAKernel:
    layout = plan(spec, config, arch)
    binary = build_program(mla_program(spec, config, layout), arch)
    return MLAKernel(spec, config, arch, layout, binary)
