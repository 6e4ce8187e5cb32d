"""Medians per time_shipped.py case (one column per JSON-lines file given), one row per case:
    python3 bench/occupancy_table.py RUN1.jsonl [RUN2.jsonl ...]"""

import json
import sys

rows: dict[str, list] = {}
for path in sys.argv[1:]:
    for line in open(path):
        if line.startswith("{"):
            d = json.loads(line)
            rows.setdefault(d["case"], []).append(d)
for name, runs in rows.items():
    times = " ".join(f"{d['median_us']:.1f}" if d["median_us"] else d["status"] for d in runs)
    print(f"{name:72s} {times}  err {runs[0]['error']}")
