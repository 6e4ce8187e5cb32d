"""Sweep output: the terminal table, results.csv, and the plots (time over heads_per_block x
kv_splits; every variant on a roofline)."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

from kgen.mla import Config, SparseConfig

# Every config field of either family (dense first, then the sparse family's own), so that a new
# axis reaches results.csv without a second list to keep in step
CONFIG_COLUMNS = list(
    dict.fromkeys(f.name for family in (Config, SparseConfig) for f in dataclasses.fields(family))
)
COLUMNS = [
    "case",
    "kind",
    *CONFIG_COLUMNS,
    "registers",
    "smem",
    "spills",
    "occupancy",
    "sass_hmma",
    "sass_ldsm",
    "sass_ldgsts",
    "sass_ldg",
    "sass_spill",
    "status",
    "median_us",
    "p10_us",
    "p90_us",
    "kv_gbs",
    "tflops",
    "floor_pct",
    "error",
]


MMA_SYNC_TFLOPS = 645.0  # back-to-back mma.sync m16n8k16 bf16 on the H200 (shared/design/gpu.md)


def floor_us(row: dict, dtype: str, ceilings: dict) -> float:
    """Roofline floor: all bytes at the measured read bandwidth vs FLOPs at the peak of the
    instructions sm_120 code can use (mma.sync for 16-bit inputs, the measured fp32 matmul
    rate for float32)."""
    peak = ceilings["fp32_tflops"] if dtype == "float32" else MMA_SYNC_TFLOPS
    # A sparse trial's "bytes" are the gathered cache bytes (sparse_case_work): the floor of
    # issue 8. Its "kv_bytes" the same, so kv_gbs is the achieved gather bandwidth.
    return max(row["bytes"] / ceilings["read_gbs"] / 1e3, row["flops"] / peak / 1e6)


def sparse_case_work(spec, batch: int) -> tuple[int, int]:
    """(bytes, FLOP) of one sparse call of `batch` sequences whose lists are full (no holes, as
    the sweep's benchmark workload draws them): every entry of both lists gathered once per query
    row, token_bytes each (656 for DeepSeek-V3.2's fp8, 584 for V4's; 2 x D for a 16-bit cache),
    and 2 x (D + 512) x H FLOP per entry (q.K over D values: 576 for V3.2, 512 for V4, where
    K = V; P.V over 512)."""
    entries = batch * spec.q_len * (spec.topk + spec.extra_topk)
    per_entry = 2 * (spec.head_dim + spec.latent_dim) * spec.heads
    return entries * spec.token_bytes, entries * per_entry


def figures(row: dict, dtype: str, ceilings: dict | None) -> dict:
    if row.get("status") != "ok" or "median_us" not in row or not ceilings:
        return {}
    t = row["median_us"]
    return {
        "kv_gbs": row["kv_bytes"] / t / 1e3,
        "tflops": row["flops"] / t / 1e6,
        "floor_pct": 100 * floor_us(row, dtype, ceilings) / t,
    }


def rows(report: dict) -> list[dict]:
    """One flat row per compiled variant (compile-only) or per timed trial (GPU)."""
    ceilings = report["meta"].get("ceilings")
    flat = []
    for case in report["cases"]:
        dtype = case["spec"]["dtype"]
        family = case.get("family", "dense")
        trials = case.get("trials")
        source = trials if trials is not None else case["variants"]
        compiled = {_compiled_key(family, v["config"]): v for v in case["variants"]}
        for r in source:
            res = r.get("resources", r)
            sass = compiled.get(_compiled_key(family, r["config"]), {})
            flat.append(
                {
                    "case": case["name"],
                    "kind": r.get("kind", "variant"),
                    **r["config"],
                    **{k: res.get(k) for k in ("registers", "smem", "spills", "occupancy")},
                    **{k: v for k, v in sass.items() if k.startswith("sass_")},
                    "status": r["status"],
                    **{k: r.get(k) for k in ("median_us", "p10_us", "p90_us", "error")},
                    **figures(r, dtype, ceilings),
                }
            )
    return flat


def _compiled_key(family: str, config: dict) -> tuple:
    """What identifies a compiled variant: its config (fields a report lacks at their defaults)
    without the launch-time kv_splits."""
    from kgen.tune.family import FAMILIES

    full = FAMILIES[family].config_type.from_dict(config).to_dict()
    return tuple(sorted((k, v) for k, v in full.items() if k != "kv_splits"))


def write_csv(report: dict, path: Path) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows(report))


def config_name(c: dict, splits: bool = True) -> str:
    """hb8 s16 v8 st2 w4 n32 [mma c4 [mb1] [qa] [ss] [pc] [ws] [rs1]]: heads_per_block, kv_splits,
    vec_width, stages, warps, block_n [, tensor-core path with col_groups [, min_blocks]
    [, q.K ahead] [, split softmax] [, PDL merge] [, warps in two roles] [, ring slack]]. A sparse
    config: hb16 s4 n16 st3 g16 w4 c4 sha|reg [mb1] [pc] [ss] (gather_bytes, where fp8 is
    dequantized, min_blocks, PDL merge, split softmax)."""
    split = f" s{c['kv_splits']}" if splits else ""
    if "dequant" in c:
        return (
            f"hb{c['heads_per_block']}{split} n{c['block_n']} st{c['smem_stages']} "
            f"g{c['gather_bytes']} w{c['num_warps']} c{c['col_groups']} {c['dequant'][:3]}"
            + (f" mb{c['min_blocks']}" if c.get("min_blocks") else "")
            + (" pc" if c.get("merge") == "pdl" else "")
            + (" ss" if c.get("softmax") == "split" else "")
        )
    axes = ""  # the tensor-core path's axes, and the PDL merge wherever it is set
    if c.get("compute") == "mma":
        axes = f" mma c{c['col_groups']}" + (f" mb{c['min_blocks']}" if c.get("min_blocks") else "")
        axes += " qa" if c.get("qk_ahead") else ""
        axes += " ss" if c.get("softmax") == "split" else ""
    axes += " pc" if c.get("merge") == "pdl" else ""
    axes += " ws" if c.get("body") == "specialized" else ""
    axes += f" rs{c['ring_slack']}" if c.get("ring_slack") else ""
    return (
        f"hb{c['heads_per_block']}{split} v{c['vec_width']} st{c['smem_stages']} "
        f"w{c['num_warps']} n{c['block_n']}{axes}"
    )


def _fmt(value, spec: str = "") -> str:
    if value is None:
        return "-"
    return format(value, spec) if spec else str(value)


def summary_table(report: dict) -> str:
    """Compile-only: each case's variants by occupancy. GPU: each case's best, default and torch."""
    lines = []
    ceilings = report["meta"].get("ceilings")
    if not ceilings:
        sass = ("hmma", "ldsm", "ldgsts", "ldg", "spill")
        lines.append(
            f"{'case':24s} {'config':36s} {'regs':>4s} {'smem':>7s} {'spill':>5s} {'occ':>5s} "
            + " ".join(f"{name.upper():>6s}" for name in sass)
        )
        have_sass = False
        for case in report["cases"]:
            for v in sorted(case["variants"], key=lambda v: -(v.get("occupancy") or 0)):
                c = v["config"]
                name = config_name(c, splits=False)
                have_sass |= "sass_hmma" in v
                lines.append(
                    f"{case['name']:24s} {name:36s} {_fmt(v.get('registers')):>4s} "
                    f"{_fmt(v.get('smem')):>7s} {_fmt(v.get('spills')):>5s} "
                    f"{_fmt(v.get('occupancy'), '.0%'):>5s} "
                    + " ".join(f"{_fmt(v.get('sass_' + n)):>6s}" for n in sass)
                )
            soft = sum(r["reason"].startswith("soft: ") for r in case["refused"])
            lines.append(
                f"{case['name']:24s} ({len(case['variants'])} compiled, "
                f"{len(case['refused'])} refused before compiling: {soft} soft, "
                f"{len(case['refused']) - soft} hard)"
            )
        if not have_sass:
            lines.append(
                "SASS instruction mix skipped: cuobjdump not found "
                '(pip install "kgen[sass]", i.e. nvidia-cuda-cuobjdump + nvidia-cuda-nvdisasm)'
            )
        return "\n".join(lines)
    lines.append(
        f"{'case':24s} {'what':8s} {'config':34s} {'us':>8s} {'graph us':>8s} {'KV GB/s':>8s} "
        f"{'TFLOP/s':>8s} {'%floor':>6s} {'err':>8s}"
    )
    several = len({case.get("gpu") for case in report["cases"]}) > 1  # GPU kinds tuned apart
    for case in report["cases"]:
        if several and case is _first_of(report, case):
            lines.append(f"-- {case['gpu']}")
        dtype = case["spec"]["dtype"]
        for what in ("best", "default", "torch"):
            r = case.get(what)
            if not r:
                lines.append(f"{case['name']:24s} {what:8s} (none)")
                continue
            f = figures(r, dtype, ceilings)
            c = r.get("config")
            name = config_name(c) if c else "gather+bmm+softmax+bmm"
            graph = (r.get("graph") or {}).get("median_us")
            lines.append(
                f"{case['name']:24s} {what:8s} {name:34s} {r['median_us']:8.1f} "
                f"{_fmt(graph, '8.1f'):>8s} {f.get('kv_gbs', 0):8.0f} {f.get('tflops', 0):8.2f} "
                f"{f.get('floor_pct', 0):6.1f} {_fmt(r.get('error'), '8.1e'):>8s}"
            )
        wrong = case.get("wrong") or []
        if wrong:
            lines.append(f"{case['name']:24s} {len(wrong)} variants WRONG or FAILED (not ranked)")
    return "\n".join(lines)


def time_summary(report: dict) -> str:
    """Where the sweep's time went: the compile phase (its wall time, rate, and how busy its
    workers were) and, per GPU worker, its trials and seconds verifying, timing, on other work
    (start-up, inputs, messages) and idle."""
    spent = report["meta"].get("time")
    if not spent:
        return ""
    lines = ["where the time went:"]
    wall, done = spent["compile_wall_s"], spent["compiled"]
    if done:
        workers = spent["compile_workers"]
        capacity = workers * wall
        lines.append(
            f"  compile: {done} variants in {wall:.0f} s ({done / max(wall, 1e-9):.2f}/s) on "
            f"{spent['compile_where']}: {workers} workers busy {spent['compile_busy_s']:.0f} s, "
            f"idle {max(0.0, capacity - spent['compile_busy_s']):.0f} s"
        )
    else:
        lines.append("  compile: none this run")
    for w in spent["gpu_workers"]:
        failed = f" ({w['failed']} failed)" if w["failed"] else ""
        lines.append(
            f"  {w['worker']} ({w['gpu']}): {w['trials']} trials{failed}: verify "
            f"{w['verify_s']:.0f} s, time {w['time_s']:.0f} s, other {w['other_s']:.0f} s, "
            f"idle {w['idle_s']:.0f} s"
        )
    return "\n".join(lines)


def _first_of(report: dict, case: dict) -> dict:
    """The first case entry of `case`'s GPU kind."""
    return next(c for c in report["cases"] if c.get("gpu") == case.get("gpu"))


def plot(report: dict, out_dir: Path) -> list[Path]:
    """heads_per_block x kv_splits heat maps of the best time, and a roofline of every variant."""
    if not report["meta"].get("ceilings"):
        return []
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import LogNorm
    except ImportError:
        return []
    ceilings = report["meta"]["ceilings"]
    paths = []
    cases = [c for c in report["cases"] if any(t["status"] == "ok" for t in c.get("trials", []))]
    if not cases:
        return []
    cols = 4
    fig, axes = plt.subplots(
        -(-len(cases) // cols),
        cols,
        figsize=(4.2 * cols, 3.4 * -(-len(cases) // cols)),
        squeeze=False,
    )
    for ax, case in zip(axes.flat, cases, strict=False):
        ok = [t for t in case["trials"] if t["status"] == "ok"]
        hpbs = sorted({t["config"]["heads_per_block"] for t in ok})
        splits = sorted({t["config"]["kv_splits"] for t in ok})
        grid = [
            [
                min(
                    (
                        t["median_us"]
                        for t in ok
                        if t["config"]["heads_per_block"] == h and t["config"]["kv_splits"] == s
                    ),
                    default=float("nan"),
                )
                for s in splits
            ]
            for h in hpbs
        ]
        image = ax.imshow(grid, aspect="auto", cmap="viridis_r", norm=LogNorm())
        ax.set_xticks(range(len(splits)), [str(s) for s in splits], fontsize=7)
        ax.set_yticks(range(len(hpbs)), [str(h) for h in hpbs], fontsize=7)
        ax.set_xlabel("kv_splits", fontsize=8)
        ax.set_ylabel("heads_per_block", fontsize=8)
        ax.set_title(f"{case['name']}: best us (white: not timed)", fontsize=8)
        fig.colorbar(image, ax=ax)
    for ax in list(axes.flat)[len(cases) :]:
        ax.axis("off")
    fig.tight_layout()
    paths.append(out_dir / "time_hpb_splits.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 6))
    bw = ceilings["read_gbs"] * 1e9
    intensity = [
        0.5 * 1.1**i for i in range(110)
    ]  # 0.5 .. ~17000 FLOP/byte, enough to show the knees
    for name, peak in (
        ("bf16 matmul", ceilings["bf16_tflops"]),
        ("fp32 matmul", ceilings["fp32_tflops"]),
    ):
        ax.plot(intensity, [min(peak, x * bw / 1e12) for x in intensity], label=f"roof: {name}")
    for i, case in enumerate(cases):
        ok = [t for t in case["trials"] if t["status"] == "ok"]
        x = [t["flops"] / t["bytes"] for t in ok]
        y = [t["flops"] / t["median_us"] / 1e6 for t in ok]
        ax.scatter(x, y, s=6, alpha=0.5, label=case["name"], color=plt.cm.tab20(i % 20))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved, KV read once)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.legend(fontsize=6, ncol=2)
    ax.set_title("every timed variant on the roofline (H200 ceilings measured in the same run)")
    paths.append(out_dir / "roofline.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def resource_row(kernel) -> dict:
    """A compiled variant's resources as a sweep row's columns (compile-only and timed rows)."""
    r = kernel.resources
    return {
        "registers": r.registers,
        "smem": r.smem,
        "spills": r.spills,
        "occupancy": r.occupancy.fraction,
        "warps_per_sm": r.occupancy.warps_per_sm,
    }
