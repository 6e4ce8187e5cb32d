"""The sparse float64 oracle at test_the_sparse_oracle_on_the_gpu_matches_it_on_the_cpu's shape,
run three times on the GPU and once on the CPU: how far apart the runs are, against the outputs'
magnitude (is the GPU's float64 result repeatable?).

    PYTHONPATH=. python3 bench/oracle_repeat.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kgen.mla import SparseSpec  # noqa: E402
from kgen.tune.space import Case  # noqa: E402
from kgen.tune.sparse_trials import bench_workload, sparse_oracle  # noqa: E402

case = Case("s", SparseSpec(heads=16, topk=2048), batch=2, prefix=65536)
w = bench_workload(case, torch.device("cuda"), seed=3)
runs = [sparse_oracle(w)[0].cpu() for _ in range(3)]
cpu = type(w)(w.spec, w.q.cpu(), w.kv_cache.cpu(), w.indices.cpu(), w.scale)
ref = sparse_oracle(cpu)[0]
print(f"max |out| {ref.abs().max().item():.3e}, mean |out| {ref.abs().mean().item():.3e}")
for i, r in enumerate(runs):
    print(
        f"gpu run {i}: max |diff| to cpu {(r - ref).abs().max().item():.3e}, "
        f"to gpu run 0 {(r - runs[0]).abs().max().item():.3e}"
    )
