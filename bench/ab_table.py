"""The table of an A/B run (bench/ab.sh): per case, the median of each tree's run, round by round,
and the oracle's error of the first.

    python3 bench/ab_table.py DIR    (DIR: <tree>-<round>.jsonl files of bench/time_shipped.py)
"""

from __future__ import annotations

import json
import sys
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
        lines.append(f"{case:28s} {' '.join(cells)}" + (f"  err {error:.1e}" if error else ""))
    return lines


if __name__ == "__main__":
    print("\n".join(table(Path(sys.argv[1]))))
