"""The sparse grid cases of a sweep against issue 8's floor: per case the fastest correct config,
its time, the gather bandwidth it achieved and its share of the floor, beside the heuristic's
default and the plain torch implementation.

    python3 bench/sparse_table.py SWEEP_OUT [--grid GRID.json]

Floor = max(gathered bytes / 4219 GB/s, FLOP / 645 TFLOP/s) with gathered bytes = B x T x topk
x 656 (fp8 cache; 1152 for bf16) and FLOP = 2 x (576 + 512) x H x B x T x topk (the H200's read
bandwidth and mma.sync rate, as the issue fixes them); for a V4 case topk + extra_topk entries of
584 bytes and 2 x (512 + 512) x H FLOP each (kgen.tune.report.sparse_case_work).
Reads SWEEP_OUT/results.json where the sweep finished (its best: the fastest correct config that
also compiles spill-free for sm_120), else SWEEP_OUT/progress.jsonl (a sweep cut short: the
fastest correct trial, marked `*`, not checked for spills on sm_120).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen.tune.report import config_name, sparse_case_work  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402

READ_GBS = 4219.0
MMA_TFLOPS = 645.0


def floor_us(case) -> tuple[float, float]:
    """(floor in us, gathered bytes) of a sparse grid case (both lists of a V4 case)."""
    gathered, flops = sparse_case_work(case.spec, case.batch)
    return max(gathered / READ_GBS / 1e3, flops / MMA_TFLOPS / 1e6), gathered


def _progress(path: Path) -> dict:
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            done[row["id"]] = row
    return done


def case_rows(out: Path, cases) -> dict:
    """{case name: {'best', 'default', 'torch', 'counts', 'partial', 'untimed'}}."""
    found = {}
    results = out / "results.json"
    if results.exists():
        report = json.loads(results.read_text())
        for entry in report["cases"]:
            trials = entry.get("trials") or []
            found[entry["name"]] = {
                "best": entry.get("best"),
                "default": entry.get("default"),
                "torch": entry.get("torch"),
                "counts": _counts(trials),
                "partial": False,
                "untimed": entry.get("untimed", 0),
            }
    done = _progress(out / "progress.jsonl")
    for case in cases:
        if case.name in found:
            continue
        rows, torch_row = [], None
        for key, trial in done.items():
            if key.startswith(f"{case.name}|variant|") or key.startswith(f"{case.name}|default|"):
                kind = key.split("|")[1]
                rows.extend({**r, "kind": kind} for r in trial["rows"])
            elif key == f"{case.name}|torch":
                torch_row = trial["row"]
        if not rows:
            continue
        ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: r["median_us"])
        defaults = [r for r in rows if r["kind"] == "default" and r["status"] == "ok"]
        found[case.name] = {
            "best": ok[0] if ok else None,
            "default": defaults[0] if defaults else None,
            "torch": torch_row,
            "counts": _counts(rows),
            "partial": True,
            "untimed": 0,
        }
    return found


def _counts(rows: list[dict]) -> dict:
    counts = {"ok": 0, "wrong": 0, "failed": 0}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts


def _us(row) -> str:
    return f"{row['median_us']:8.1f}" if row and row.get("status") == "ok" else f"{'-':>8s}"


def table(out: Path, grid: Path) -> str:
    cases = load_grid(grid, "sparse")
    found = case_rows(out, cases)
    lines = [
        f"{'case':24s} {'us':>8s} {'graph':>7s} {'GB/s':>6s} {'%floor':>6s} {'floor':>6s} "
        f"{'default':>8s} {'torch':>8s} {'w/SM':>4s} {'ok/wrong/fail':>13s}  config"
    ]
    for case in cases:
        floor, gathered = floor_us(case)
        got = found.get(case.name)
        if not got or not any(got["counts"].values()):
            lines.append(f"{case.name:24s} (not timed; floor {floor:.1f} us)")
            continue
        best, counts = got["best"], got["counts"]
        tally = f"{counts['ok']}/{counts['wrong']}/{counts['failed']}"
        if not best:
            lines.append(f"{case.name:24s} (no correct trial: {tally}; floor {floor:.1f} us)")
            continue
        t = best["median_us"]
        graph = (best.get("graph") or {}).get("median_us")
        warps = (best.get("resources") or {}).get("warps_per_sm")
        name = config_name(best["config"]) + (" *" if got["partial"] else "")
        if got["untimed"]:
            name += f" ({got['untimed']} untimed)"
        lines.append(
            f"{case.name:24s} {t:8.1f} {graph if graph else float('nan'):7.1f} "
            f"{gathered / t / 1e3:6.0f} {100 * floor / t:6.1f} {floor:6.1f} {_us(got['default'])} "
            f"{_us(got['torch'])} {warps if warps else '-':>4} {tally:>13s}  {name}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the sweep's --out folder")
    parser.add_argument(
        "--grid", default="default", help="the sweep's grid file (default: kgen/tune/grid.json)"
    )
    args = parser.parse_args(argv)
    print(table(args.out, args.grid))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
