"""Where a kernel's warps wait, by kind of instruction: Nsight Compute's per-SASS-instruction
stall samples (`ncu ... --page source --csv --print-source sass`, as bench/ncu.sh writes them)
summed over instruction classes (tensor-core MMA, ldmatrix, shared loads/stores, cp.async and its
waits, barriers, shuffles, special functions, global memory, integer/address arithmetic, float
arithmetic, control), then the instructions with the most samples.

    python3 bench/stall_summary.py CASE-source.csv [--top 15]

Sample columns are the CSV's columns whose header names warp-stall sampling or a stall reason;
each class's share is printed for every such column that has samples.
"""

from __future__ import annotations

import argparse
import csv
import re
from collections import defaultdict
from pathlib import Path

CLASSES = {  # class -> SASS opcodes (without modifiers)
    "mma": ("HMMA", "IMMA"),
    "ldmatrix": ("LDSM",),
    "shared ld/st": ("LDS", "STS"),
    "cp.async": ("LDGSTS", "LDGDEPBAR", "DEPBAR"),
    "barrier": ("BAR", "B2R", "WARPSYNC"),
    "shuffle": ("SHFL",),
    "special fn": ("MUFU",),
    "global mem": ("LDG", "STG", "RED", "ATOM", "ATOMG", "LDL", "STL", "LD", "ST", "CCTL"),
    "int/address": (
        "IMAD",
        "LEA",
        "SHF",
        "LOP3",
        "IADD3",
        "VIADD",
        "ISETP",
        "IMNMX",
        "VIMNMX",
        "SEL",
        "PRMT",
        "MOV",
        "S2R",
        "S2UR",
        "CS2R",
        "LDC",
        "ULDC",
        "UMOV",
        "UIADD3",
        "ULEA",
        "PLOP3",
    ),
    "float": ("FADD", "FMUL", "FFMA", "FMNMX", "FSEL", "FSETP", "F2FP", "HADD2", "HMUL2", "F2F"),
    "control": ("BRA", "BSSY", "BSYNC", "EXIT", "RET", "CALL", "NOP", "YIELD"),
}
_CLASS_OF = {op: name for name, ops in CLASSES.items() for op in ops}
_OPCODE = re.compile(r"^\s*(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")


def opcode_class(sass: str) -> str:
    m = _OPCODE.match(sass)
    return _CLASS_OF.get(m.group(1), "other") if m else "other"


def to_number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read_rows(path: Path) -> tuple[list[str], list[dict]]:
    """The sample columns and the instruction rows of an ncu source CSV (lines before its header
    row, e.g. ==PROF== messages, skipped)."""
    lines = path.read_text(errors="replace").splitlines()
    start = next(i for i, line in enumerate(lines) if '"Source"' in line)
    rows = list(csv.DictReader(lines[start:]))
    columns = [
        c
        for c in (rows[0].keys() if rows else [])
        if c and ("stall" in c.lower() or "samples" in c.lower())
    ]
    return columns, rows


def summarise(path: Path, top: int) -> str:
    columns, rows = read_rows(path)
    if not columns:
        return f"{path.name}: no stall-sample columns"
    totals = {c: defaultdict(float) for c in columns}
    for row in rows:
        kind = opcode_class(row.get("Source", ""))
        for c in columns:
            totals[c][kind] += to_number(row.get(c, ""))
    out = [f"== {path.name}: {len(rows)} instructions"]
    kinds = list(CLASSES) + ["other"]
    for c in columns:
        total = sum(totals[c].values())
        if total <= 0:
            continue
        shares = ", ".join(
            f"{k} {100 * totals[c][k] / total:.0f}%"
            for k in sorted(kinds, key=lambda k: -totals[c][k])
            if totals[c][k] / total >= 0.01
        )
        out.append(f"{c} (total {total:.0f}): {shares}")
    main = columns[0]
    out.append(f"top {top} instructions by {main}:")
    for row in sorted(rows, key=lambda r: -to_number(r.get(main, "")))[:top]:
        address = row.get("# Address") or row.get("Address") or ""
        samples, sass = to_number(row.get(main, "")), row.get("Source", "")[:90]
        out.append(f"  {samples:8.0f}  {address:>8s}  {sass}")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("csv", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for path in args.csv:
        print(summarise(path, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
