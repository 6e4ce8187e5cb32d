"""(Ran from bench/proto/ in the twentieth session; kept here as the record.) Prototype check and timing: bench/proto/regs_kernel.cu (KV tile in registers, V by movmatrix)
against the float64 reference, timed beside the shipped kernel of the same grid case.

    PYTHONPATH=. python3 bench/proto/run_regs.py CASE:splits [...] [--ahead 1] [--reps 20]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
from cuda.bindings import driver  # noqa: E402

from kgen.compiler import compile_cubin  # noqa: E402
from kgen.launch import Kernel, check  # noqa: E402
from kgen.mla.workload import make_workload  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.timing import Timer  # noqa: E402

SOURCE = (Path(__file__).parent / "regs_kernel.cu").read_text()


def build(arch: str, page: int, ahead: int) -> tuple[Kernel, str]:
    src = f"#define PAGE {page}\n#define AHEAD {ahead}\n" + SOURCE
    result = compile_cubin(src, arch, name="regs_kernel.cu")
    usage = " ".join(re.findall(r"Used \d+ registers|\d+ bytes spill stores", result.log))
    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")
        lib = check(driver.cuLibraryLoadData(result.cubin, None, None, 0, None, None, 0), "load")
        name = "regs_attention"
        return Kernel(name, check(driver.cuLibraryGetKernel(lib, name.encode()), name)), usage
    return None, usage


def reference(w, spec) -> torch.Tensor:
    """float64 attention of every (b, head) over its sequence: [B, H, 512]."""
    outs = []
    ps = spec.page_size
    for b, n in enumerate(w.seq_lens.tolist()):
        pos = torch.arange(n, device="cuda")
        rows = w.block_table[b, pos // ps].long() * ps + pos % ps
        k = w.kv_cache.reshape(-1, spec.head_dim)[rows].double()
        s = w.q[b, 0].double() @ k.T * w.scale
        outs.append(torch.softmax(s, -1) @ k[:, : spec.latent_dim])
    return torch.stack(outs)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--ahead", type=int, default=1)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--arch", default=None)
    args = parser.parse_args()
    arch = args.arch or "sm_%d%d" % torch.cuda.get_device_capability()
    grid = {c.name: c for c in load_grid(ROOT / "bench/grid.json")}
    timer = Timer(torch.device("cuda"))
    for item in args.cases:
        name, splits = item.split(":")
        splits = int(splits)
        case = grid[name]
        spec = case.spec
        kernel, usage = build(arch, spec.page_size, args.ahead)
        w = make_workload(spec, case.seq_lens, seed=1)
        b, h = case.batch, spec.heads
        groups = h // 16
        max_len = max(case.seq_lens)
        split_len = -(-(-(-max_len // splits)) // 16) * 16  # ceil(len / splits), whole tiles
        ws_o = torch.full((b, groups, splits, 16, 512), float("nan"), device="cuda")
        ws_lse = torch.full((b, groups, splits, 16), float("nan"), device="cuda")
        scale_log2 = w.scale / 0.6931471805599453
        cargs = [
            ctypes.c_void_p(w.q.data_ptr()),
            ctypes.c_void_p(w.kv_cache.data_ptr()),
            ctypes.c_void_p(w.block_table.data_ptr()),
            ctypes.c_void_p(w.seq_lens.data_ptr()),
            ctypes.c_void_p(ws_o.data_ptr()),
            ctypes.c_void_p(ws_lse.data_ptr()),
            ctypes.c_int(h),
            ctypes.c_int(w.block_table.shape[1]),
            ctypes.c_int(split_len),
            ctypes.c_float(scale_log2),
        ]
        stream = torch.cuda.current_stream().cuda_stream

        def launch():
            kernel.launch((splits, groups, b), (128, 1, 1), cargs, stream)

        launch()
        torch.cuda.synchronize()
        lse = ws_lse.double()
        top = lse.amax(2, keepdim=True)
        top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
        wgt = torch.exp2(lse - top)
        wgt = torch.where(torch.isfinite(lse), wgt, torch.zeros_like(wgt))
        out = (wgt[..., None] * torch.nan_to_num(ws_o.double())).sum(2) / wgt.sum(2)[..., None]
        out = out.reshape(b, h, 512)
        ref = reference(w, spec)
        err = (out - ref).abs().max().item()
        scale = ref.abs().max().item()
        t = timer.flushed(launch, reps=args.reps)
        kv_bytes = sum(case.seq_lens) * spec.head_dim * 2
        flop = 2 * sum(case.seq_lens) * h * (spec.head_dim + spec.latent_dim)
        us = t.median_us
        print(
            json.dumps(
                {
                    "case": name,
                    "splits": splits,
                    "ahead": args.ahead,
                    "usage": usage,
                    "max_abs_err": err,
                    "ref_max": scale,
                    "ok": err <= 2e-2 * max(scale, 1.0),
                    "median_us": round(us, 2),
                    "TB/s": round(kv_bytes / us / 1e6, 3),
                    "TFLOP/s": round(flop / us / 1e6, 1),
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
