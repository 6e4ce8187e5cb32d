"""SparseRunner: one planned sparse MLA call shape, run once per layer: a PlannedRunner
(kgen.mla.running) of the sparse Operands (kgen.mla.sparse.inputs) and parameter struct
(kgen.mla.sparse.program). Made by kgen.mla.plan_sparse (kgen/mla/sparse/api.py); a run launches
once on torch's current stream (twice with a PDL merge): no compile, no sync and (given out= and
lse=) no allocation, so runs can be captured in a CUDA graph.
"""

from __future__ import annotations

import torch

from kgen.mla.operands import check_operands, check_tensor
from kgen.mla.running import PlannedRunner, current_stream, runners
from kgen.mla.sparse.inputs import MAX_TOKENS, operands, validate_indices
from kgen.mla.sparse.program import SparseParams


class SparseRunner(PlannedRunner):
    """A planned call: `run(q, kv_cache, indices, out=None, lse=None)` per layer.

    The plan fixes the spec (heads, q_len, topk, cache format, page size, dtype), the config, the
    batch, the device and the softmax scale; the cache's page count, the tensors' addresses and
    their contents may change from call to call. One launch at a time per runner (one stream).
    """

    def __init__(self, kernel, batch: int, device: torch.device, scale: float | None = None):
        spec = kernel.spec
        tokens = batch * spec.q_len
        if tokens > MAX_TOKENS:
            raise ValueError(
                f"batch={batch}: at most {MAX_TOKENS} query tokens (batch x q_len={spec.q_len}) "
                "per launch"
            )
        inputs, outputs = operands(spec)
        super().__init__(
            kernel,
            batch,
            device,
            scale,
            inputs=inputs,
            outputs=outputs,
            planned={"B": batch},
            params=SparseParams(topk=spec.topk),
            groups=tokens,
            block_groups=spec.heads // kernel.config.heads_per_block,
        )

    @classmethod
    def cached(cls, kernel, q, scale: float | None) -> SparseRunner:
        """The kept runner of `kernel` for q's batch and device (made on first use)."""
        check_tensor("q", q, None, kernel.spec.torch_dtype, 4)  # a CUDA tensor: it has a device
        index = q.get_device()
        batch, stream = q.shape[0], current_stream(index)
        key = ("sparse", kernel, batch, index, scale, stream)
        return runners.find(
            key, stream, lambda: cls(kernel, batch, torch.device("cuda", index), scale)
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
        if validate:
            self._validate(q, kv_cache, indices)
        return self._run(current_stream(self._index), (q, kv_cache, indices), out, lse)

    def run_on(self, stream: int, q, kv_cache, indices, out=None, lse=None, validate=False):
        """run on the CUDA stream of raw handle `stream` (the one-call forms, which know it)."""
        if validate:
            self._validate(q, kv_cache, indices)
        return self._run(stream, (q, kv_cache, indices), out, lse)

    def _validate(self, q, kv_cache, indices) -> None:
        """The cheap checks (naming a bad tensor), then every slot of `indices` (a device sync)."""
        check_operands(self.inputs, (q, kv_cache, indices), self.device, self.planned)
        validate_indices(kv_cache, indices)
