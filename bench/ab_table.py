"""The table of an A/B run (bench/ab.sh): per case, the median of each tree's run, round by round,
the oracle's error of the first, and each tree's median over its rounds against the first tree's.

    python3 bench/ab_table.py DIR    (DIR: <tree>-<round>.jsonl files of bench/time_shipped.py)
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def table(folder: Path) -> list[str]:
    rows: dict[str, dict[str, dict]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            rows.setdefault(r["case"], {})[path.stem] = r
    lines = []
    for case, runs in rows.items():
        cells = [
            f"{run}={r['median_us']:.1f}" if r.get("median_us") else f"{run}={r['status']}"
            for run, r in sorted(runs.items())
        ]
        error = next((r["error"] for r in runs.values() if r.get("error") is not None), None)
        lines.append(
            f"{case:28s} {' '.join(cells)}{_ratios(runs)}" + (f"  err {error:.1e}" if error else "")
        )
    return lines


def _ratios(runs: dict) -> str:
    """Each tree's median over its rounds / the first tree's (labels sorted), where all ran."""
    trees: dict[str, list[float]] = {}
    for run, r in sorted(runs.items()):
        if r.get("median_us"):
            trees.setdefault(run.rsplit("-", 1)[0], []).append(r["median_us"])
    if len(trees) < 2:
        return ""
    (first, base), *others = ((t, statistics.median(v)) for t, v in trees.items())
    return "  " + " ".join(f"{t}/{first}={m / base:.3f}" for t, m in others)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dir", type=Path, help="<tree>-<round>.jsonl files")
    print("\n".join(table(parser.parse_args().dir)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
