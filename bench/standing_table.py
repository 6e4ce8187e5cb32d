"""The standing table of bench/RESULTS.md: every grid case's time with its shipped config, its
share of the roofline floor, the peers measured, and the heuristic default beside the shipped
config (config='auto' on a GPU without tuned entries). Markdown to stdout.

On a GPU, --out DIR times every grid case (bench/time_shipped.py: shipped configs, then --default,
then --torch, then --gather for the sparse cases, then the dense 16-bit cases on an fp8_tensor
cache with the configs shipped for it, the heuristic's where none is; JSON lines in
DIR/shipped.jsonl, default.jsonl, torch.jsonl, gather.jsonl, fp8.jsonl and, for cases with no
fp8 config shipped, fp8-default.jsonl), writes DIR/device.json
(GPU, date, NVRTC, the read bandwidth and fp32 rate measured in the same run, commit) and prints
the table. --from-json DIR prints it from those files, no GPU needed. --compare DIR adds another
run's times as columns (DIR as --out writes it, or bench/retime.py's retime.json and
retime-sparse.json beside a device.json, as the H200 run of bench/results/h200-2026-12-04 is).

    PYTHONPATH=. python3 bench/standing_table.py --out bench/results/<gpu>-<date> [--reps 15]
    python3 bench/standing_table.py --from-json bench/results/h100-2026-12-06 \\
        --compare bench/results/h200-2026-12-04

Floor = max(bytes / read bandwidth, FLOP / peak): bytes = the unique KV bytes + q + out (sparse:
the gathered cache rows, B x T x topk x 656 for fp8; V4: B x T x (topk + extra_topk) x 584),
FLOP = 2 x (D + 512) x H x the positions each query row sees (D = 576; 512 for V4); peak =
645 TFLOP/s for the 16-bit cases (back-to-back mma.sync m16n8k16, the tensor-core instruction
sm_120 has; measured on the H200) and the fp32 matmul rate for float32 (shared/design/gpu.md).
Bound: which of the two is larger.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from time_shipped import shipped_configs  # noqa: E402

from kgen.mla import SparseSpec  # noqa: E402
from kgen.tune import report  # noqa: E402
from kgen.tune.family import FAMILIES  # noqa: E402
from kgen.tune.space import load_grid, on_kv_format  # noqa: E402

FP32_TFLOPS = 51.0  # cuBLAS fp32 without TF32 on the H200 (shared/design/gpu.md)
# The other MLA kernels, measured on the H200 with the same timing (L2 flushed by writing, median;
# verification with a causal chain of the same length, their kernels having no tree mask): issue
# 9's table, 2026-11-30.
PEERS_GPU, PEERS_DEVICE = "H200", "H200, 2026-11-30"
FLASHINFER = {  # FlashInfer's FA2 MLA template (mma.sync, 147+ KB of shared memory a block)
    "kimi-tp8-decode-long": 43.5,
    "kimi-tp8-decode-batch": 93,
    "dsv3-tp8-decode-batch": 169,
    "dsv3-tp8-decode-long": 294,
    "dsv3-tp8-decode-wide": 179,
    "kimi-tp1-decode": 45.7,
    "kimi-tp1-decode-64k": 80,
    "kimi-tp1-batch": 62,
    "dsv3-tp1-batch": 92,
    "kimi-tp8-verify-tree": 47,
    "kimi-tp8-verify-batch": 62,
    "kimi-tp1-verify-tree": 158,
    "page1-decode": 98,
}
FLASHMLA = {  # FlashMLA (wgmma: Hopper only)
    "kimi-tp8-decode-long": 44.8,
    "kimi-tp8-decode-batch": 56,
    "dsv3-tp8-decode-batch": 97,
    "dsv3-tp8-decode-long": 171,
    "dsv3-tp8-decode-wide": 95,
    "kimi-tp1-decode": 51.7,
    "kimi-tp1-decode-64k": 64,
    "kimi-tp1-batch": 42,
    "dsv3-tp1-batch": 53,
    "kimi-tp8-verify-tree": 44,
    "kimi-tp8-verify-batch": 43,
    "kimi-tp1-verify-tree": 77,
}


def work(case) -> tuple[int, int]:
    """(bytes, FLOP) one call of a grid case must do, as the sweep's trials count them
    (kgen.tune.trials: the float64 oracle's workload at seed 3)."""
    spec = case.spec
    if isinstance(spec, SparseSpec):
        return report.sparse_case_work(spec, case.batch)
    per_position = 2 * (spec.head_dim + spec.latent_dim) * spec.heads
    lens = case.seq_lens
    rows = case.batch * spec.q_len * spec.heads
    token = spec.format.token_bytes if spec.format else spec.head_dim * spec.elem_bytes
    io = sum(lens) * token + rows * (spec.head_dim + spec.latent_dim) * spec.elem_bytes
    visible = sum(max(n - spec.q_len, 0) for n in lens) * spec.q_len
    if spec.mask == "tree":  # the draft tree the trials draw
        from kgen.mla.workload import make_workload

        visible += int(make_workload(spec, lens, device="cpu", seed=3).mask.sum())
    elif spec.mask == "causal":
        visible += case.batch * spec.q_len * (spec.q_len + 1) // 2
    else:
        visible += case.batch
    return io, per_position * visible


def floor_us(case, device: dict) -> tuple[float, str]:
    """The case's floor on `device` (device.json; the sweep's roofline, kgen.tune.report) and what
    sets it: 'memory' or the peak's name."""
    nbytes, flops = work(case)
    fp32 = case.spec.dtype == "float32"
    ceilings = {"fp32_tflops": FP32_TFLOPS, **device}
    floor = report.floor_us({"bytes": nbytes, "flops": flops}, case.spec.dtype, ceilings)
    memory = nbytes / device["read_gbs"] / 1e3
    return floor, "memory" if memory >= floor else ("fp32" if fp32 else "mma")


def _lines(path: Path) -> dict:
    if not path.exists():
        return {}
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {r["case"]: r for r in rows}


def read_run(folder: Path) -> dict:
    """A run: its device.json and, per kind (shipped, default, torch, gather), {case: row}; rows of
    bench/retime.py's JSON are read as the same kinds (its tuned, default and torch)."""
    run = {"device": json.loads((folder / "device.json").read_text())}
    for kind in ("shipped", "default", "torch", "gather", "fp8", "fp8-default"):
        run[kind] = _lines(folder / f"{kind}.jsonl")
    for path in sorted(folder.glob("retime*.json")):
        for row in json.loads(path.read_text())["cases"]:
            for kind, key in (("shipped", "tuned"), ("default", "default"), ("torch", "torch")):
                r = row[key]
                if "config" in r:
                    family = "sparse" if "dequant" in r["config"] else "dense"
                    config = FAMILIES[family].config_type(**r["config"])
                    r = r | {"config": config.short_name(), "kv_splits": config.kv_splits}
                run[kind][row["case"]] = r
    return run


def label(device: dict) -> str:
    """H100 of 'NVIDIA H100 80GB HBM3', H200 of 'NVIDIA H200'."""
    words = device["gpu"].removeprefix("NVIDIA ").split()
    return words[0] if words else device["gpu"]


def legend(device: dict) -> str:
    source = device.get("read_gbs_source", "measured in the same run")
    return (
        f"{label(device)}: {device['gpu']}, NVRTC {device['nvrtc']}, {device['date']}; L2 flushed "
        f"(write), median of {device['reps']}, every kernel checked against the float64 oracle "
        f"first; memory floor at {device['read_gbs']:.0f} GB/s ({source})."
    )


def _us(row: dict | None) -> float | None:
    ok = row and row.get("status", "ok") == "ok" and row.get("median_us")
    return row["median_us"] if ok else None


def _fmt(value, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _config(row: dict, shipped: dict) -> str:
    splits = row.get("kv_splits") or getattr(shipped.get(row["case"]), "kv_splits", None)
    return row["config"] + (f" s{splits}" if splits else "")


def geomean(ratios: list[float]) -> float:
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")


def standing_table(main: dict, compare: dict | None) -> str:
    shipped = shipped_configs()
    a = label(main["device"])
    b = label(compare["device"]) if compare else None
    out = [f"- {legend(main['device'])}"]
    if compare:
        out.append(f"- {legend(compare['device'])}")
    torch_run = main if main["torch"] or not compare else compare
    # kgen against the peers only where it ran on their GPU
    peers_run = next((r for r in (main, compare) if r and label(r["device"]) == PEERS_GPU), None)
    out.append(
        f"- torch: the plain torch implementation (gather, matmuls, softmax), "
        f"{label(torch_run['device'])}; FlashInfer (FA2 MLA template, mma.sync) and FlashMLA "
        f"(wgmma): {PEERS_DEVICE}, verification timed as a causal chain of the same length."
    )
    fp8 = main["fp8"] or main["fp8-default"]
    if fp8:
        out.append(
            f"- fp8 cache ({a}): the dense 16-bit cases on an fp8_tensor cache (e4m3, one "
            "k_scale) with the configs shipped for it (bench/time_shipped.py --kv-format "
            "fp8_tensor; marked d: no such entry, the heuristic default's time, --default); "
            "beside it, the shipped 16-bit time over it and its share of the fp8 cache's floor "
            "(576 bytes a token)."
        )
    if main["gather"]:
        out.append(
            f"- gather ({a}): a kernel that only reads the cache rows a sparse case lists, "
            "16-byte loads, one launch a list (bench/time_shipped.py --gather); beside it, kgen's "
            "time over the gather's. At B = 1 its few blocks leave it latency-bound, slower than "
            "kgen's."
        )
    head = ["case", "B, T, H, S", f"{a} floor µs", f"{a} µs", "% floor"]
    head += [f"{a} gather µs (µs / gather)"] if main["gather"] else []
    head += [f"{a} fp8 cache µs (16-bit / fp8, % fp8 floor)"] if fp8 else []
    head += [f"{b} µs", "% floor"] if compare else []
    head += [f"torch µs ({label(torch_run['device'])})", "FlashInfer µs", "FlashMLA µs"]
    head += ["config (shipped)"]
    out += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ratios = []
    for case in load_grid():
        spec = case.spec
        shape = f"{case.batch}, {spec.q_len}, {spec.heads}, {case.prefix}"
        if isinstance(spec, SparseSpec):
            shape += f", top-{spec.topk}" + (f" + {spec.extra_topk}" if spec.has_extra else "")
        floor, bound = floor_us(case, main["device"])
        t = _us(main["shipped"].get(case.name))
        cells = [case.name, shape, f"{floor:.1f} ({bound})", _fmt(t), _pct(floor, t)]
        if main["gather"]:
            g = _us(main["gather"].get(case.name))
            cells.append(f"{g:.1f} ({t / g:.2f})" if g and t else _fmt(g))
        if fp8:
            f, mark = _us(main["fp8"].get(case.name)), ""
            if f is None:
                f, mark = _us(main["fp8-default"].get(case.name)), " d"
            if f and t:
                s8 = dataclasses.replace(spec, kv_format="fp8_tensor")
                floor8 = _pct(floor_us(dataclasses.replace(case, spec=s8), main["device"])[0], f)
                cells.append(f"{f:.1f}{mark} ({t / f:.2f}, {floor8})")
            else:
                cells.append(_fmt(f))
        if compare:
            tb = _us(compare["shipped"].get(case.name))
            cells += [_fmt(tb), _pct(floor_us(case, compare["device"])[0], tb)]
        tp = _us(peers_run["shipped"].get(case.name)) if peers_run else None
        if tp and case.name in FLASHINFER:
            ratios.append(tp / FLASHINFER[case.name])
        cells.append(_fmt(_us(torch_run["torch"].get(case.name))))
        cells += [_fmt(FLASHINFER.get(case.name)), _fmt(FLASHMLA.get(case.name))]
        row = main["shipped"].get(case.name)
        cells.append(_config(row, shipped) if row else "—")
        out.append("| " + " | ".join(cells) + " |")
    if ratios:
        out.append(
            f"\nGeometric mean of kgen ({PEERS_GPU}) / FlashInfer over the {len(ratios)} 16-bit "
            f"dense cases: {geomean(ratios):.2f}."
        )
    return "\n".join(out)


def _pct(floor: float, us: float | None) -> str:
    return "—" if us is None else f"{100 * floor / us:.0f}"


def defaults_table(main: dict) -> str:
    """Shipped (tuned) config against the heuristic default, per case, on the main run's GPU."""
    a = label(main["device"])
    out = [
        f"| case | shipped µs ({a}) | default µs | default / shipped | default config |",
        "|---|---|---|---|---|",
    ]
    ratios = []
    for case in load_grid():
        t, d = _us(main["shipped"].get(case.name)), _us(main["default"].get(case.name))
        ratio = d / t if t and d else None
        if ratio:
            ratios.append((ratio, case.name))
        row = main["default"].get(case.name)
        config = _config(row, {}) if row else "—"
        out.append(f"| {case.name} | {_fmt(t)} | {_fmt(d)} | {_fmt(ratio, 2)} | {config} |")
    if ratios:
        worst, name = max(ratios)
        mean = geomean([r for r, _ in ratios])
        out.append(f"\nWorst {worst:.2f} ({name}); geometric mean {mean:.2f}.")
    return "\n".join(out)


def measure(folder: Path, reps: int) -> None:
    """Time every grid case three ways into `folder`, and write its device.json."""
    import torch

    from kgen.compiler import nvrtc_version
    from kgen.tune.trials import Trials

    folder.mkdir(parents=True, exist_ok=True)
    ceilings = Trials().ceilings()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    device = {
        "gpu": torch.cuda.get_device_name(),
        "nvrtc": nvrtc_version(),
        "date": datetime.date.today().isoformat(),
        "reps": reps,
        "commit": commit or None,
        **ceilings,
    }
    (folder / "device.json").write_text(json.dumps(device, indent=1) + "\n")
    tool = str(ROOT / "bench/time_shipped.py")
    kinds = (("shipped", []), ("default", ["--default"]), ("torch", ["--torch"]))
    # The fp8 column's heuristic defaults only where no config is shipped for the format
    tuned8 = shipped_configs("fp8_tensor")
    untuned8 = [c.name for c in on_kv_format(load_grid(), "fp8_tensor") if c.name not in tuned8]
    more = [("gather", ["--gather"]), ("fp8", ["--kv-format", "fp8_tensor"])]
    if untuned8:
        more.append(("fp8-default", ["--default", "--kv-format", "fp8_tensor", *untuned8]))
    for kind, flags in (*kinds, *more):
        with open(folder / f"{kind}.jsonl", "w") as out:
            subprocess.run(
                [sys.executable, tool, "--reps", str(reps), *flags], stdout=out, check=True
            )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="time every grid case here first (GPU)")
    where.add_argument("--from-json", type=Path, metavar="DIR", help="a run's files (no GPU)")
    parser.add_argument("--compare", type=Path, metavar="DIR", help="another run, as columns")
    parser.add_argument("--reps", type=int, default=15, help="timed launches a case (median)")
    args = parser.parse_args()
    if args.out:
        measure(args.out, args.reps)
    main_run = read_run(args.out or args.from_json)
    compare = read_run(args.compare) if args.compare else None
    print(standing_table(main_run, compare))
    if main_run["default"]:
        print("\n" + defaults_table(main_run))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
