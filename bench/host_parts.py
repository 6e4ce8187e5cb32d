"""What runner.run's host time is made of: each tensor attribute read its fast path makes and the
stream and capture queries, timed alone (timeit, best of 5 rounds of 20000 calls) on a q tensor of
bench/host_overhead.py's decode call. (The launch itself: bench/host_overhead.py.)

    PYTHONPATH=. python3 bench/host_parts.py      # on a GPU (CPU tensors with --cpu)
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kgen.mla.runner import current_stream  # noqa: E402

CALLS = 20000


def main() -> int:
    device = "cpu" if "--cpu" in sys.argv else "cuda"
    q = torch.zeros(1, 1, 16, 576, dtype=torch.bfloat16, device=device)
    shape = torch.Size((1, 1, 16, 576))
    dtype = torch.bfloat16
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
        "current_stream(0)": (lambda: current_stream(0)) if device == "cuda" else (lambda: 0),
        "torch.cuda.is_current_stream_capturing()": (
            torch.cuda.is_current_stream_capturing if device == "cuda" else (lambda: 0)
        ),
        "empty lambda": lambda: None,
    }
    for name, call in rows.items():
        best = min(timeit.repeat(call, number=CALLS, repeat=5)) / CALLS * 1e9
        print(f"{name:44s} {best:7.1f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
