"""Markdown tables for bench/RESULTS.md: the H200 figures of bench/retime.py's JSON (or, with
--sweep, of a sweep's summary log and the shipped database), and the sm_120 resources (compiled
here, no GPU) of each grid case's shipped and default configs; with --sparse, the figures of
`bench/retime.py --family sparse`'s JSON against issue 8's floor and targets.

    python3 bench/tables.py bench/results/h200-2026-11-30/retime.json
    python3 bench/tables.py --sweep bench/results/h200-2026-11-30f/sweep.log
    python3 bench/tables.py --sparse bench/results/h200-2026-12-03a/tb/retime-sparse.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgen.arch import ARCHS  # noqa: E402
from kgen.mla import Config, build  # noqa: E402
from kgen.mla.heuristic import default_config  # noqa: E402
from kgen.mla.tuning import SHIPPED, TuningDB, bucket, entry_key  # noqa: E402
from kgen.sass import instruction_mix  # noqa: E402
from kgen.tune.report import MMA_SYNC_TFLOPS, config_name  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402

GRID = load_grid(family="dense")
TARGETS = {  # the targets, µs
    "kimi-tp8-decode-long": 20,
    "kimi-tp8-decode-batch": 48,
    "dsv3-tp8-decode-batch": 90,
    "dsv3-tp8-decode-long": 170,
    "dsv3-tp8-decode-wide": 92,
    "kimi-tp1-decode": 20,
    "kimi-tp1-decode-64k": 30,
    "kimi-tp1-batch": 30,
    "dsv3-tp1-batch": 45,
    "kimi-tp8-verify-tree": 22,
    "kimi-tp8-verify-batch": 30,
    "kimi-tp1-verify-tree": 100,
    "seed-fp32-verify": 450,
    "page1-decode": 55,
}
FLASHINFER = {  # FlashInfer FA2 MLA on the same H200 and timing (the table), µs
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


def _figures_table(rows: list[tuple]) -> str:
    """One row per case: (name, µs, graph µs or "—", config dict, KV GB/s, TFLOP/s, % floor,
    default µs, torch µs); against the targets and FlashInfer, with the geometric mean."""
    lines = [
        "| case | target µs | kgen µs (graph) | x target | config | KV GB/s | TFLOP/s | % floor "
        "| default µs | torch µs | FlashInfer µs | kgen / FlashInfer |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios = []
    for name, us, graph, config, gbs, tflops, floor, default_us, torch_us in rows:
        fi = FLASHINFER.get(name)
        if fi:
            ratios.append(us / fi)
        lines.append(
            f"| {name} | {TARGETS[name]} | {us:.1f} ({graph}) | {us / TARGETS[name]:.1f} | "
            f"{config_name(config)} | {gbs:.0f} | {tflops:.1f} | {floor:.0f} | {default_us:.1f} | "
            f"{torch_us:.1f} | {fi or '—'} | {f'{us / fi:.2f}' if fi else '—'} |"
        )
    mean = 1.0
    for r in ratios:
        mean *= r ** (1 / len(ratios))
    lines.append(f"\nGeometric mean of kgen / FlashInfer over the 16-bit cases: {mean:.2f}.")
    return "\n".join(lines)


def h200_table(path: Path) -> str:
    """From bench/retime.py's JSON."""
    data = json.loads(path.read_text())
    read = data["ceilings"]["read_gbs"]
    rows = []
    for row in data["cases"]:
        name, t = row["case"], row["tuned"]
        dtype = next(c.spec.dtype for c in GRID if c.name == name)
        peak = data["ceilings"]["fp32_tflops"] if dtype == "float32" else MMA_SYNC_TFLOPS
        us = t["median_us"]
        floor = max(t["bytes"] / read / 1e3, t["flops"] / peak / 1e6)
        rows.append(
            (
                name,
                us,
                f"{t['graph']['median_us']:.1f}",
                t["config"],
                t["kv_bytes"] / us / 1e3,
                t["flops"] / us / 1e6,
                100 * floor / us,
                row["default"]["median_us"],
                row["torch"]["median_us"],
            )
        )
    return _figures_table(rows)


def sparse_h200_table(path: Path) -> str:
    """From `bench/retime.py --family sparse`'s JSON. Floor = max(gathered bytes / the measured
    read rate, FLOP / 645 TFLOP/s); targets (issue 8): B = 1 at most 15 µs, H <= 64 at least 60%
    of the floor, H = 128 at least 50% of the mma.sync rate."""
    data = json.loads(path.read_text())
    read = data["ceilings"]["read_gbs"]
    grid = {c.name: c for c in load_grid(family="sparse")}
    lines = [
        "| case | kgen µs (graph) | config | regs, warps/SM | gathered GB/s | TFLOP/s | % floor "
        "| % of 645 | target | met | default µs | torch µs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in data["cases"]:
        case, t = grid[row["case"]], row["tuned"]
        us, res = t["median_us"], t["resources"]
        floor = max(t["bytes"] / read / 1e3, t["flops"] / MMA_SYNC_TFLOPS / 1e6)
        rate = 100 * t["flops"] / us / 1e6 / MMA_SYNC_TFLOPS
        if case.batch == 1:
            target, met = "≤ 15 µs", us <= 15
        elif case.spec.heads <= 64:
            target, met = "≥ 60% floor", 100 * floor / us >= 60
        else:
            target, met = "≥ 50% of 645", rate >= 50
        lines.append(
            f"| {case.name} | {us:.1f} ({t['graph']['median_us']:.1f}) | "
            f"{config_name(t['config'])} | "
            f"{res['registers']}, {res['warps_per_sm']} | {t['bytes'] / us / 1e3:.0f} | "
            f"{t['flops'] / us / 1e6:.1f} | {100 * floor / us:.1f} | {rate:.1f} | {target} | "
            f"{'yes' if met else 'no'} | {row['default']['median_us']:.1f} | "
            f"{row['torch']['median_us']:.1f} |"
        )
    return "\n".join(lines)


def sweep_table(log: Path) -> str:
    """The shipped configs' figures from the sweep that measured them: its summary rows (best,
    default, torch) and, where the shipped config is not the sweep's best (it spilled), the
    database's trial time, with bandwidth and rates scaled from the best row (same bytes, FLOPs)."""
    summary: dict[tuple[str, str], list[str]] = {}
    for line in log.read_text().splitlines():
        parts = line.split()
        if len(parts) > 4 and parts[1] in ("best", "default", "torch"):
            summary[(parts[0], parts[1])] = parts  # ... us graph GB/s TFLOP/s %floor err
    shipped = {e["case"]: e for e in TuningDB(SHIPPED).entries().values() if "case" in e}
    rows = []
    for case in GRID:
        best, entry = summary[(case.name, "best")], shipped[case.name]
        best_us, us = float(best[-6]), entry["median_us"]
        graph = best[-5] if abs(us - best_us) < 0.05 else "—"
        gbs, tflops, floor = (float(x) * best_us / us for x in best[-4:-1])
        default_us, torch_us = (float(summary[(case.name, k)][-6]) for k in ("default", "torch"))
        rows.append(
            (case.name, us, graph, entry["config"], gbs, tflops, floor, default_us, torch_us)
        )
    return _figures_table(rows)


def sm120_table() -> str:
    arch = ARCHS["sm_120"]
    shipped = TuningDB(SHIPPED).entries()
    lines = [
        "| case | which | config | regs | smem B | spills B | warps/SM | HMMA | LDSM | LDGSTS "
        "| LDG |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case in GRID:
        key = entry_key("NVIDIA H200", "sm_90", case.spec, bucket(case.batch, case.max_len))
        tuned = shipped.get(key)
        configs = [("default", default_config(case.spec, case.batch, case.max_len, arch, 188))]
        if tuned:
            configs.insert(0, ("H200-tuned", Config.from_dict(tuned["config"])))
        for which, config in configs:
            kernel = build(case.spec, config, arch)
            r = kernel.resources
            mix = instruction_mix(kernel.cubin, "mla_attention") or {}
            lines.append(
                f"| {case.name} | {which} | {config_name(config.to_dict())} | {r.registers} | "
                f"{r.smem} | {r.spills} | {r.occupancy.warps_per_sm} | "
                + " | ".join(str(mix.get(k, "—")) for k in ("hmma", "ldsm", "ldgsts", "ldg"))
                + " |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--sparse":  # the sparse cases have no sm_120 table here
        print(sparse_h200_table(Path(sys.argv[2])))
    else:
        sweep = sys.argv[1] == "--sweep"
        print(sweep_table(Path(sys.argv[2])) if sweep else h200_table(Path(sys.argv[1])))
        print()
        print(sm120_table())
