"""Merge tuning databases: per entry key, the entry with the fastest median of any of them (its
trials joined by the others' for the same key), then keys only some of them hold. For a sweep
split over several runs (other axes, other cases) before shipping its winners. With --replace,
a later database's entry replaces an earlier one's whole instead (a re-tune after a kernel change:
the old timings belong to other code).

    python3 bench/merge_db.py [--replace] OUT.json DB.json [DB.json ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def merge(paths: list[Path], replace: bool = False) -> dict:
    merged: dict[str, dict] = {}
    for path in paths:
        for key, entry in json.loads(path.read_text())["entries"].items():
            old = merged.get(key)
            if old is None or replace:
                merged[key] = dict(entry)
                continue
            trials = old.get("trials", []) + entry.get("trials", [])
            faster = entry.get("median_us", float("inf")) < old.get("median_us", float("inf"))
            merged[key] = {**(entry if faster else old), "trials": trials}
    return {"entries": dict(sorted(merged.items()))}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="the merged database (written)")
    parser.add_argument("dbs", type=Path, nargs="+", help="databases, earliest first")
    parser.add_argument("--replace", action="store_true", help="a later entry replaces, whole")
    args = parser.parse_args()
    merged = merge(args.dbs, args.replace)
    out = args.out
    out.write_text(json.dumps(merged, indent=1))
    for key, entry in merged["entries"].items():
        print(
            f"{entry.get('case', key)[:28]:28} {entry.get('median_us', 0):8.1f}  {entry['config']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
