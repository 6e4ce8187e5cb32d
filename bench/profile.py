"""One launch per (case, config) for Nsight Compute: the FMA path's best config before and the
shipped tensor-core config after, on the grid cases furthest from their targets; or, given case
names, only the config each of them gets (bench/stalls.sh), sparse cases (dsv32-sparse-*) too;
`CASE:field=value,...` overrides fields of that config (e.g.
`kimi-tp1-decode-64k:heads_per_block=64,num_warps=16,kv_splits=132`).

    python3 bench/profile.py --compile [CASE ...]   # build the kernels first (in parallel, no ncu)
    ncu --clock-control none -k regex:mla_attention --section SpeedOfLight \\
        --section ComputeWorkloadAnalysis --section WarpStateStats --section Occupancy \\
        --csv --page details python3 bench/profile.py > ncu.csv
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from kgen.mla import Config, SparseSpec, build, build_sparse  # noqa: E402
from kgen.mla.choose import choose_config  # noqa: E402
from kgen.mla.sparse.choose import choose_sparse_config  # noqa: E402
from kgen.mla.workload import make_workload  # noqa: E402
from kgen.tune.space import load_grid, parse_case_overrides  # noqa: E402
from kgen.tune.sparse_trials import bench_workload  # noqa: E402

BEFORE = {  # the FMA winners of the 2026-11-29 sweep (bench/RESULTS.md)
    "kimi-tp8-verify-tree": Config(heads_per_block=1, kv_splits=33, smem_stages=3, block_n=16),
    "kimi-tp8-verify-batch": Config(heads_per_block=1, kv_splits=3, smem_stages=2, block_n=16),
    "kimi-tp1-decode-64k": Config(
        heads_per_block=32, kv_splits=66, smem_stages=2, num_warps=8, block_n=16
    ),
}


def variants(names: list[str]):
    """(case, label, config) for each profiled launch: BEFORE's cases before and after, or only
    the chosen config of each named case."""
    grid = {c.name: c for c in load_grid()}
    index = torch.cuda.current_device()
    for name in names or BEFORE:
        name, fields = parse_case_overrides(name)
        case = grid[name]
        if not names:
            yield case, "before", BEFORE[name]
        if isinstance(case.spec, SparseSpec):
            config = choose_sparse_config(case.spec, case.batch, index)
        else:
            config = choose_config(case.spec, case.batch, case.max_len, index)
        yield case, "after", dataclasses.replace(config, **fields)


def launch(case, config) -> None:
    """One launch of `config` on the case's benchmark inputs, poisoned outputs."""
    if isinstance(case.spec, SparseSpec):
        w = bench_workload(case, torch.device("cuda"), seed=1)
        kernel = build_sparse(case.spec, config, "native")
    else:
        w = make_workload(case.spec, case.seq_lens, seed=1)
        kernel = build(case.spec, config, "native")
    out, lse = w.poisoned_outputs()
    kernel(*w.args(), out=out, lse=lse)
    torch.cuda.synchronize()


def main() -> int:
    names = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--compile" in sys.argv:
        from kgen.arch import resolve_arch
        from kgen.tune.sweep import compile_space

        arch = resolve_arch("native").name
        for case, _, config in variants(names):
            if isinstance(case.spec, SparseSpec):
                build_sparse(case.spec, config, arch)
        dense = [(c.spec, f) for c, _, f in variants(names) if not isinstance(c.spec, SparseSpec)]
        compile_space(dense, arch)
        return 0
    for case, label, config in variants(names):
        launch(case, config)
        print(f"{case.name} {label}: {config.short_name()} splits={config.kv_splits}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
