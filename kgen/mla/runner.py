"""Runner: one planned dense MLA call shape, run once per layer (the serving-engine form of a
call): a PlannedRunner (kgen.mla.running) of the dense Operands (kgen.mla.inputs) and parameter
struct (kgen.mla.program), plus what only the dense call has: the tree mask, packed per call
into the plan's buffer or given as bit rows.

Made by `kgen.mla.plan` (kgen/mla/api.py). `run` does not compile, synchronise, or allocate
device memory (given out= and lse=, and a packed or no mask), so many runs can be captured in one
CUDA graph.
"""

from __future__ import annotations

import torch

from kgen.mla.inputs import check_mask, operands
from kgen.mla.operands import extent
from kgen.mla.program import params_type
from kgen.mla.running import PlannedRunner, current_stream
from kgen.mla.spec import block_groups_of


class Runner(PlannedRunner):
    """A planned call: `run(q, kv_cache, block_table, seq_lens, mask, out, lse, k_scale=)` per
    layer.

    The plan fixes the spec (heads, q_len, dims, dtype, page size, mask kind), the config, the
    batch, block_table's width (max_pages), the device and the softmax scale; the pages of the
    cache (its first dimension), the tensors' addresses and the values in them may change from
    call to call. A Runner's workspace serves one launch at a time: run it on one stream (or in
    graphs replayed on one), and keep it alive as long as a graph that captured it.
    """

    def __init__(self, kernel, batch: int, max_pages: int, device: torch.device, scale=None):
        spec = kernel.spec
        self.max_pages = max_pages
        self._tree = spec.mask == "tree"
        inputs, outputs = operands(spec, kernel.config.vec_width)
        super().__init__(
            kernel,
            batch,
            device,
            scale,
            inputs=inputs,
            outputs=outputs,
            planned={"B": batch, "max_pages": max_pages},
            params=params_type(spec)(max_pages=max_pages),
            groups=batch,
            block_groups=block_groups_of(spec, kernel.config),
        )
        self._extra_always = self._tree  # a tree spec's run must be given a mask
        if self._tree and self._launch is not None:
            self._bind_extra = self._bind_tree_mask  # (one call less per run)
        t = spec.q_len
        self._packed_shapes = {torch.Size((batch, t)): t, torch.Size((t,)): 0}  # -> mask_sb
        self._bool_shapes = (torch.Size((batch, t, t)), torch.Size((t, t)))

    def _extra_buffers(self) -> tuple:
        if not self._tree:
            return ()
        b, t, device = self.batch, self.spec.q_len, self.device
        return (  # a bool mask is packed into these, in place
            torch.zeros((b, t), dtype=torch.int64, device=device),
            torch.empty((b, t, t), dtype=torch.int64, device=device),
            1 << torch.arange(t, dtype=torch.int64, device=device),
        )

    def _keep_extra(self, buffers: tuple) -> None:
        if buffers:
            self._bits, self._scratch, self._bit_weights = buffers

    def __repr__(self) -> str:
        return (
            f"Runner({self.spec.short_name()}, {self.config.short_name()}, "
            f"splits={self.config.kv_splits}, batch={self.batch}, max_pages={self.max_pages}, "
            f"{self.device})"
        )

    def run(
        self, q, kv_cache, block_table, seq_lens, mask=None, out=None, lse=None, *, k_scale=None
    ):
        """out [B, T, H, latent_dim] and lse [B, T, H] on torch's current stream.

        mask: None (or the spec's mask by name) unless the spec's mask is 'tree'; then a bool
        [B, T, T] / [T, T] mask (packed here into the plan's buffer: two small torch ops) or its
        bit rows, int64 [B, T] / [T] (pack once per step with kgen.mla.pack_tree_mask: nothing
        then runs besides the kernel). out= and lse= must not overlap any input. k_scale: the
        float32 [1] scale of a kv_format="fp8_tensor" cache (required there, refused elsewhere).
        """
        inputs = (q, kv_cache, block_table, seq_lens, k_scale)
        return self._run(current_stream(self._index), inputs, out, lse, mask)

    def run_on(
        self,
        stream: int,
        q,
        kv_cache,
        block_table,
        seq_lens,
        mask=None,
        out=None,
        lse=None,
        k_scale=None,
    ):
        """run on the CUDA stream of raw handle `stream` (the one-call forms, which know it)."""
        return self._run(stream, (q, kv_cache, block_table, seq_lens, k_scale), out, lse, mask)

    def _bind_extra(self, mask) -> tuple[int, int]:
        """A mask of a spec whose mask is not 'tree' (or of a plan without rows): checked."""
        check_mask(self.spec, mask, self.batch, self.device)
        return 0, 0

    def _extra_spans(self, mask) -> tuple:
        return (("mask", mask),)

    def _bind_tree_mask(self, mask) -> tuple[int, int]:
        """Point the kernel at the mask's bit rows, packing a bool mask into the plan's buffer;
        the mask's bytes."""
        try:
            dtype, shape = mask.dtype, mask.shape
            usable = mask.get_device() == self._index
        except AttributeError:
            dtype, usable = None, False
        if dtype is torch.int64:  # bit rows: [B, T] (one row per sequence) or [T] (shared)
            mask_sb = self._packed_shapes.get(shape)
            usable = usable and mask_sb is not None and mask.is_contiguous()
        else:
            usable = usable and dtype is torch.bool and shape in self._bool_shapes
        if not usable:
            check_mask(self.spec, mask, self.batch, self.device)  # raises, saying what is wrong
        p = self._params
        if dtype is torch.int64:
            p.mask = ptr = mask.data_ptr()
            p.mask_sb = mask_sb
            return ptr, ptr + mask.numel() * 8
        per_sequence = mask.dim() == 3  # else one [T, T] mask for every sequence
        scratch, bits = (
            (self._scratch, self._bits) if per_sequence else (self._scratch[0], self._bits[0])
        )
        torch.mul(mask, self._bit_weights, out=scratch)
        torch.sum(scratch, -1, out=bits)
        p.mask, p.mask_sb = self._bits.data_ptr(), self.spec.q_len if per_sequence else 0
        return extent(mask)
