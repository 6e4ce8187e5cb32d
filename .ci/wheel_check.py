"""CI: kgen installed from its wheel, without torch, run from outside the checkout: it imports and
builds one sm_120 kernel of every compute path and kernel family and reads the default grid, so a
module, template, header or data file missing from the wheel fails here (the checkout's own tests
read them from the source tree).
Usage: python wheel_check.py VENV (the venv the wheel was installed into)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import kgen
from kgen.mla import Config, SparseConfig, SparseSpec, Spec, build, build_sparse
from kgen.tune.space import load_grid


def main(venv: Path) -> int:
    installed = Path(kgen.__file__).resolve()
    assert installed.is_relative_to(venv.resolve()), f"kgen imported from {installed}, not {venv}"
    assert importlib.util.find_spec("torch") is None, "this check is for an install without torch"
    dense = {
        "fma": (
            Spec(heads=8, q_len=4, dtype="bfloat16", mask="tree"),
            Config(heads_per_block=8, kv_splits=16, vec_width=8, num_warps=4, block_n=32),
        ),
        "tiled": (
            Spec(heads=8, dtype="float32"),
            Config(heads_per_block=8, vec_width=4, num_warps=8, block_n=64, compute="tiled"),
        ),
        "mma": (
            Spec(heads=8, q_len=4, dtype="bfloat16", mask="causal"),
            Config(heads_per_block=8, compute="mma", num_warps=4, col_groups=4, block_n=16),
        ),
    }
    for name, (spec, config) in dense.items():
        kernel = build(spec, config, arch="sm_120")
        assert kernel.cubin, name
        print(f"{name}: {len(kernel.cubin):,d} bytes of cubin, {kernel.resources.registers} regs")
    sparse = {
        "sparse fp8": (SparseSpec(heads=16, kv_format="fp8"), SparseConfig(heads_per_block=16)),
        "sparse bf16": (
            SparseSpec(heads=64, q_len=4, kv_format="bf16", page_size=1),
            SparseConfig(heads_per_block=32, block_n=32, num_warps=8, min_blocks=1),
        ),
    }
    for name, (spec, config) in sparse.items():
        kernel = build_sparse(spec, config, arch="sm_120")
        assert kernel.cubin, name
        print(f"{name}: {len(kernel.cubin):,d} bytes of cubin, {kernel.resources.registers} regs")
    cases = load_grid()  # the default grid, package data of kgen.tune
    assert cases, "the packaged grid has no cases"
    print(f"default grid: {len(cases)} cases")
    print(f"kgen {kgen.__version__} from {installed.parent}: every family builds")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
