"""The run half of plan/run, for every family: a planned call (PlannedRunner) and the runners kept
for the one-call forms (RunnerCache).

A family's runner (kgen.mla.runner.Runner, kgen.mla.sparse.runner.SparseRunner) is a
PlannedRunner given its kernel, its call's Operands (kgen.mla.operands) and its parameter
struct. Planning does everything that depends only on shapes, dtypes, device and config: the
kernel is loaded, the split workspace allocated (its counters zeroed; every launch leaves them
zero), the launch parameters packed, the planned strides written. A run binds the tensors and
launches once on torch's current stream (twice for a merge="pdl" config with several splits: the
merge kernel follows the attention kernel through programmatic dependent launch): it does not
compile, synchronise or allocate device memory (given out= and lse=), so many runs, one per
layer, can be captured in one CUDA graph.

Binding: tensors laid out as planned (contiguous, or a cache's pages at their planned padded
stride) with the planned shapes, dtypes and device (and aligned) take a fast path of identity
checks and pointer writes; anything else takes the one checker
(kgen.mla.operands.check_operands), which either names the bad tensor or binds its strides.
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections import OrderedDict

import torch

from kgen.launch import DependentLaunch, PackedLaunch, load_module
from kgen.mla import fastpath, workspace
from kgen.mla.operands import Operand, check_operands, refuse_overlap

LOG2E = 1.0 / math.log(2.0)

current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream
)  # the raw handle of torch's current stream on a device (Inductor's get_raw_stream)
current_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


class PlannedRunner:
    """A planned call of one family's kernel: `_run(stream, inputs, out, lse, extra)` per layer.

    The plan fixes the spec, the config, the named sizes in `planned` (the batch "B" and any
    other the family plans, like dense MLA's block-table width), the device and the softmax
    scale; a cache's leading size (its pages), the tensors' addresses and the values in them may
    change from call to call. A runner's workspace serves one launch at a time: run it on one
    stream (or in graphs replayed on one), and keep it alive as long as a graph that captured it.

    The family gives: `inputs` and `outputs` (Operands, in the order run passes the tensors; the
    outputs are out and lse), `params` (its kernel's parameter struct, its own fields set),
    `groups` (blocks along the grid's z: sequences or query tokens), `block_groups` (blocks
    along its x: head groups, times token groups in the dense family), and may override
    `_extra_buffers` / `_keep_extra` (more plan-time memory), `_bind_extra` (binding what run
    passes besides the tensors, like dense MLA's tree mask, before the tensors) and
    `_extra_spans` (such an input, named, for the general overlap check).
    """

    def __init__(
        self,
        kernel,
        batch: int,
        device: torch.device,
        scale: float | None,
        *,
        inputs: tuple[Operand, ...],
        outputs: tuple[Operand, Operand],
        planned: dict[str, int],
        params: ctypes.Structure,
        groups: int,
        block_groups: int,
    ):
        spec, config = kernel.spec, kernel.config
        scale = spec.default_scale if scale is None else float(scale)
        if not math.isfinite(scale):
            raise ValueError(f"scale={scale}: must be a finite float")
        self.kernel, self.spec, self.config = kernel, spec, config
        self.batch, self.device, self.scale = batch, device, scale
        self.captured = False  # set when it ran inside a CUDA-graph capture (see RunnerCache)
        self.inputs, self.outputs, self.planned = inputs, outputs, planned
        self._index = device.index if device.type == "cuda" else -1  # what get_device() says
        # with one GPU, its device is always the current one: run need not ask
        self._ask_device = device.type == "cuda" and torch.cuda.device_count() > 1
        self._operands = (*inputs, *outputs)

        out_op, lse_op = outputs
        self._out_shape = torch.Size(out_op.planned_shape(planned))
        self._lse_shape = torch.Size(lse_op.planned_shape(planned))
        # new_empty of these (no elements, no memory) is the cheapest allocation of an output
        self._out_like = torch.empty(0, dtype=out_op.torch_dtype, device=device)
        self._lse_like = torch.empty(0, dtype=lse_op.torch_dtype, device=device)
        self._extra_always = False  # whether _bind_extra runs when run passes no extra

        splits = config.kv_splits
        rows = kernel.layout.rows

        def allocate():
            buffers = workspace.allocate(
                groups, rows, spec.latent_dim, block_groups, splits, device
            )
            return buffers, self._extra_buffers()

        self.workspace, extra = own_memory(device, allocate)
        self._keep_extra(extra)
        ws = self.workspace
        self.workspace_bytes = sum(buf.nbytes for buf in vars(ws).values()) if ws else 0
        params.ws_o = ws.partials.data_ptr() if ws else 0
        params.ws_lse = ws.partial_lse.data_ptr() if ws else 0
        params.counters = ws.counters.data_ptr() if ws else 0
        params.scale_log2 = scale * LOG2E
        self._params = params
        self._set_planned_strides()
        self._bind_planned, self.fast_path_source = fastpath.binder(
            inputs, outputs, planned, self._index, type(params)
        )
        self._launch = self._packed_launch((block_groups, splits, groups)) if groups else None
        self._combine = combine_launch(kernel, groups, block_groups, self._index, params)
        # what a run sends: nothing (no rows), one launch, or the attention kernel and its merge
        self._send = None if self._launch is None else self._launch.launch
        if self._combine is not None:
            self._send = self._send_both

    def _extra_buffers(self) -> tuple:
        """Plan-time buffers besides the workspace (allocated beside it)."""
        return ()

    def _keep_extra(self, buffers: tuple) -> None:
        """Keep what _extra_buffers made."""

    def _bind_extra(self, extra) -> tuple[int, int]:
        """Bind `extra` (what run passes besides the tensors; called before they are bound, where
        `extra` is not None or _extra_always is set) and return the bytes [start, end) of the
        input it is, for the fast overlap check ((0, 0): none)."""
        return 0, 0

    def _extra_spans(self, extra) -> tuple:
        """(name, tensor) of inputs in `extra`, for the overlap check."""
        return ()

    def _packed_launch(self, grid: tuple[int, int, int]) -> PackedLaunch:
        layout = self.kernel.layout
        kernel = load_module(self.kernel.binary, self._index)[self.kernel.ENTRY]
        return PackedLaunch(
            kernel, grid, (layout.threads, 1, 1), layout.dynamic_smem, self._index, self._params
        )

    def _set_planned_strides(self) -> None:
        """The strides of tensors of the planned shapes, laid out as planned (contiguous, or
        pages padded to their planned stride)."""
        p = self._params
        for op in self._operands:
            if not op.strides or op.absent:
                continue
            shape = op.planned_shape(self.planned) or (1, *op.shape[1:])
            unit = op.elem_bytes if op.stride_unit == "bytes" else 1
            for field, stride in zip(op.strides, op.planned_strides(shape), strict=False):
                setattr(p, field, stride * unit)
        self._odd_strides = False

    def _run(self, stream: int, inputs: tuple, out, lse, extra=None):
        """Bind `extra`, then `inputs` (in the order of the family's input Operands), out and lse
        (allocated where None), and launch on `stream`."""
        given = out is not None or lse is not None
        if out is None:
            out = self._out_like.new_empty(self._out_shape)
        if lse is None:
            lse = self._lse_like.new_empty(self._lse_shape)
        lo, hi = self._bind_extra(extra) if extra is not None or self._extra_always else (0, 0)
        # planned tensors: True (bound), None (bound, but out or lse may overlap an input)
        bound = not self._odd_strides and self._bind_planned(
            self._params, inputs, out, lse, given, lo, hi
        )
        if bound is False:
            self._bind_checked(inputs, out, lse)
        if given and bound is not True:
            named = zip((op.name for op in self.inputs), inputs, strict=True)
            refuse_overlap([("out", out), ("lse", lse)], [*named, *self._extra_spans(extra)])
        if self._send is None:
            return out, lse
        if not self._ask_device or current_device() == self._index:
            self._send(stream)
        else:  # like a torch op, run on the tensors' device whatever the current one is
            with torch.cuda.device(self._index):
                self._send(stream)
        return out, lse

    def _send_both(self, stream: int) -> None:
        """The attention kernel, then the split merge that follows it (merge="pdl")."""
        self._launch.launch(stream)
        self._combine.launch(stream)

    def _bind_checked(self, inputs: tuple, out, lse) -> None:
        """Every check (InputError naming the tensor), then every pointer and stride."""
        tensors = (*inputs, out, lse)
        check_operands(self._operands, tensors, self.device, self.planned)
        p = self._params
        for op, t in zip(self._operands, tensors, strict=True):
            if t is None:
                if op.field:
                    setattr(p, op.field, 0)
                continue
            setattr(p, op.field, t.data_ptr())
            unit = t.element_size() if op.stride_unit == "bytes" else 1
            missing = len(op.shape) - t.dim()  # (min_dims) read broadcast: stride 0
            for field, stride in zip(op.strides, (*t.stride(), *[0] * missing), strict=False):
                setattr(p, field, stride * unit)
            if op.count:  # (its limits and count_most keep the value in the field's range)
                field, factor = op.count
                setattr(p, field, t.shape[0] * factor)
        # Tensors of the planned shapes laid out as planned have the planned strides (where a
        # dimension has one element its stride is never used); any other strides stay until a
        # call whose tensors are all planned writes the planned ones back (the fast path writes
        # those of a tensor that may come with fewer dimensions itself).
        self._odd_strides = not all(
            t is None or op.as_planned(t)
            for op, t in zip(self._operands, tensors, strict=True)
            if op.strides and not op.min_dims
        )


def combine_launch(kernel, groups: int, block_groups: int, device: int, params):
    """The launch of a merge="pdl" kernel's merge (mla_combine) for `groups` sequences (dense) or
    query tokens (sparse) of `block_groups` blocks each (grid.x), sent right after the attention
    kernel; None where there is nothing to merge (one split, no rows) or the merge is fused."""
    config = kernel.config
    if not (groups and config.kv_splits > 1 and config.merge == "pdl"):
        return None
    grid, block = workspace.combine_shape(
        groups, block_groups, kernel.layout.rows, kernel.spec.latent_dim, config.kv_splits
    )
    merge = load_module(kernel.binary, device)[workspace.COMBINE]
    return DependentLaunch(merge, grid, block, device, (params, ctypes.c_int(config.kv_splits)))


def own_memory(device: torch.device, allocate):
    """allocate(), run on a thread of its own: outside any CUDA-graph memory pool that takes this
    thread's allocations (torch.compile's reduce-overhead warm-up runs in one), since a runner's
    buffers outlive any one graph. That thread waits for its zeroing; the buffers are then marked
    used on this thread's stream, so freeing them later waits for its work. Inside a capture
    (where no other thread may allocate) they come from the capture's pool, zeroed in the graph.
    allocate() returns (workspace or None, a tuple of other tensors).
    """
    if device.type != "cuda" or torch.cuda.is_current_stream_capturing():
        return allocate()
    result = []

    def work():
        try:
            with torch.cuda.device(device):
                result.append(allocate())
                torch.cuda.current_stream(device).synchronize()
        except BaseException as exc:  # re-raised on the planning thread
            result.append(exc)

    thread = threading.Thread(target=work, name="kgen-plan-alloc")
    thread.start()
    thread.join()
    if isinstance(result[0], BaseException):
        raise result[0]
    stream = torch.cuda.current_stream(device)
    buffers, extra = result[0]
    for tensor in [*(vars(buffers).values() if buffers else ()), *extra]:
        tensor.record_stream(stream)
    return result[0]


class RunnerCache:
    """Runners made on demand by a kernel's call and the one-call forms (attention,
    sparse_attention): the most recently used, up to `size` of them and `workspace_bytes` of
    workspace (beyond, the least recently used go).

    A CUDA graph captured with a runner keeps pointing at its workspace, so a runner that ran
    during a capture is never freed, even when evicted. A runner first made during a capture is
    not cached (its workspace comes from the graph's memory pool, zeroed inside the graph) but
    kept alive, so that nothing else in that capture is given its memory.

    Callers look up with get(key, stream) and, on a miss, make the runner and add it. The last
    key found is remembered, so a repeat of the last call compares one key, hashing nothing.
    No capture can run on the legacy default stream (handle 0): launches there ask nothing
    about capture.
    """

    def __init__(self, size: int = 64, workspace_bytes: int = 1 << 30):
        self.size, self.workspace_bytes = size, workspace_bytes
        self._runners: OrderedDict = OrderedDict()
        self._captured: list[PlannedRunner] = []  # evicted, but a graph may use their workspace
        self._last: tuple = (None, None)  # the key and runner of the last cache hit or add
        self._lock = threading.Lock()

    def get(self, key, stream: int) -> PlannedRunner | None:
        """The cached runner for `key` (None if there is none), to launch on `stream`."""
        last_key, runner = self._last
        if key != last_key:
            with self._lock:
                runner = self._runners.get(key)
                if runner is None:
                    return None
                self._runners.move_to_end(key)
                self._last = (key, runner)
        if not runner.captured and stream and torch.cuda.is_current_stream_capturing():
            runner.captured = True
        return runner

    def add(self, key, runner: PlannedRunner, stream: int) -> PlannedRunner:
        """Cache a runner just made for `key`, to launch on `stream`; where another thread
        cached one first, that one is returned instead."""
        if stream and torch.cuda.is_current_stream_capturing():
            runner.captured = True
            with self._lock:
                self._captured.append(runner)
            return runner
        with self._lock:
            runner = self._runners.setdefault(key, runner)
            self._runners.move_to_end(key)
            while len(self._runners) > 1 and (
                len(self._runners) > self.size or self._bytes() > self.workspace_bytes
            ):
                _, old = self._runners.popitem(last=False)
                if old.captured:
                    self._captured.append(old)
            self._last = (key, runner)
        return runner

    def _bytes(self) -> int:
        return sum(r.workspace_bytes for r in self._runners.values())

    def clear(self) -> None:
        with self._lock:
            self._captured += [r for r in self._runners.values() if r.captured]
            self._runners.clear()
            self._last = (None, None)


runners = RunnerCache()  # behind a kernel's call and the one-call forms
