"""Host cost of one call: 3000 back-to-back calls of a tiny decode problem, then one sync (how
long it waited says whether the GPU, not the host, set the pace); per-call microseconds, median
of 5 rounds in which the rows take turns, beside a one-element torch.add for scale and the bare
cuLaunchKernel floor (prepacked arguments, cached handles). With --parts, what runner.run's host
time is made of instead: each tensor attribute read its fast path makes and the stream and
capture queries, timed alone (timeit, best of 5 rounds of 20000 calls) on the decode call's q.

    PYTHONPATH=. python3 bench/host_overhead.py [--parts]          # on a GPU
    PYTHONPATH=. python3 bench/host_overhead.py [--parts] --cpu    # no GPU: launch mocked
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from cuda.bindings import driver  # noqa: E402

import kgen  # noqa: E402
from kgen.launch import cu_stream  # noqa: E402
from kgen.mla import Config, Spec, fastpath, pack_tree_mask, running  # noqa: E402
from kgen.mla import runner as runner_module  # noqa: E402
from kgen.mla.workload import make_workload  # noqa: E402

CALLS, ROUNDS = 3000, 5
PART_CALLS = 20000
DECODE = Spec(heads=16, q_len=1, dtype="bfloat16", page_size=64, mask="none")
VERIFY = Spec(heads=16, q_len=4, dtype="bfloat16", page_size=64, mask="tree")
CONFIG = Config(  # 16 rows per block for either spec: one m16 tile
    heads_per_block=16,
    kv_splits=1,
    vec_width=8,
    smem_stages=3,
    num_warps=4,
    block_n=16,
    compute="mma",
    col_groups=4,
)
CONFIGS = {DECODE: CONFIG, VERIFY: Config(**{**CONFIG.to_dict(), "heads_per_block": 4})}


def per_call_us(rows, sync) -> list[tuple[float, float, float]]:
    """For each row: the median and spread (max - min) over ROUNDS of the host time per call of
    CALLS calls, and the median time the sync after them waited (large where the GPU, not the
    host, set the pace). The rows take turns within each round, so a drift of the host's speed
    during the run weighs on every row alike."""
    for _, call in rows:
        for _ in range(200):
            call()
    sync()
    host = [[] for _ in rows]
    drain = [[] for _ in rows]
    for _ in range(ROUNDS):
        for k, (_, call) in enumerate(rows):
            start = time.perf_counter()
            for _ in range(CALLS):
                call()
            end = time.perf_counter()
            sync()
            host[k].append((end - start) / CALLS * 1e6)
            drain[k].append((time.perf_counter() - end) * 1e6)
    return [
        (statistics.median(h), max(h) - min(h), statistics.median(d))
        for h, d in zip(host, drain, strict=True)
    ]


def gpu_rows():
    w = make_workload(DECODE, [16], seed=0)
    tree = make_workload(VERIFY, [16], seed=0)
    runner = kgen.mla.plan(DECODE, 1, w.block_table.shape[1], config=CONFIG, scale=w.scale)
    verifier = kgen.mla.plan(VERIFY, 1, tree.block_table.shape[1], config=CONFIGS[VERIFY])
    out, lse = w.poisoned_outputs()
    tree_out, tree_lse = tree.poisoned_outputs()
    bits = pack_tree_mask(tree.mask)
    runner.run(w.q, w.kv_cache, w.block_table, w.seq_lens, out=out, lse=lse)  # fills the pointers
    packed = runner._launch
    head = (packed.kernel.handle, *packed.grid, *packed.block, packed.smem)
    argv = packed._argv_address
    stream = runner_module.current_stream(runner._index)
    handle = cu_stream(stream)
    a, b = torch.zeros(1, device="cuda"), torch.zeros(1, device="cuda")
    return [
        ("torch.add, one element", lambda: torch.add(a, b)),
        (
            "cuLaunchKernel, prepacked (floor)",
            lambda: driver.cuLaunchKernel(*head, handle, argv, 0),
        ),
        *launch_alternatives(head, handle, argv),
        ("PackedLaunch.launch", lambda: packed.launch(stream)),
        (
            "runner.run, out/lse given",
            lambda: runner.run(w.q, w.kv_cache, w.block_table, w.seq_lens, out=out, lse=lse),
        ),
        ("runner.run, outputs allocated", lambda: runner.run(*w.args()[:4])),
        (
            "runner.run, tree, packed mask",
            lambda: verifier.run(
                tree.q, tree.kv_cache, tree.block_table, tree.seq_lens, bits, tree_out, tree_lse
            ),
        ),
        (
            "runner.run, tree, bool mask",
            lambda: verifier.run(
                tree.q,
                tree.kv_cache,
                tree.block_table,
                tree.seq_lens,
                tree.mask,
                tree_out,
                tree_lse,
            ),
        ),
        ("kgen.mla.attention", lambda: kgen.mla.attention(*w.args(), config=CONFIG)),
        ("kgen.mla.attention, config='auto'", lambda: kgen.mla.attention(*w.args())),
        ("prebuilt kernel(...)", lambda: runner.kernel(*w.args())),
    ]


def launch_alternatives(head, stream, argv):
    """The same prepacked launch through the other routes cuda-python offers: the context's
    CUfunction instead of the library's CUkernel, cuLaunchKernelEx with a config made once."""
    kernel, grid, block, smem = head[0], head[1:4], head[4:7], head[7]
    _, function = driver.cuKernelGetFunction(kernel)
    function_head = (function, *head[1:])
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid
    config.blockDimX, config.blockDimY, config.blockDimZ = block
    config.sharedMemBytes, config.hStream, config.numAttrs = smem, stream, 0
    return [
        (
            "cuLaunchKernel, CUfunction handle",
            lambda: driver.cuLaunchKernel(*function_head, stream, argv, 0),
        ),
        (
            "cuLaunchKernelEx, config made once",
            lambda: driver.cuLaunchKernelEx(config, function, argv, 0),
        ),
    ]


def cpu_rows():
    """run's Python alone: Runners on CPU tensors whose launch does nothing; for attention and
    kernel(...), whose CPU tensors are refused, the tensors say they are on device 0."""
    from kgen.arch import ARCHS
    from kgen.mla import api, layout_for
    from kgen.mla.kernel import MLAKernel

    runner_module.current_stream = running.current_stream = lambda index: 0
    running.current_device = lambda: -1
    runner_module.Runner._packed_launch = lambda self, grid: types.SimpleNamespace(
        launch=lambda stream: None
    )
    rows = []
    for spec in (DECODE, VERIFY):
        kernel = types.SimpleNamespace(
            spec=spec,
            config=CONFIGS[spec],
            layout=layout_for(spec, CONFIGS[spec], ARCHS["sm_120"]),
            binary=None,
        )
        runner = runner_module.Runner(kernel, 1, 1, torch.device("cpu"))
        q = torch.zeros(1, spec.q_len, spec.heads, spec.head_dim, dtype=torch.bfloat16)
        kv = torch.zeros(4, spec.page_size, spec.head_dim, dtype=torch.bfloat16)
        table, lens = torch.zeros(1, 1, dtype=torch.int32), torch.ones(1, dtype=torch.int32)
        out = torch.zeros(1, spec.q_len, spec.heads, spec.latent_dim, dtype=torch.bfloat16)
        lse = torch.zeros(1, spec.q_len, spec.heads)
        bits = torch.ones(1, spec.q_len, dtype=torch.int64) if spec.mask == "tree" else None
        rows.append(
            (
                f"runner.run ({spec.mask}), out/lse given, launch mocked",
                lambda r=runner, a=(q, kv, table, lens, bits, out, lse): r.run(*a),
            )
        )
        if spec.mask == "none":
            rows.append(
                (
                    "runner.run (none), outputs allocated, mocked",
                    lambda r=runner, a=(q, kv, table, lens): r.run(*a),
                )
            )

    rows += sparse_cpu_rows()

    # attention and kernel(...) on "device 0": a CPU runner, planned once and cached
    kernel = MLAKernel(
        DECODE, CONFIG, ARCHS["sm_120"], layout_for(DECODE, CONFIG, ARCHS["sm_120"]), None
    )
    runner = runner_module.Runner(kernel, 1, 1, torch.device("cpu"))
    runner._index = 0
    # its fast path, written for device 0 (the planned device is a constant in it)
    runner._bind_planned, _ = fastpath.binder(
        runner.inputs, runner.outputs, runner.planned, 0, type(runner._params)
    )
    running.current_device = lambda: 0  # where a Runner asks (more than one GPU)
    api._plan = lambda *args: runner
    api.current_stream = runner_module.current_stream
    kernel.runner = lambda *args: runner
    torch.cuda.is_current_stream_capturing = lambda: False  # the CPU build has none
    q = torch.zeros(1, 1, DECODE.heads, DECODE.head_dim, dtype=torch.bfloat16)
    kv = torch.zeros(4, DECODE.page_size, DECODE.head_dim, dtype=torch.bfloat16)
    table, lens = torch.zeros(1, 1, dtype=torch.int32), torch.ones(1, dtype=torch.int32)
    for t in (q, kv, table, lens):
        t.get_device = lambda: 0
    args = (q, kv, table, lens)
    rows += [
        ("kgen.mla.attention, mocked", lambda: kgen.mla.attention(*args, config=CONFIG)),
        ("kgen.mla.attention, config='auto', mocked", lambda: kgen.mla.attention(*args)),
        ("prebuilt kernel(...), mocked", lambda: kernel(*args)),
    ]
    a, b = torch.zeros(1), torch.zeros(1)
    return [("torch.add, one element (CPU)", lambda: torch.add(a, b)), *rows]


def sparse_cpu_rows():
    """SparseRunner.run's Python alone (launch mocked), out/lse given: the V3.2 op over an fp8
    cache, and the V4 op over two v4_fp8 caches with per-row lengths and a sink."""
    from kgen.arch import ARCHS
    from kgen.mla import SparseConfig, SparseSpec, quantize_fp8, sparse_layout_for
    from kgen.mla.sparse import runner as sparse_runner

    sparse_runner.current_stream = lambda index: 0
    sparse_runner.SparseRunner._packed_launch = lambda self, grid: types.SimpleNamespace(
        launch=lambda stream: None
    )
    v32 = SparseSpec(heads=16, q_len=1, topk=2048, kv_format="fp8", page_size=64)
    v4 = SparseSpec(
        heads=16, q_len=1, topk=512, kv_format="v4_fp8", page_size=64, extra_topk=128,
        extra_page_size=64,
    )  # fmt: skip
    rows = []
    for name, spec in (("V3.2 fp8", v32), ("V4, 2 caches", v4)):
        config = SparseConfig(heads_per_block=16)
        kernel = types.SimpleNamespace(
            spec=spec, config=config, layout=sparse_layout_for(spec, config, ARCHS["sm_120"])
        )
        runner = sparse_runner.SparseRunner(kernel, 1, torch.device("cpu"))
        width = spec.head_dim
        q = torch.zeros(1, 1, spec.heads, width, dtype=torch.bfloat16)
        fmt = {"format": spec.kv_format}
        kv = quantize_fp8(torch.zeros(4, spec.page_size, width), **fmt)
        idx = torch.zeros(1, 1, spec.topk, dtype=torch.int32)
        out = torch.zeros(1, 1, spec.heads, 512, dtype=torch.bfloat16)
        lse = torch.zeros(1, 1, spec.heads)
        v4_args = {}
        if spec.v4_op:
            v4_args = {
                "topk_length": torch.ones(1, 1, dtype=torch.int32),
                "attn_sink": torch.zeros(spec.heads),
                "extra_kv_cache": quantize_fp8(torch.zeros(2, spec.extra_page_size, width), **fmt),
                "extra_indices": torch.zeros(1, 1, spec.extra_topk, dtype=torch.int32),
                "extra_topk_length": torch.ones(1, dtype=torch.int32),
            }
        rows.append(
            (
                f"sparse run ({name}), out/lse given, mocked",
                lambda r=runner, a=(q, kv, idx, out, lse), k=v4_args: r.run(*a, **k),
            )
        )
    return rows


def parts(device: str) -> None:
    """Each read of runner.run's fast path alone, in ns a call."""
    from kgen.mla.running import current_stream

    q = torch.zeros(1, 1, 16, 576, dtype=torch.bfloat16, device=device)
    shape = torch.Size((1, 1, 16, 576))
    dtype = torch.bfloat16
    on_gpu = device == "cuda"
    rows = {
        "q.dtype": lambda: q.dtype,
        "q.dtype is dtype": lambda: q.dtype is dtype,
        "q.shape": lambda: q.shape,
        "q.shape == Size": lambda: q.shape == shape,
        "q.get_device()": lambda: q.get_device(),
        "q.is_cuda": lambda: q.is_cuda,
        "q.is_contiguous()": lambda: q.is_contiguous(),
        "q.stride()": lambda: q.stride(),
        "q.data_ptr()": lambda: q.data_ptr(),
        "q.untyped_storage().data_ptr()": lambda: q.untyped_storage().data_ptr(),
        "type(q) is Tensor": lambda: type(q) is torch.Tensor,
        "(q.dtype, q.shape) == planned": lambda: (q.dtype, q.shape) == (dtype, shape),
        "current_stream(0)": (lambda: current_stream(0)) if on_gpu else (lambda: 0),
        "torch.cuda.is_current_stream_capturing()": (
            torch.cuda.is_current_stream_capturing if on_gpu else (lambda: 0)
        ),
        "empty lambda": lambda: None,
    }
    for name, call in rows.items():
        best = min(timeit.repeat(call, number=PART_CALLS, repeat=5)) / PART_CALLS * 1e9
        print(f"{name:44s} {best:7.1f} ns")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cpu", action="store_true", help="no GPU: CPU tensors, launch mocked")
    parser.add_argument("--parts", action="store_true", help="runner.run's reads, one by one")
    args = parser.parse_args()
    on_cpu = args.cpu
    if args.parts:
        parts("cpu" if on_cpu else "cuda")
        return 0
    rows = cpu_rows() if on_cpu else gpu_rows()
    sync = (lambda: None) if on_cpu else torch.cuda.synchronize
    where = "CPU (launch mocked)" if on_cpu else torch.cuda.get_device_name()
    print(f"host cost per call, {CALLS} back-to-back calls x {ROUNDS} rounds, {where}")
    base = None
    for (name, _), (median, spread, drain) in zip(rows, per_call_us(rows, sync), strict=True):
        base = base or median
        print(
            f"{name:48s} {median:7.2f} us  (spread {spread:5.2f})  {median / base:5.2f}x add"
            f"  (sync after: {drain:6.0f} us)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
