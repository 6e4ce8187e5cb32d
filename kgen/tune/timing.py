"""GPU timing: CUDA events around each launch with L2 flushed first, CUDA-graph replay over
rotated inputs, and the ceilings (copy bandwidth, matmul rate) measured in the same process."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass

import torch

FLUSH_BYTES = 256 << 20  # over 4x the H200's 60 MB L2
HOST_COVER_CYCLES = 1_000_000  # ~0.5 ms of GPU spin: longer than one call's host cost


@dataclass(frozen=True)
class Timing:
    median_us: float
    p10_us: float
    p90_us: float
    runs: int

    def to_dict(self) -> dict:
        return {
            "median_us": self.median_us,
            "p10_us": self.p10_us,
            "p90_us": self.p90_us,
            "runs": self.runs,
        }


# How L2 is flushed before each timed launch. "write" (kgen's sweep and the figures of
# bench/RESULTS.md, as Triton's do_bench does it) overwrites a buffer: L2 is left full of dirty
# lines, and the timed kernel pays the write-back of those its reads evict (on the H200 8-10 us on
# the DRAM-bound batch decode cases, 1.7 us at B = 1, 0-2 us where DRAM has room:
# docs/decisions.md, timing method). "read" reads the buffer: L2 is left clean, and the events
# time the kernel's own traffic.
FLUSHES = ("write", "read")


class Timer:
    def __init__(self, device: torch.device, flush: str = "write"):
        if flush not in FLUSHES:
            raise ValueError(f"flush: expected one of {FLUSHES}, got {flush!r}")
        self.flush_buffer = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=device)
        self._flush = self.flush_buffer.zero_ if flush == "write" else self.flush_buffer.sum

    def flushed(self, fn: Callable[[], object], reps: int = 30, warmup: int = 3) -> Timing:
        """Median of `reps` launches of fn, each after flushing L2, timed with CUDA events (the
        GPU time of fn's launches: the host's time to issue them is hidden)."""
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(reps):
            self._flush()
            # Keep the GPU busy while the host prepares the launch, so the events time the GPU's
            # work, not the Python call's host cost (timed apart: bench/host_overhead.py).
            torch.cuda._sleep(HOST_COVER_CYCLES)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0)
        return _summary(times)

    def graph(self, fns: list[Callable[[], object]], replays: int = 10) -> Timing:
        """Per-call time of fns captured back to back in one CUDA graph (inputs rotate between
        them, so KV comes from DRAM when their total is over L2), replayed `replays` times."""
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for fn in fns:
                fn()
        stream.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for fn in fns:
                fn()
        graph.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(replays):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0 / len(fns))
        return _summary(times)


def _summary(times: list[float]) -> Timing:
    times = sorted(times)
    n = len(times)
    return Timing(statistics.median(times), times[n // 10], times[min(n - 1, (9 * n) // 10)], n)


def _bandwidths(timer: Timer, device: torch.device, n: int) -> dict:
    """Copy (bytes read + written) and read-only (a float sum streams at DRAM speed) GB/s."""
    src = torch.empty(n, dtype=torch.uint8, device=device).random_()
    dst = torch.empty_like(src)
    floats = src.view(torch.float32)
    copy = timer.flushed(lambda: dst.copy_(src), reps=10)
    read = timer.flushed(lambda: floats.sum(), reps=10)
    return {"copy_gbs": 2 * n / copy.median_us / 1e3, "read_gbs": n / read.median_us / 1e3}


def measure_ceilings(device: torch.device) -> dict:
    """Copy and read bandwidth, bf16 and fp32 matmul rates, measured here and now."""
    timer = Timer(device)
    ceilings = _bandwidths(timer, device, 1 << 30)
    for name, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        size = 8192
        a = torch.randn(size, size, device=device, dtype=dtype)
        b = torch.randn(size, size, device=device, dtype=dtype)
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        t = timer.flushed(lambda a=a, b=b: a @ b, reps=5)
        torch.backends.cuda.matmul.allow_tf32 = previous
        ceilings[f"{name}_tflops"] = 2 * size**3 / t.median_us / 1e6
    return ceilings
