"""One launch of each named grid case's config='auto' choice on this GPU (dense or sparse), for
Nsight Compute to profile (bench/ncu.sh). `CASE:field=value,...` overrides fields of that config
(e.g. `kimi-tp1-decode-64k:heads_per_block=64,num_warps=16,kv_splits=132`); `--kv-format` puts
the dense cases on an fp8 cache (with the config the heuristic gives that format). Outputs are
poisoned first and not checked: bench/time_shipped.py checks the same configs against the oracle.

    PYTHONPATH=. python3 bench/launch_once.py --compile [CASE ...]   # build first, in parallel
    ncu --clock-control none -k regex:mla_ ... python3 bench/launch_once.py [CASE ...]

No CASE: every grid case (kgen/tune/grid.json).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgen.mla import SparseSpec  # noqa: E402
from kgen.tune.space import load_grid, on_kv_format, parse_case_overrides  # noqa: E402


def variants(names: list[str], kv_format: str | None = None):
    """(case, config) of each named case: config='auto''s choice with the given fields, on a
    dense case's cache in `kv_format` when given."""
    import torch

    from kgen.mla.choose import choose_config, choose_sparse_config

    grid = {c.name: c for c in load_grid()}
    if kv_format:
        grid = {c.name: c for c in on_kv_format(list(grid.values()), kv_format)}
    index = torch.cuda.current_device()
    for name in names or list(grid):
        name, fields = parse_case_overrides(name)
        case = grid[name]
        if isinstance(case.spec, SparseSpec):
            config = choose_sparse_config(case.spec, case.batch, index)
        else:
            config = choose_config(case.spec, case.batch, case.max_len, index)
        yield case, dataclasses.replace(config, **fields)


def launch(case, config) -> None:
    """One launch of `config` on the case's benchmark inputs, poisoned outputs."""
    import torch

    from kgen.mla import build, build_sparse
    from kgen.mla.workload import make_workload
    from kgen.tune.sparse_trials import bench_workload

    if isinstance(case.spec, SparseSpec):
        w = bench_workload(case, torch.device("cuda"), seed=1)
        kernel = build_sparse(case.spec, config, "native")
    else:
        w = make_workload(case.spec, case.seq_lens, seed=1)
        kernel = build(case.spec, config, "native")
    out, lse = w.poisoned_outputs()
    kernel(*w.args(), out=out, lse=lse, **w.extras())
    torch.cuda.synchronize()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cases", nargs="*", metavar="CASE[:field=value,...]")
    parser.add_argument("--compile", action="store_true", help="only build the kernels")
    parser.add_argument(
        "--kv-format", help="dense cases on this cache format instead (fp8_tensor, fp8)"
    )
    args = parser.parse_args()
    if args.compile:
        from kgen.arch import resolve_arch
        from kgen.tune.sweep import compile_space

        pairs = [(case.spec, config) for case, config in variants(args.cases, args.kv_format)]
        compile_space(pairs, resolve_arch("native").name)
        return 0
    for case, config in variants(args.cases, args.kv_format):
        launch(case, config)
        print(f"{case.name}: {config.short_name()} splits={config.kv_splits}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
