"""The sparse float64 oracle at test_the_sparse_oracle_on_the_gpu_matches_it_on_the_cpu's shape
(which failed once in the twenty-seventh session, `ld/`: 1.65e-10 apart where float64 rounding
allows ~1e-12), run three times on the GPU and once on the CPU: how far apart the runs are, and
the GPU's float64 q.K^T through cuBLAS (einsum) against the same products summed without it.
Also the environment that could route float64 GEMMs elsewhere (CUBLAS_* variables).

    PYTHONPATH=. python3 bench/oracle_repeat.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kgen.mla import SparseSpec  # noqa: E402
from kgen.tune.space import Case  # noqa: E402
from kgen.tune.sparse_trials import bench_workload, gathered_rows, sparse_oracle  # noqa: E402


def main() -> int:
    print({k: v for k, v in os.environ.items() if k.startswith(("CUBLAS", "NVIDIA_TF32"))})
    print("torch", torch.__version__, "cuda", torch.version.cuda)
    case = Case("s", SparseSpec(heads=16, topk=2048), batch=2, prefix=65536)
    w = bench_workload(case, torch.device("cuda"), seed=3)
    runs = [sparse_oracle(w)[0].cpu() for _ in range(3)]
    cpu = type(w)(w.spec, w.q.cpu(), w.kv_cache.cpu(), w.indices.cpu(), w.scale)
    ref = sparse_oracle(cpu)[0]
    print(f"max |out| {ref.abs().max().item():.3e}")
    for i, run in enumerate(runs):
        print(
            f"gpu run {i}: max |diff| to cpu {(run - ref).abs().max().item():.3e}, "
            f"to gpu run 0 {(run - runs[0]).abs().max().item():.3e}"
        )
    keys, q = gathered_rows(w, torch.float64), w.q.double()
    blas = torch.einsum("bthd,btkd->bthk", q, keys)
    summed = (q[:, :, :, None, :] * keys[:, :, None, :, :]).sum(-1)
    host = torch.einsum("bthd,btkd->bthk", q.cpu(), keys.cpu())
    print(
        f"q.K^T: cuBLAS against summed {(blas - summed).abs().max().item():.3e}, "
        f"cuBLAS against cpu {(blas.cpu() - host).abs().max().item():.3e}, "
        f"summed against cpu {(summed.cpu() - host).abs().max().item():.3e}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
