"""The read bandwidth the sparse family's gathers can reach: each sparse grid case's own cache and
indices (kgen.tune.sparse_trials.bench_workload: batch x 64k tokens of 656 bytes in shuffled
pages, 2048 distinct listed rows per query token), every listed row read once by a kernel that
does nothing else (bench/gather_ceiling.cu), L2 flushed before each launch, median. Beside it:
the same bytes read from consecutive rows (the streaming rate the issue's floor assumes), and
torch's index_select of the rows (which also writes them), and the launch with no rows.

    PYTHONPATH=. python3 bench/gather_ceiling.py [CASE ...]   # default: the sparse batch cases
"""

from __future__ import annotations

import ctypes
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from cuda.bindings import driver  # noqa: E402

from kgen.compiler import compile_cubin  # noqa: E402
from kgen.launch import Kernel, check  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.sparse_trials import bench_workload  # noqa: E402
from kgen.tune.timing import Timer  # noqa: E402

CASES = ("dsv32-sparse-h16-b32", "dsv32-sparse-h16-b128", "dsv32-sparse-h16-verify")
SOURCE = (Path(__file__).parent / "gather_ceiling.cu").read_text()


# (warp_rows, threads, unroll, splits per 8 blocks an SM): the variants timed per case
VARIANTS = (
    (0, 256, 4, 1),
    (0, 256, 2, 2),
    (0, 512, 4, 1),
    (1, 256, 2, 1),
    (1, 256, 4, 1),
    (1, 512, 2, 1),
    (1, 256, 2, 2),
)


@functools.cache  # one compile and load per variant, whichever cases time it
def gather_kernel(arch: str, chunks: int, unroll: int, listed: bool, warp_rows: int) -> Kernel:
    defines = (
        f"#define CHUNKS {chunks}\n#define UNROLL {unroll}\n#define LISTED {int(listed)}\n"
        f"#define WARP_ROWS {warp_rows}\n"
    )
    name = f"gather_c{chunks}_u{unroll}_l{int(listed)}_w{warp_rows}.cu"
    result = compile_cubin(defines + SOURCE, arch, name=name)
    library = check(driver.cuLibraryLoadData(result.cubin, None, None, 0, None, None, 0), "load")
    return Kernel("gather_rows", check(driver.cuLibraryGetKernel(library, b"gather_rows"), name))


def main(names: list[str]) -> None:
    props = torch.cuda.get_device_properties(0)
    arch, sms = f"sm_{props.major}{props.minor}", props.multi_processor_count
    grid = {c.name: c for c in load_grid()}
    device = torch.device("cuda")
    timer = Timer(device)
    sink = torch.zeros(1, dtype=torch.int32, device=device)
    print(f"{props.name}, {sms} SMs; GB/s of listed rows read (L2 flushed, median of 20)")
    print(f"{'case':26s} {'rows':>8s} {'MB':>7s} {'kernel':28s} {'us':>8s} {'GB/s':>7s}")
    for name in names or CASES:
        case = grid[name]
        w = bench_workload(case, device, seed=0)
        row_bytes = w.kv_cache.shape[-1]
        assert row_bytes % 16 == 0, row_bytes
        chunks = row_bytes // 16
        tokens = w.indices.shape[0] * w.indices.shape[1]
        topk = w.indices.shape[2]
        listed_rows = int((w.indices >= 0).sum())
        nbytes = listed_rows * row_bytes
        rows = []
        for warp_rows, threads, unroll, waves in VARIANTS:
            # about 8 blocks of 256 threads per SM, times `waves`
            splits = max(1, waves * 8 * sms * 256 // threads // tokens)
            for listed in (True, False):
                kernel = gather_kernel(arch, chunks, unroll, listed, warp_rows)
                args = [
                    ctypes.c_void_p(w.kv_cache.data_ptr()),
                    ctypes.c_void_p(w.indices.data_ptr()),
                    ctypes.c_int(topk),
                    ctypes.c_void_p(sink.data_ptr()),
                ]
                how = "rows" if warp_rows else "flat"
                label = f"{'listed' if listed else 'consec'} {how} t{threads} u{unroll} s{splits}"
                t = timer.flushed(
                    lambda k=kernel, a=args, g=(splits, tokens, 1), b=(threads, 1, 1): k.launch(
                        g, b, a
                    ),
                    reps=20,
                )
                rows.append((label, t.median_us))
        empty = [ctypes.c_void_p(w.kv_cache.data_ptr()), ctypes.c_void_p(w.indices.data_ptr())]
        empty += [ctypes.c_int(0), ctypes.c_void_p(sink.data_ptr())]  # topk 0: no rows
        t = timer.flushed(
            lambda k=kernel, a=empty, g=(1, tokens, 1): k.launch(g, (256, 1, 1), a), reps=20
        )
        rows.append(("the same launch, no rows", t.median_us))
        flat = w.kv_cache.view(-1, row_bytes).view(torch.int32)
        index = w.indices.reshape(-1).long().clamp_min(0)
        t = timer.flushed(lambda f=flat, i=index: torch.index_select(f, 0, i), reps=20)
        rows.append(("torch.index_select (r+w)", t.median_us))
        for label, us in rows:
            print(
                f"{name:26s} {listed_rows:8d} {nbytes / 1e6:7.1f} {label:28s} {us:8.1f} "
                f"{nbytes / us / 1e3:7.0f}"
            )
        del w
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main(sys.argv[1:])
