"""A compiled dense MLA variant, called with torch tensors (kgen.mla.build makes one)."""

from __future__ import annotations

import functools

from kgen.mla.compiled import CompiledKernel
from kgen.mla.program import ATTENTION


class MLAKernel(CompiledKernel):
    """One compiled variant: `source`, `cubin`, `resources`; call it with torch tensors."""

    ENTRY = ATTENTION

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
        k_scale=None,
    ):
        """out [B, T, H, latent_dim] (q's dtype) and lse [B, T, H] (float32, natural log).

        mask: None (spec mask 'none' or 'causal'), or for 'tree' a bool [B, T, T] / [T, T] mask or
        its bit-packed int64 rows [B, T] / [T]. scale defaults to 1/sqrt(latent + rope).
        validate=True also checks seq_lens and page ids (this reads them back: a device sync).
        k_scale: the float32 [1] scale of a kv_format="fp8_tensor" cache (refused elsewhere).
        A plan for this call's shape is made on first use and kept (see kgen.mla.plan).
        """
        running = _running()
        try:
            index = q.get_device()
            facts = (q.shape[0], block_table.shape[1], index)
        except (AttributeError, IndexError, TypeError):
            index = -1
        if index < 0 or validate:
            self.check_inputs(q, kv_cache, block_table, seq_lens, mask, k_scale)
            if validate:
                from kgen.mla.inputs import validate_on_device

                validate_on_device(self.spec, kv_cache, block_table, seq_lens, k_scale)
        stream = running.current_stream(index)
        key = (self, *facts, scale, stream)
        runner = running.runners.get(key, stream)
        if runner is None:
            runner = running.runners.add(key, self.runner(*facts, scale), stream)
        return runner.run_on(stream, q, kv_cache, block_table, seq_lens, mask, out, lse, k_scale)

    def check_inputs(self, q, kv_cache, block_table, seq_lens, mask=None, k_scale=None) -> None:
        """The cheap checks of a call's tensors (InputError naming the first bad one)."""
        from kgen.mla.inputs import check_inputs

        vec = self.config.vec_width
        check_inputs(self.spec, vec, q, kv_cache, block_table, seq_lens, mask, k_scale=k_scale)

    def runner(self, batch: int, max_pages: int, device: int, scale: float | None = None):
        """A Runner of this kernel for `batch` sequences and a block table `max_pages` wide on
        CUDA device `device` (kgen.mla.plan chooses the kernel too)."""
        import torch

        from kgen.mla.runner import Runner

        return Runner(self, batch, max_pages, torch.device("cuda", device), scale)


@functools.cache
def _running():
    """kgen.mla.running, imported on the first call of a kernel (building one needs no torch)."""
    from kgen.mla import running

    return running
