"""The split-KV combine in a kernel of its own, launched with programmatic dependent launch (PDL),
against the fused combine. For each named grid case (16-bit, tensor-core path, several splits),
its shipped config is rebuilt from its rendered source with two edits (the templates are not
touched):
- the attention kernel no longer calls finish_split (it writes its partial and leaves), and
  triggers its dependents at its start (griddepcontrol.launch_dependents);
- a second entry, mla_combine, merges one piece per block (templates/mla/combine.cuh's
  merge_piece, the fused combine's pieces) after griddepcontrol.wait.

Timed as bench/time_shipped.py times (L2 flushed, median, kgen.tune.timing): the shipped fused
kernel; the attention kernel alone (no merge at all: a floor); attention then combine in plain
stream order; the same with the PDL attribute. The combine's results are checked against the
fused kernel's. Prints the attention kernel's registers beside the shipped one's (no combine code
in its function). GPU, sm_90 or later.

    PYTHONPATH=. python3 bench/pdl_combine.py [--reps N] CASE ...
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from cuda.bindings import driver  # noqa: E402
from time_shipped import case_config, shipped_configs  # noqa: E402

import kgen.mla.kernel as kernel_module  # noqa: E402
from kgen.device import check  # noqa: E402
from kgen.launch import load_module  # noqa: E402
from kgen.mla import build  # noqa: E402
from kgen.mla.layout import combine_smem  # noqa: E402
from kgen.mla.runner import runners  # noqa: E402
from kgen.mla.workload import make_workload  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.timing import Timer  # noqa: E402

COMBINE = "mla_combine"
SPLITS_MARK = "// kgen-pdl: splits "
NO_FUSED_MERGE = (
    "    finish_split<NUM_THREADS>(p, b, num_splits, reinterpret_cast<float*>(smem));\n",
    "",
)
TRIGGER = (
    "  const int split = blockIdx.y, num_splits = gridDim.y, b = blockIdx.z;\n",
    "  const int split = blockIdx.y, num_splits = gridDim.y, b = blockIdx.z;\n"
    '  asm volatile("griddepcontrol.launch_dependents;");\n',
)
COMBINE_KERNEL = """
// The combine alone: block (head group, piece, sequence) merges the fused combine's piece once
// the attention grid is complete and its writes visible.
extern "C" __global__ void __launch_bounds__(mla::NUM_THREADS) mla_combine(const mla::Params p) {
  using namespace mla;
  extern __shared__ __align__(16) unsigned char smem[];
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const Pieces pieces(COMBINE_SPLITS);
  const int piece = blockIdx.y, r0 = piece / pieces.chunks * pieces.rows;
  merge_piece<NUM_THREADS>(p, blockIdx.z, COMBINE_SPLITS, r0, min(pieces.rows, ROWS - r0),
                           piece % pieces.chunks, pieces.chunks, reinterpret_cast<float*>(smem));
}
"""

_render = kernel_module.mla_program
_splits = {"value": 0}  # the kv_splits the next build bakes into mla_combine


def separated(program):
    source = program.source
    for anchor, new in (NO_FUSED_MERGE, TRIGGER):
        assert source.count(anchor) == 1, f"anchor not found once: {anchor!r}"
        source = source.replace(anchor, new)
    splits = _splits["value"]
    source += f"\n{SPLITS_MARK}{splits}\nconstexpr int COMBINE_SPLITS = {splits};\n"
    source += COMBINE_KERNEL
    return replace(
        program,
        name=f"{program.name}_pdl{splits}",
        source=source,
        entry_points=(*program.entry_points, COMBINE),
    )


def build_separated(spec, config, arch):
    """The variant with its combine in a kernel of its own (kgen.mla.build's in-process cache,
    which knows nothing of the edit, is bypassed both ways)."""
    _splits["value"] = config.kv_splits
    kernel_module._build.cache_clear()
    kernel_module.mla_program = lambda *a, **k: separated(_render(*a, **k))
    try:
        return build(spec, config, arch)
    finally:
        kernel_module.mla_program = _render
        kernel_module._build.cache_clear()


def piece_count(rows: int, splits: int) -> int:
    """mla::Pieces(splits).count (templates/mla/combine.cuh)."""
    ranges = min(rows, splits)
    per = (rows + ranges - 1) // ranges
    chunks = 1
    while chunks < 16 and 2 * chunks * rows <= splits:
        chunks *= 2
    return (rows + per - 1) // per * chunks


def ex_config(grid, block, smem, stream, pdl: bool):
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid
    config.blockDimX, config.blockDimY, config.blockDimZ = block
    config.sharedMemBytes, config.hStream = smem, stream
    if pdl:
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        config.attrs, config.numAttrs = [attr], 1
    else:
        config.numAttrs = 0
    return config


def measure(case, config, reps: int) -> dict:
    w = make_workload(case.spec, case.seq_lens, seed=1)
    timer = Timer(torch.device("cuda"))
    fused = build(case.spec, config, "native")
    out_f, lse_f = w.poisoned_outputs()
    fused(*w.args(), out=out_f, lse=lse_f)
    fused_regs = next(iter(fused.binary.usage.values())).registers

    kernel = build_separated(case.spec, config, "native")
    out, lse = w.poisoned_outputs()
    kernel(*w.args(), out=out, lse=lse)  # plans the runner: its params and workspace
    runner = runners._last[1]
    assert runner.kernel is kernel
    usage = kernel.binary.usage
    module = load_module(kernel.binary)
    stream = torch.cuda.current_stream().cuda_stream
    launch = runner._launch
    grid_a = launch.grid
    rows, splits = kernel.layout.rows, config.kv_splits
    grid_c = (grid_a[0], piece_count(rows, splits), grid_a[2])
    block = launch.block
    smem_c = combine_smem(block[0])
    combine = module[COMBINE]
    combine.prepare(runner._index, smem_c)
    _, attention_fn = driver.cuKernelGetFunction(launch.kernel.handle)
    _, combine_fn = driver.cuKernelGetFunction(combine.handle)
    argv = launch._argv_address
    cfg_a = ex_config(grid_a, block, launch.smem, stream, pdl=False)
    cfg_plain = ex_config(grid_c, block, smem_c, stream, pdl=False)
    cfg_pdl = ex_config(grid_c, block, smem_c, stream, pdl=True)

    def attention_only():
        check(driver.cuLaunchKernelEx(cfg_a, attention_fn, argv, 0), "attention")

    def plain():
        attention_only()
        check(driver.cuLaunchKernelEx(cfg_plain, combine_fn, argv, 0), "combine")

    def pdl():
        attention_only()
        check(driver.cuLaunchKernelEx(cfg_pdl, combine_fn, argv, 0), "combine (PDL)")

    errors = {}
    for name, fn in (("plain", plain), ("pdl", pdl)):
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        errors[name] = max(
            (out.float() - out_f.float()).abs().max().item(),
            (lse - lse_f).abs().max().item(),
        )
    times = {
        "fused": timer.flushed(lambda: fused(*w.args(), out=out_f, lse=lse_f), reps).median_us,
        "attention": timer.flushed(attention_only, reps).median_us,
        "plain": timer.flushed(plain, reps).median_us,
        "pdl": timer.flushed(pdl, reps).median_us,
    }
    return {
        "regs": (fused_regs, usage["mla_attention"].registers, usage[COMBINE].registers),
        "pieces": grid_c[0] * grid_c[1] * grid_c[2],
        "times": times,
        "errors": errors,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    grid = {c.name: c for c in load_grid()}
    configs = shipped_configs()
    print(
        f"{'case':34} {'regs f/a/c':>12} {'blocks':>6} {'fused':>7} {'attn':>7} {'plain':>7} "
        f"{'pdl':>7}  max |diff| plain / pdl"
    )
    for name in args.cases:
        case, config = case_config(name, configs)
        case = grid[case] if isinstance(case, str) else case
        m = measure(case, config, args.reps)
        t, e = m["times"], m["errors"]
        regs = "/".join(str(r) for r in m["regs"])
        print(
            f"{name:34} {regs:>12} {m['pieces']:6d} {t['fused']:7.1f} {t['attention']:7.1f} "
            f"{t['plain']:7.1f} {t['pdl']:7.1f}  {e['plain']:.1e} / {e['pdl']:.1e}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
