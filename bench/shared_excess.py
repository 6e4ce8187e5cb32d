"""Shared-memory wavefronts over the ideal, per SASS instruction: Nsight Compute's source page
(`ncu ... --page source --csv --print-source sass`, as bench/ncu.sh writes it) gives each
instruction's wavefronts, its ideal count and the excess (bank conflicts, or stores that straddle
128-byte bank lines). Prints each kernel's total and share of excess, then its instructions with
the most.

    python3 bench/shared_excess.py CASE-source.csv [...] [--top 12]

(How the tile copies' LDGSTS showed 2.6x the ideal, before the KV tile's swizzle: 22% of the
dense loop's shared wavefronts.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stall_summary import read_rows, to_number  # noqa: E402

WAVEFRONTS = "L1 Wavefronts Shared"
IDEAL = "L1 Wavefronts Shared Ideal"
EXCESS = "L1 Wavefronts Shared Excessive"


def report(path: Path, top: int) -> list[str]:
    _, rows = read_rows(path)
    total = sum(to_number(r.get(WAVEFRONTS, "")) for r in rows)
    worst = sorted(
        ((to_number(r.get(EXCESS, "")), r) for r in rows if to_number(r.get(EXCESS, "")) > 0),
        key=lambda item: -item[0],
    )
    excess = sum(e for e, _ in worst)
    name = path.name.removesuffix("-source.csv")
    share = 100 * excess / max(total, 1)
    lines = [f"== {name}: {total:.0f} wavefronts, {excess:.0f} over the ideal ({share:.0f}%)"]
    for e, r in worst[:top]:
        lines.append(
            f"  {e:10.0f} over  {to_number(r[WAVEFRONTS]):10.0f} / ideal "
            f"{to_number(r[IDEAL]):10.0f}  {r['Source'].strip()}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sources", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    for path in args.sources:
        print("\n".join(report(path, args.top)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
