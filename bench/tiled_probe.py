"""Time a float32 grid case's configs on the register-tiled path (compute='tiled') beside its
shipped config, each checked against the float64 oracle first (kgen.tune.trials). JSON lines.

    PYTHONPATH=. python3 bench/tiled_probe.py CASE STAGES SPLITS [SPLITS ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgen.arch import resolve_arch  # noqa: E402
from kgen.mla import Config  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.sweep import compile_space  # noqa: E402
from kgen.tune.trials import Trials  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    name, stages, splits = sys.argv[1], int(sys.argv[2]), [int(s) for s in sys.argv[3:]]
    case = {c.name: c for c in load_grid(ROOT / "bench/grid.json")}[name]
    hpb = max(
        h
        for h in range(1, case.spec.heads + 1)
        if case.spec.heads % h == 0 and h * case.spec.q_len <= 64
    )
    config = Config(
        heads_per_block=hpb,
        kv_splits=splits[0],
        vec_width=4,
        smem_stages=stages,
        num_warps=8,
        block_n=64,
        compute="tiled",
    )
    compile_space([(case.spec, config)], resolve_arch("native").name)
    for r in Trials().variant(case, config, splits, seed=3, reps=10):
        summary = {k: r.get(k) for k in ("status", "median_us", "error", "detail")}
        summary["kv_splits"] = r["config"]["kv_splits"]
        print(json.dumps({"case": name, "config": config.short_name(), **summary}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
