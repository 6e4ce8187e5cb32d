"""The full sweep over the default grid (kgen/tune/grid.json) on the current GPU (or
compile-only for sm_120 without one), writing into --out and recording winners in the tuning
database given by --db.

    python3 bench/sweep.py --out sweep-out [--db kgen/tuned/tuning.json] [kgen sweep options]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgen.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["sweep", "--grid", "default", *sys.argv[1:]]))
