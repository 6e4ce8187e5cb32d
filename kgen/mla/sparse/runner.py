"""SparseRunner: one planned sparse MLA call shape, run once per layer: a PlannedRunner
(kgen.mla.running) of the sparse Operands (kgen.mla.sparse.inputs) and parameter struct
(kgen.mla.sparse.program), the V3.2 op's or the V4 op's as the spec says. Made by
kgen.mla.plan_sparse (kgen/mla/sparse/api.py); a run launches once on torch's current stream
(twice with a PDL merge): no compile, no sync and (given out= and lse=) no allocation, so runs
can be captured in a CUDA graph.
"""

from __future__ import annotations

import torch

from kgen.mla.operands import check_operands, check_tensor
from kgen.mla.running import PlannedRunner, current_stream, runners
from kgen.mla.sparse.inputs import MAX_TOKENS, fixed_fields, operands, validate_indices
from kgen.mla.sparse.program import params_type
from kgen.mla.spec import head_groups_of


class SparseRunner(PlannedRunner):
    """A planned call: `run(q, kv_cache, indices, out=None, lse=None)` per layer (the V4 op:
    with its lengths, sink and second cache by keyword).

    The plan fixes the spec (heads, q_len, topk, cache format, page sizes, dtype, the second
    list's extra_topk), the config, the batch, the device and the softmax scale; the caches' page
    counts, the tensors' addresses and their contents may change from call to call. One launch
    at a time per runner (one stream).
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
            params=params_type(spec)(**fixed_fields(spec)),
            groups=tokens,
            # the last head group may hold fewer heads (ragged)
            block_groups=head_groups_of(spec, kernel.config),
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
        checks every listed slot (a device sync); out= and lse= must not overlap inputs. The V4
        op (a 512-wide kv_format) also takes the lengths of its lists, its sink and its second
        cache (see kgen.mla.sparse_attention)."""
        inputs = (
            q,
            kv_cache,
            indices,
            topk_length,
            attn_sink,
            extra_kv_cache,
            extra_indices,
            extra_topk_length,
        )
        if validate:
            self._validate(inputs)
        return self._run(current_stream(self._index), inputs, out, lse)

    def run_on(self, stream: int, inputs: tuple, out=None, lse=None, validate=False):
        """run on the CUDA stream of raw handle `stream` (the one-call forms, which know it), of
        the inputs in the description's order (kgen.mla.sparse.inputs.operands)."""
        if validate:
            self._validate(inputs)
        return self._run(stream, inputs, out, lse)

    def _validate(self, inputs: tuple) -> None:
        """The cheap checks (naming a bad tensor), then every listed slot (a device sync): of
        each list, the entries within its lengths."""
        check_operands(self.inputs, inputs, self.device, self.planned)
        q, kv_cache, indices, topk_length, _, extra_kv_cache, extra_indices, extra_length = inputs
        validate_indices(kv_cache, indices, length=topk_length)
        if extra_indices is not None:
            validate_indices(
                extra_kv_cache, extra_indices, "extra_indices", "extra_kv_cache", extra_length
            )
