"""The cost of a draft tree against a causal chain: each tree case of the grid timed with its
shipped config under its tree mask and under a causal mask of the same shape (same config, flushed
median), checked against the float64 oracle first. Issue 1/4 asks tree <= 1.2x causal.

    PYTHONPATH=. python3 bench/tree_vs_causal.py [CASE ...]   # (default: every tree case)
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kgen.arch import resolve_arch  # noqa: E402
from kgen.tune.space import load_grid  # noqa: E402
from kgen.tune.sweep import compile_space  # noqa: E402
from kgen.tune.trials import Trials  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from time_shipped import shipped_configs  # noqa: E402


def main() -> int:
    configs = shipped_configs()
    grid = load_grid(family="dense")
    names = sys.argv[1:]
    trees = [c for c in grid if c.spec.mask == "tree" and (c.name in names or not names)]
    pairs = []
    for case in trees:
        masked = {
            mask: dataclasses.replace(case, spec=dataclasses.replace(case.spec, mask=mask))
            for mask in ("tree", "causal")
        }
        pairs.append((masked, configs[case.name]))
    arch = resolve_arch("native").name
    compile_space([(c.spec, config) for masked, config in pairs for c in masked.values()], arch)
    trials = Trials()
    for masked, config in pairs:
        times = {}
        for label, case in masked.items():
            (r,) = trials.variant(case, config, [config.kv_splits], seed=3, reps=20)
            times[label] = r.get("median_us") if r["status"] == "ok" else r["status"]
        ratio = (
            times["tree"] / times["causal"]
            if all(isinstance(times[k], float) for k in ("tree", "causal"))
            else None
        )
        print(
            json.dumps(
                {
                    "case": masked["tree"].name,
                    "config": config.short_name(),
                    **times,
                    "tree_over_causal": ratio,
                }
            ),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
