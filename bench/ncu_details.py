"""The headline metrics of Nsight Compute's details page (`ncu -i REP --page details --csv`), one
line per metric, for the sections that say where a kernel's time goes: speed of light, compute
and memory workload, occupancy, launch statistics and warp state (stall) statistics.

    python3 bench/ncu_details.py CASE-details.csv [...]
    python3 bench/ncu_details.py --raw CASE-raw.csv [...]   # `--page raw --csv`: stall reasons,
                                                            # pipes, shared-memory wavefronts
"""

from __future__ import annotations

import argparse
import csv
import sys

SECTIONS = (
    "GPU Speed Of Light Throughput",
    "Compute Workload Analysis",
    "Memory Workload Analysis",
    "Launch Statistics",
    "Occupancy",
    "Warp State Statistics",
    "Scheduler Statistics",
)


def summarize(path: str) -> None:
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(line for line in f if line.startswith('"'))]
    print(f"== {path}")
    kernel = None
    for row in rows:
        if (row.get("ID"), row.get("Kernel Name")) != kernel:
            kernel = (row.get("ID"), row.get("Kernel Name"))
            grid, block = row.get("Grid Size"), row.get("Block Size")
            print(f" -- launch {kernel[0]}: {kernel[1]}, grid {grid}, block {block}")
        section = row.get("Section Name", "")
        if section in SECTIONS and row.get("Metric Name"):
            unit = row.get("Metric Unit", "")
            print(
                f"  {section[:18]:18} {row['Metric Name'][:48]:48} {row['Metric Value']:>14} {unit}"
            )


RAW_KEYS = (  # substrings of raw metric names worth a line each
    "pipe_tensor_op_hmma_cycles_active.avg.pct",
    "data_pipe_lsu_wavefronts_mem_shared.sum",
    "data_bank_conflicts_pipe_lsu_mem_shared",
    "warps_active.avg.pct_of_peak",
    "inst_executed.sum",
    "dram__bytes_read.sum",
    "gpu__time_duration.sum",
)


def summarize_raw(path: str) -> None:
    """Each kernel's stall reasons (pc-sampling counts, largest first) and RAW_KEYS metrics."""
    with open(path, newline="") as f:
        rows = list(csv.reader(line for line in f if line.startswith('"')))
    if len(rows) < 3:
        print(f"== {path}: no kernels")
        return
    names, units = rows[0], rows[1]
    for values in rows[2:]:
        print(f"== {path}: {dict(zip(names, values, strict=False)).get('Kernel Name', '?')}")
        numbers = {}
        for name, unit, value in zip(names, units, values, strict=False):
            try:
                numbers[name] = (float(value.replace(",", "")), unit)
            except ValueError:
                continue
        stalls = {n: v for n, (v, _) in numbers.items() if "pcsamp_warps_issue_stalled_" in n}
        stalls = {n: v for n, v in stalls.items() if not n.endswith("_not_issued")}
        total = sum(stalls.values()) or 1.0
        for name, value in sorted(stalls.items(), key=lambda kv: -kv[1])[:12]:
            reason = name.split("pcsamp_warps_issue_stalled_")[1]
            print(f"  stall {reason:32} {100 * value / total:5.1f}%")
        for name, (value, unit) in numbers.items():
            if any(key in name for key in RAW_KEYS):
                print(f"  {name[:70]:70} {value:16.1f} {unit}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("csv", nargs="+", help="ncu's CSV pages, one per case")
    parser.add_argument("--raw", action="store_true", help="the files are `--page raw` CSV")
    args = parser.parse_args()
    for name in args.csv:
        (summarize_raw if args.raw else summarize)(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
